//! Slurm hostlists (`SLURM_JOB_NODELIST`): their first host, where every rank's `MASTER_ADDR`
//! points (`gpu[003-005,010],login1` -> `gpu003`), and whether a host is in one.

pub fn first_host(list: &str) -> Option<String> {
    let list = list.trim();
    // The first entry ends at a comma outside brackets.
    let mut depth = 0;
    let end = list
        .char_indices()
        .find(|&(_, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            c == ',' && depth == 0
        })
        .map_or(list.len(), |(i, _)| i);
    let entry = &list[..end];
    let host = match entry.split_once('[') {
        None => entry.to_string(),
        Some((prefix, rest)) => {
            let (range, suffix) = rest.split_once(']')?;
            let first = range.split([',', '-']).next()?;
            format!("{prefix}{first}{suffix}")
        }
    };
    (!host.is_empty()).then_some(host)
}

/// The entries of a hostlist: split at commas outside brackets.
fn entries(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// Whether `host` is in the hostlist `list` (`n[1-3,7]`, `gpu[003-005]x`, `a,b`): ranges keep
/// their zero padding, as Slurm writes them.
pub fn contains(list: &str, host: &str) -> bool {
    entries(list.trim()).into_iter().any(|entry| {
        let Some((prefix, rest)) = entry.split_once('[') else {
            return entry == host;
        };
        let Some((ranges, suffix)) = rest.split_once(']') else {
            return false;
        };
        let Some(number) = host
            .strip_prefix(prefix)
            .and_then(|h| h.strip_suffix(suffix))
        else {
            return false;
        };
        ranges.split(',').any(|range| {
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            let n: Option<u64> = number.parse().ok();
            let padded = lo.len() == hi.len() && lo.starts_with('0');
            match (n, lo.parse::<u64>(), hi.parse::<u64>()) {
                (Some(n), Ok(lo_n), Ok(hi_n)) => {
                    (lo_n..=hi_n).contains(&n) && (!padded || number.len() == lo.len())
                }
                _ => false,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{contains, first_host};

    #[test]
    fn membership() {
        for (list, host, is) in [
            ("n[2-3]", "n2", true),
            ("n[2-3]", "n3", true),
            ("n[2-3]", "n1", false),
            ("n[2-3]", "n", false),
            ("gpu[003-005,010],login1", "gpu010", true),
            ("gpu[003-005,010],login1", "gpu4", false),
            ("gpu[003-005,010],login1", "login1", true),
            ("a[7,9]b,c", "a9b", true),
            ("a[7,9]b,c", "a8b", false),
            ("x1,x2", "x2", true),
            ("n[1-", "n1", false),
        ] {
            assert_eq!(contains(list, host), is, "{host} in {list}");
        }
    }

    #[test]
    fn first_hosts() {
        for (list, host) in [
            ("node1", "node1"),
            ("node[1-3]", "node1"),
            ("gpu[003-005,010],login1", "gpu003"),
            ("a[7,9]b,c", "a7b"),
            ("x1,x2", "x1"),
        ] {
            assert_eq!(first_host(list).as_deref(), Some(host), "{list}");
        }
        assert_eq!(first_host(""), None);
        assert_eq!(first_host("n[1-"), None);
    }
}
