//! numaplan compiles a job spec and a machine topology into a per-rank binding plan.
//! See ARCHITECTURE.md for the code map and its invariants.

pub mod app;
pub mod argv;
pub mod cli;
pub mod cpuset;
pub mod diag;
pub mod emit;
pub mod error;
pub mod exec;
pub mod ids;
pub mod nic_kind;
pub mod observe;
pub mod output;
pub mod pci_addr;
pub mod phrase;
pub mod plan;
pub mod plan_file;
pub mod provenance;
pub mod rank;
pub mod resolve;
pub mod review;
pub mod shell;
pub mod spec;
pub mod sys;
pub mod text;
pub mod topology;
pub mod variables;
pub mod yaml;
