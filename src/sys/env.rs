//! Process environment variables set for the length of a call: hwloc reads its settings from
//! the environment, and the ranks must not inherit them.

/// Runs `f` with each `(variable, value)` the environment does not already have set, then
/// removes the ones it set.
///
/// Only while the process has a single thread: numaplan reads topologies before it starts any
/// (exec's relays start later), so no other thread reads the environment meanwhile.
pub fn with_vars<T>(vars: &[(&str, &str)], f: impl FnOnce() -> T) -> T {
    let ours: Vec<&str> = vars
        .iter()
        .filter(|(var, _)| std::env::var_os(var).is_none())
        .map(|(var, value)| {
            // SAFETY: called before any other thread exists (see above).
            unsafe { std::env::set_var(var, value) };
            *var
        })
        .collect();
    let done = f();
    for var in ours {
        // SAFETY: as above.
        unsafe { std::env::remove_var(var) };
    }
    done
}
