//! A spec of one group (its nodes all alike): the job's counts, GPUs, CPU, memory and OpenMP
//! settings, command, environment and launchers' settings, every problem collected. A spec with
//! `groups:` is validated group by group through this (`groups.rs`).

use super::{MAX_ARG_LEN, MAX_PER_NODE, Problems, cpu, kubernetes, launch, memory};
use crate::diag::{Warning, codes};
use crate::ids::GpuIndex;
use crate::spec::error::SpecProblem;
use crate::spec::raw::{self, JobSpec};
use crate::spec::{Engine, GpuChoice, NicPolicy, Spec, Visibility, words};
use crate::variables::{
    self, MASTER_ADDR, MASTER_PORT, SGLANG_AUTO_NUMA_BIND, SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS,
    SGLANG_SET_CPU_AFFINITY, TLLM_NUMA_AWARE_WORKER_AFFINITY, VISIBILITY,
};

/// A spec of one group (nodes all alike).
pub(super) fn validate_one_group(raw: &JobSpec) -> Result<Spec, Vec<SpecProblem>> {
    let mut p = Problems::default();
    let counts = counts(raw, &mut p);
    let gpus = gpu_choice(raw, &mut p);
    let mut warnings = Vec::new();
    let cpu = cpu::cpu_spec(raw, &mut p, &mut warnings);
    let memory = memory::memory_spec(raw, &mut p);
    let command = command(raw, &mut p);
    environment(raw, &mut p);
    reserved_variables(raw, &mut p);
    warnings.extend(engine_environment(raw, &gpus));
    let openmp = cpu::openmp_spec(raw, &mut p);
    cpu::mpibind_refusals(raw, &mut p);
    let (port, master_addr) = launch::rendezvous(raw, &mut p);
    let slurm = launch::slurm(raw, &mut p);
    let flux = launch::flux(raw, &mut p);
    let mpirun = launch::mpirun(raw, &mut p);
    let kubernetes = kubernetes::kubernetes(raw, &mut p);
    let allowed_warnings = launch::allowed_warnings(raw, &mut p);
    if !p.0.is_empty() {
        return Err(p.0);
    }
    Ok(Spec {
        name: raw.name.clone(),
        command,
        topology: raw.topology.as_deref().map(crate::topology::Source::named),
        nodes: counts.nodes,
        ranks_per_node: raw.ranks_per_node,
        gpus_asked: gpus_asked(raw),
        gpus,
        gpus_per_rank: counts.gpus_per_rank,
        visible: match raw.gpu.as_ref().and_then(|g| g.visible) {
            Some(raw::VisibleName::Own) => Visibility::Own,
            _ => Visibility::All,
        },
        cpu,
        memory,
        nic: match raw.nic.as_ref().and_then(|n| n.policy) {
            Some(raw::NicPolicyName::None) => NicPolicy::None,
            _ => NicPolicy::Closest,
        },
        env: raw.env.clone(),
        openmp,
        port,
        master_addr,
        slurm,
        flux,
        mpirun,
        kubernetes,
        engine: engine(raw),
        warnings,
        allowed_warnings,
        groups: Vec::new(),
    })
}

struct Counts {
    nodes: u32,
    gpus_per_rank: u32,
}

/// `nodes`, `ranks_per_node`, `gpus_per_rank`: at least 1, and small enough that every count
/// numaplan derives from them (`WORLD_SIZE`, GPUs needed) stays exact.
fn counts(raw: &JobSpec, p: &mut Problems) -> Counts {
    let nodes = raw.nodes.unwrap_or(1);
    let gpus_per_rank = raw.gpus_per_rank.unwrap_or(1);
    for (path, value, what, help) in [
        ("nodes", Some(nodes), "nodes", "set `nodes: 1` or more"),
        (
            "ranks_per_node",
            raw.ranks_per_node,
            "ranks",
            "remove the key to get one rank per GPU",
        ),
        (
            "gpus_per_rank",
            Some(gpus_per_rank),
            "GPUs",
            "for CPU-only ranks write `gpus: none` instead",
        ),
    ] {
        if value == Some(0) {
            p.add(
                path,
                format!("`{path}` must be at least 1"),
                &format!("zero {what}"),
                help,
            );
        }
    }
    for (path, value, what, help) in [
        (
            "ranks_per_node",
            raw.ranks_per_node,
            "ranks",
            "a node runs at most one rank per CPU",
        ),
        (
            "gpus_per_rank",
            Some(gpus_per_rank),
            "GPUs",
            "a rank takes at most the GPUs of its node",
        ),
    ] {
        if value.is_some_and(|v| v > MAX_PER_NODE) {
            p.add(
                path,
                format!("`{path}` is larger than {MAX_PER_NODE}: more {what} than a node can have"),
                "too large",
                help,
            );
        }
    }
    let world = u64::from(nodes) * u64::from(raw.ranks_per_node.unwrap_or(1));
    if world > u64::from(u32::MAX) {
        p.add(
            "nodes",
            format!("{world} ranks in all (`nodes` x `ranks_per_node`) do not fit `WORLD_SIZE`"),
            "too many nodes",
            "run fewer nodes or fewer ranks per node",
        );
    }
    Counts {
        nodes,
        gpus_per_rank,
    }
}

/// The key that asks for GPUs outright: `gpus: all` or `gpus: visible` written out, or
/// `gpus_per_rank` (a count or a list asks for its own GPUs, and fails on its own).
fn gpus_asked(raw: &JobSpec) -> Option<&'static str> {
    use raw::{GpuKeyword, GpuSelection};
    match &raw.gpus {
        Some(GpuSelection::Keyword(GpuKeyword::All | GpuKeyword::Visible)) => Some("gpus"),
        Some(GpuSelection::Keyword(GpuKeyword::None)) | Some(GpuSelection::Count(0)) => None,
        _ => raw.gpus_per_rank.map(|_| "gpus_per_rank"),
    }
}

fn gpu_choice(raw: &JobSpec, p: &mut Problems) -> GpuChoice {
    match &raw.gpus {
        None | Some(raw::GpuSelection::Keyword(raw::GpuKeyword::All)) => GpuChoice::All,
        Some(raw::GpuSelection::Keyword(raw::GpuKeyword::None)) => GpuChoice::None,
        Some(raw::GpuSelection::Keyword(raw::GpuKeyword::Visible)) => GpuChoice::Visible(None),
        Some(raw::GpuSelection::Count(0)) => GpuChoice::None,
        Some(raw::GpuSelection::Count(n)) => GpuChoice::Count(*n),
        Some(raw::GpuSelection::List(list)) => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, g) in list.iter().enumerate() {
                if !seen.insert(*g) {
                    p.add(
                        &format!("gpus[{i}]"),
                        format!("GPU {g} is listed twice"),
                        "listed before",
                        "list each GPU once",
                    );
                }
            }
            if list.is_empty() {
                p.add(
                    "gpus",
                    "the GPU list is empty".into(),
                    "no GPUs",
                    "write `gpus: none` for CPU-only ranks",
                );
            }
            GpuChoice::List(list.iter().map(|g| GpuIndex(*g)).collect())
        }
    }
}

fn command(raw: &JobSpec, p: &mut Problems) -> Vec<String> {
    let command = match &raw.command {
        None => Vec::new(),
        Some(raw::CommandLine::Words(words)) => words.clone(),
        Some(raw::CommandLine::Line(line)) => match words::split(line) {
            Ok(words) => words,
            Err(e) => {
                p.add(
                    "command",
                    format!("cannot split the command line into words: {e}"),
                    "not a command line",
                    "close the quote, or write the command as a list: [python, train.py]",
                );
                return Vec::new();
            }
        },
    };
    if let Some(i) = command.iter().position(|w| w.len() > MAX_ARG_LEN) {
        p.add(
            &format!("command[{i}]"),
            format!(
                "`command[{i}]` is {} bytes long; the kernel starts no program with an argument \
                 over 128 KiB ({MAX_ARG_LEN} bytes, MAX_ARG_STRLEN)",
                command[i].len()
            ),
            "too long",
            "pass the data in a file and its path as the argument",
        );
    }
    if let Some(i) = command.iter().position(|w| w.contains('\0')) {
        p.add(
            &format!("command[{i}]"),
            "the command contains a NUL byte, which no program argument can carry".into(),
            "NUL byte",
            "remove the NUL byte (`\\0`)",
        );
    }
    if raw.command.is_some() && command.is_empty() {
        p.add(
            "command",
            "`command` is empty".into(),
            "no program",
            "write the program and its arguments, e.g. [python, train.py]",
        );
    }
    command
}

fn environment(raw: &JobSpec, p: &mut Problems) {
    for (key, value) in &raw.env {
        let len = key.len() + 1 + value.len();
        if len > MAX_ARG_LEN {
            p.add(
                &format!("env.{key}"),
                format!(
                    "`{key}={{value}}` is {len} bytes long; the kernel starts no program with a \
                     variable over 128 KiB ({MAX_ARG_LEN} bytes, MAX_ARG_STRLEN)"
                ),
                "too long",
                "pass the data in a file and its path in the variable",
            );
        }
        if value.contains('\0') {
            p.add(
                &format!("env.{key}"),
                format!("the value of `{key}` contains a NUL byte, which no environment variable can carry"),
                "NUL byte",
                "remove the NUL byte (`\\0`)",
            );
        }
    }
    for key in raw.env.keys() {
        let valid = !key.is_empty()
            && !key.starts_with(|c: char| c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            p.add(
                &format!("env.{key}"),
                format!("`{key}` is not a valid environment variable name"),
                "invalid name",
                "use letters, digits and `_`, not starting with a digit",
            );
        }
    }
}

/// numaplan's own variables and the launchers' numbering, which `env:` may not set: numaplan
/// and the launcher give each rank its own value, and one in `env:` would reach every rank
/// alike (`LOCAL_RANK=7` in all of them) or hide the plan a rank was started from.
fn reserved_variables(raw: &JobSpec, p: &mut Problems) {
    for key in raw.env.keys() {
        let (whose, help) = if key.starts_with("NUMAPLAN_") {
            (
                "numaplan's own variable, which it sets (the plan a rank was started from, its mark, its group)",
                "remove it from `env:`; pass `--group`, `--local-rank` or the plan on the command line",
            )
        } else if key == MASTER_ADDR || key == MASTER_PORT {
            (
                "the launchers' rendezvous, which numaplan sets from the spec",
                "remove it from `env:`; say `rendezvous: {addr: HOST, port: N}`",
            )
        } else if variables::launch_numbering().any(|v| v == key) {
            (
                "a launcher's numbering, which each rank gets its own value of",
                "remove it from `env:`: the launcher (or numaplan) sets it in every rank",
            )
        } else {
            continue;
        };
        p.add(
            &format!("env.{key}"),
            format!("`env:` may not set {key}: it is {whose}"),
            "set per rank",
            help,
        );
    }
}

/// The spec's `engine:`.
fn engine(raw: &JobSpec) -> Option<Engine> {
    raw.engine.map(|e| match e {
        raw::EngineName::Vllm => Engine::Vllm,
        raw::EngineName::Sglang => Engine::Sglang,
        raw::EngineName::Trtllm => Engine::Trtllm,
    })
}

/// W0223 where a value of `env:` undoes what `engine:` sets (the engine's own binding turned
/// back on) or the plan's GPUs (a visibility variable, which every rank would get alike, where
/// the spec plans GPUs: hiding them from CPU-only ranks is no harm).
fn engine_environment(raw: &JobSpec, gpus: &GpuChoice) -> Vec<Warning> {
    let engine = engine(raw);
    // A value that hides every GPU (`""`, `-1`, Slurm's `NoDevFiles`) gives the ranks none.
    let sets_gpus = |v: &str| {
        let v = v.trim();
        *gpus != GpuChoice::None
            && !(v.is_empty() || v.starts_with('-') || v.eq_ignore_ascii_case("NoDevFiles"))
    };
    // SGLang's switches are read as its `EnvBool` reads them.
    let on = |v: &str| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "y"
        )
    };
    let mut said = Vec::new();
    for (key, value) in &raw.env {
        let undoes = match (key.as_str(), engine) {
            (SGLANG_AUTO_NUMA_BIND, Some(Engine::Sglang)) if on(value) => Some(
                "turns back on SGLang's own binding of each worker to its GPU's node, which \
                 `engine: sglang` turns off"
                    .to_string(),
            ),
            (TLLM_NUMA_AWARE_WORKER_AFFINITY, Some(Engine::Trtllm)) if value.trim() != "0" => Some(
                "turns back on TensorRT-LLM's own worker affinity, which clears the plan's \
                     CPUs and which `engine: trtllm` turns off"
                    .to_string(),
            ),
            (SGLANG_SET_CPU_AFFINITY, _) if on(value) => Some(
                "makes SGLang set each worker's CPUs by its GPU's index (a share of the \
                 machine's cores in order), not the plan's"
                    .to_string(),
            ),
            (SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS, _) if on(value) => Some(
                "makes every SGLang worker see one GPU, its device 0, and bind to the node of \
                 entry 0; the `--emit sglang` script refuses to start with it (E0447)"
                    .to_string(),
            ),
            (var, _) if VISIBILITY.contains(&var) && engine_emitted(engine) && sets_gpus(value) => {
                Some(format!(
                    "sets the GPUs the plan chooses: `--emit {}` exports the plan's \
                 CUDA_VISIBLE_DEVICES instead and refuses one inherited that differs (E0447)",
                    engine.map(Engine::word).unwrap_or_default()
                ))
            }
            (var, _) if VISIBILITY.contains(&var) && sets_gpus(value) => Some(format!(
                "gives every rank the same GPUs, whatever GPUs the plan gave it; plan the GPUs \
                 with `gpus:`, or compile where {var} is set with `gpus: visible`"
            )),
            _ => None,
        };
        if let Some(what) = undoes {
            said.push(Warning::new(
                codes::W0223_ENGINE_ENVIRONMENT,
                format!(
                    "`env:` sets {key}={value}, which {what}; remove it to keep the plan's binding"
                ),
            ));
        }
    }
    said
}

/// Whether the engine's launch is a script numaplan writes (`--emit vllm|sglang`).
fn engine_emitted(engine: Option<Engine>) -> bool {
    matches!(engine, Some(Engine::Vllm | Engine::Sglang))
}
