//! Small pieces of wording shared by every message: counts with their noun, and CPU lists that
//! may be empty.

use crate::cpuset::CpuSet;

/// `1 core`, `2 cores`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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
    }
}
