//! `CpuSet`: a set of logical CPUs (OS indices), the only CPU-set representation inside numaplan.
//!
//! It parses and prints the Linux cpulist format (`0-23,48-71`), the one `/sys`, `taskset -c`,
//! `numactl --physcpubind` and `Cpus_allowed_list` use.

use std::fmt;
use std::str::FromStr;

/// Highest CPU index accepted from text: larger numbers are typos, not machines.
pub const MAX_CPU: u32 = 1 << 16;

/// A set of logical CPUs stored as a bitset. Equal sets compare equal whatever the order of
/// insertion (trailing empty words are never kept).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    words: Vec<u64>,
}

/// Why a cpulist could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetParseError {
    #[error("`{0}` is not a CPU number")]
    NotANumber(String),
    #[error("range `{0}` runs backwards")]
    Backwards(String),
    #[error("CPU {0} is larger than the supported maximum {MAX_CPU}")]
    TooLarge(u64),
    #[error("empty element in the list (two commas in a row, or a trailing comma)")]
    EmptyElement,
}

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// `first..=last`.
    pub fn range(first: u32, last: u32) -> Self {
        (first..=last).collect()
    }

    pub fn insert(&mut self, cpu: u32) {
        let (word, bit) = ((cpu / 64) as usize, cpu % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << bit;
    }

    pub fn remove(&mut self, cpu: u32) {
        let (word, bit) = ((cpu / 64) as usize, cpu % 64);
        if let Some(w) = self.words.get_mut(word) {
            *w &= !(1 << bit);
        }
        self.trim();
    }

    pub fn contains(&self, cpu: u32) -> bool {
        let (word, bit) = ((cpu / 64) as usize, cpu % 64);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        let (i, w) = self
            .words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)?;
        Some(i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                Some(i as u32 * 64 + bit)
            })
        })
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.word(i) | other.word(i))
            .collect::<Vec<_>>();
        CpuSet { words }.trimmed()
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().min(other.words.len());
        let words = (0..n).map(|i| self.word(i) & other.word(i)).collect();
        CpuSet { words }.trimmed()
    }

    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let words = (0..self.words.len())
            .map(|i| self.word(i) & !other.word(i))
            .collect();
        CpuSet { words }.trimmed()
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        (0..self.words.len()).all(|i| self.word(i) & !other.word(i) == 0)
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        (0..self.words.len().min(other.words.len())).any(|i| self.word(i) & other.word(i) != 0)
    }

    /// Maximal runs of consecutive CPUs, as `(first, last)` pairs.
    pub fn ranges(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for cpu in self.iter() {
            match out.last_mut() {
                Some((_, last)) if *last + 1 == cpu => *last = cpu,
                _ => out.push((cpu, cpu)),
            }
        }
        out
    }

    fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    fn trimmed(mut self) -> Self {
        self.trim();
        self
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl<'a> FromIterator<&'a CpuSet> for CpuSet {
    fn from_iter<I: IntoIterator<Item = &'a CpuSet>>(iter: I) -> Self {
        iter.into_iter().fold(CpuSet::new(), |acc, s| acc.union(s))
    }
}

impl FromStr for CpuSet {
    type Err = CpuSetParseError;

    /// Parses a Linux cpulist: `""`, `"5"`, `"0-23,48-71"`, with optional spaces around items.
    /// Also accepts the stride form `0-63:8` that `/sys` and `taskset` understand.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut set = CpuSet::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(set);
        }
        for item in s.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(CpuSetParseError::EmptyElement);
            }
            let (range, stride) = match item.split_once(':') {
                Some((r, st)) => (r, number(st)?.max(1)),
                None => (item, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(range)?;
                    (n, n)
                }
            };
            if last < first {
                return Err(CpuSetParseError::Backwards(item.to_string()));
            }
            for cpu in (first..=last).step_by(stride as usize) {
                set.insert(cpu);
            }
        }
        Ok(set)
    }
}

fn number(s: &str) -> Result<u32, CpuSetParseError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuSetParseError::NotANumber(s.to_string()));
    }
    let n: u64 = s
        .parse()
        .map_err(|_| CpuSetParseError::NotANumber(s.to_string()))?;
    if n > u64::from(MAX_CPU) {
        return Err(CpuSetParseError::TooLarge(n));
    }
    Ok(n as u32)
}

impl fmt::Display for CpuSet {
    /// The canonical cpulist: ascending, maximal ranges, `""` for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (a, b)) in self.ranges().into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, canonical: &str) {
        let set: CpuSet = input.parse().unwrap();
        assert_eq!(set.to_string(), canonical, "input {input:?}");
        let again: CpuSet = canonical.parse().unwrap();
        assert_eq!(again, set);
    }

    #[test]
    fn parse_and_print() {
        check("", "");
        check("5", "5");
        check("0-23,48-71", "0-23,48-71");
        check("3,1,2", "1-3");
        check(" 0 - 3 , 8 ", "0-3,8");
        check("0-15:4", "0,4,8,12");
        check("63,64,65,127,128", "63-65,127-128");
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            "1,,2".parse::<CpuSet>(),
            Err(CpuSetParseError::EmptyElement)
        );
        assert_eq!(
            "5-3".parse::<CpuSet>(),
            Err(CpuSetParseError::Backwards("5-3".into()))
        );
        assert_eq!(
            "a-3".parse::<CpuSet>(),
            Err(CpuSetParseError::NotANumber("a".into()))
        );
        assert_eq!(
            "-3".parse::<CpuSet>(),
            Err(CpuSetParseError::NotANumber("".into()))
        );
        assert_eq!(
            "99999999".parse::<CpuSet>(),
            Err(CpuSetParseError::TooLarge(99_999_999))
        );
    }

    #[test]
    fn set_operations() {
        let a: CpuSet = "0-7".parse().unwrap();
        let b: CpuSet = "4-11".parse().unwrap();
        assert_eq!(a.union(&b).to_string(), "0-11");
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert!(!a.is_subset(&b));
        assert!(a.intersection(&b).is_subset(&a));
        assert!(a.intersects(&b));
        assert_eq!(a.len(), 8);
        assert_eq!(b.first(), Some(4));
        assert_eq!(b.last(), Some(11));
        let mut c = CpuSet::range(60, 70);
        c.remove(70);
        c.remove(64);
        assert_eq!(c.to_string(), "60-63,65-69");
        // Empty difference trims so equality holds.
        assert_eq!(
            CpuSet::range(100, 200).difference(&CpuSet::range(0, 300)),
            CpuSet::new()
        );
    }
}
