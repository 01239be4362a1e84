//! The environment as `rank/` reads it: a map the caller fills (from this process, from
//! `/proc/PID/environ`, or by hand in a test), so that everything here is pure.

use std::collections::BTreeMap;

/// Environment variables by name.
pub type Env = BTreeMap<String, String>;
