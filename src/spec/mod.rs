//! The job spec: `raw` (as written), `load` (YAML -> raw + positions), `validate` (raw -> `Spec`).
//! `Spec` is what the resolver sees: ids, `CpuSet`s and enums, no strings standing for CPUs.

pub mod engine;
pub mod error;
pub mod kubernetes;
pub mod load;
mod model;
pub mod raw;
pub mod validate;
pub mod words;

pub use error::SpecError;
pub use kubernetes::KubernetesSpec;
pub use model::{
    AffinityMode, Balance, CpuOption, CpuSpec, Engine, Family, FluxSpec, GpuChoice, GroupSpec,
    Groups, JobGroup, MemPolicy, MemoryNode, MemorySpec, MpibindOptions, MpirunSpec, NicPolicy,
    OpenMpSpec, Places, Policy, ProcBind, Scope, SlurmSpec, Smt, Spec, Threads, TorchMode,
    Visibility,
};
