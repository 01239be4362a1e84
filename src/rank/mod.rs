//! Which rank of a plan a process is, from the launcher that started it, and what that rank's
//! environment must say: the local rank (`--local-rank`, `NUMAPLAN_LOCAL_RANK`, the launchers'
//! variables, or the GPUs the process sees), the launcher's sizes checked against the plan,
//! torchrun's numbering filled in where the launcher sets none, a launcher's own binding found
//! (W0215) and GPU visibility that renumbers the plan's GPUs (W0214). Used by `bind`, by
//! `exec` (which marks every rank) and by `verify --match` (which reads the marks back).
//!
//! Pure: the environment comes in as a map (`Env`), read by the caller.

mod env;
pub mod error;
pub mod group;
pub mod hostlist;
pub mod launcher_binding;
pub mod local_rank;
pub mod numbering;
pub mod visible;

pub use env::Env;
pub use error::RankError;
pub use local_rank::{LocalRank, LocalRankChoice, local_rank, local_rank_variables};
