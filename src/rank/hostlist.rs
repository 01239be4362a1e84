//! The first host of a Slurm hostlist (`SLURM_JOB_NODELIST`), where every rank's `MASTER_ADDR`
//! points: `gpu[003-005,010],login1` -> `gpu003`.

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

#[cfg(test)]
mod tests {
    use super::first_host;

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
