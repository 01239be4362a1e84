//! Topology: what the machine is. Sources: numaplan's YAML fixtures and hwloc XML exports,
//! detected by content; the model they both produce; the text summary.

pub mod container_gpus;
pub mod cpu_kinds;
pub mod devices;
pub mod error;
pub mod fixture;
pub mod fixture_file;
pub mod hwloc;
mod hwloc_v3;
pub mod kfd;
pub mod matrix;
pub mod model;
pub mod nvml;
pub mod pci_gpus;
mod source;
pub mod summary;
pub mod tree;
pub mod xml_precheck;

pub use error::TopologyError;
pub use model::Topology;
pub use source::{Source, load_file, load_file_for};
pub use tree::Reading;
