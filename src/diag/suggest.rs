//! "did you mean": the closest candidate by edit distance, as just's `suggestion.rs` does.

/// The candidate closest to `typed`, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    typed: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    // The same word in another case (`VLLM` for `vllm`) is the one meant.
    if let Some(same) = candidates.iter().find(|c| c.eq_ignore_ascii_case(typed)) {
        return Some(same);
    }
    candidates
        .into_iter()
        .map(|c| (levenshtein(typed, c), c))
        .filter(|(d, c)| {
            let typo = *d <= 2.max(c.len() / 3) && *d < c.len().max(typed.len());
            let prefix = typed.len() >= 3 && c.starts_with(typed);
            typo || prefix
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("VLLM", ["vllm", "sglang"]), Some("vllm"));
        let keys = ["l3_groups", "memory_mib", "package", "cpus"];
        assert_eq!(did_you_mean("l3_group", keys), Some("l3_groups"));
        assert_eq!(did_you_mean("memory", keys), Some("memory_mib"));
        assert_eq!(did_you_mean("cpu", keys), Some("cpus"));
        assert_eq!(did_you_mean("zzzzzzzz", keys), None);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
