//! Reading running ranks back and comparing them with their plan: which processes are the
//! ranks (`matching`, `find`), each thread's CPUs and the memory's policy and place (`verify`),
//! readings repeated and the changes between them (`watch`), and the node-load counters
//! (`counters`). What `/proc` and `perf_event_open` show comes through `sys`; everything here
//! decides what it means.

mod change;
pub mod counters;
pub mod error;
pub mod find;
pub mod matching;
pub mod problem;
mod table;
pub mod titles;
pub mod verify;
pub mod watch;

pub use error::ObserveError;
pub use problem::Problem;
