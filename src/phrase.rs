//! Small pieces of wording shared by every message: counts with their noun, and CPU lists that
//! may be empty.

use crate::cpuset::CpuSet;

/// `1 core`, `2 cores`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A size for people: `512 KiB`, `256.0 MiB`, `11.8 GiB`.
pub fn size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KIB * KIB * KIB {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else {
        format!("{:.0} KiB", b / KIB)
    }
}

/// A node's memory for people, the same in `topo` and `explain`: `512 MiB`, `13 GiB`,
/// `12.9 GiB` (a tenth where it is not a whole number of GiB).
pub fn mib(mib: u64) -> String {
    if mib < 1024 {
        return format!("{mib} MiB");
    }
    let gib = mib as f64 / 1024.0;
    if (gib - gib.round()).abs() < 0.05 {
        format!("{:.0} GiB", gib)
    } else {
        format!("{gib:.1} GiB")
    }
}

/// A CPU list (`0-3,8`), or `none` for an empty one.
pub fn list_or_none(cpus: &CpuSet) -> String {
    if cpus.is_empty() {
        "none".to_string()
    } else {
        cpus.to_string()
    }
}

/// A CPU list in backticks (`` `0-3,8` ``), or `none` for an empty one: a message never prints an
/// empty list.
pub fn cpus_or_none(cpus: &CpuSet) -> String {
    if cpus.is_empty() {
        "none".to_string()
    } else {
        format!("`{cpus}`")
    }
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lists() {
        assert_eq!(plural(1, "core", "cores"), "1 core");
        assert_eq!(plural(0, "core", "cores"), "0 cores");
        assert_eq!(cpus_or_none(&CpuSet::new()), "none");
        assert_eq!(cpus_or_none(&"0-3".parse().unwrap()), "`0-3`");
        assert_eq!(list_or_none(&CpuSet::new()), "none");
        assert_eq!(size(12_670_000_000), "11.8 GiB");
        assert_eq!(size(256 << 20), "256.0 MiB");
        assert_eq!(size(4096), "4 KiB");
    }
}
