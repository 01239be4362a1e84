//! Everything numaplan asks of the kernel beyond plain file IO: the binding syscalls
//! (`affinity`), starting processes (`process`), waiting for and signalling their process groups (`pgrp`), pipes and polling
//! (`pipe`), signals, `perf_event_open`
//! (`perf`), what `/proc` shows of running processes (`proc`, `numa_maps`, `cgroup`), the
//! forked sandbox of hwloc's XML import (`sandbox`) and environment variables set around a call
//! (`env`). Every `unsafe` block of the crate is in this folder (a tidy test), and it imports
//! only the foundation types (`cpuset`, `ids`): the launcher, `verify` and discovery all build on
//! it, so it can depend on none of them.

pub mod affinity;
pub mod cgroup;
pub mod confinement;
pub mod env;
pub mod node;
pub mod numa_maps;
pub mod perf;
pub mod pgrp;
pub mod pipe;
pub mod proc;
pub mod process;
pub mod sandbox;
pub mod signals;
