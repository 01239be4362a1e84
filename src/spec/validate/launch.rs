//! The spec's launch settings: how the ranks meet (`rendezvous:`), what the generated batch
//! file and mpirun line add (`slurm:`, `mpirun:`), and which warnings the launchers accept
//! (`allow_warnings:`).

use super::{DEFAULT_PORT, Problems};
use crate::diag::{Code, codes};
use crate::spec::raw::JobSpec;
use crate::spec::{FluxSpec, MpirunSpec, SlurmSpec};

/// `rendezvous:`: the port (torchrun's 29500 by default; never 0) and the address.
pub(super) fn rendezvous(raw: &JobSpec, p: &mut Problems) -> (u16, String) {
    let rendezvous = raw.rendezvous.clone().unwrap_or_default();
    if rendezvous.port == Some(0) {
        p.add(
            "rendezvous.port",
            "port 0 cannot be a rendezvous port".into(),
            "port 0",
            "use a fixed port such as 29500",
        );
    }
    let port = rendezvous.port.unwrap_or(DEFAULT_PORT);
    (port, rendezvous.addr.unwrap_or_else(|| "127.0.0.1".into()))
}

/// `allow_warnings:`: each a warning code (`W0203`, any case), each once. The first few
/// mistakes are a problem each; the rest are one problem that counts them, so that a list of
/// thousands of bad entries is a few lines, not thousands.
pub(super) fn allowed_warnings(raw: &JobSpec, p: &mut Problems) -> Vec<Code> {
    const SAID: usize = 5;
    let mut out = Vec::new();
    let mut bad = 0;
    let mut first_unsaid = None;
    for (i, text) in raw.allow_warnings.iter().enumerate() {
        let (why, label, help) = match codes::warning_code(text) {
            Ok(code) if !out.contains(&code) => {
                out.push(code);
                continue;
            }
            Ok(code) => (
                format!("`{code}` is listed twice"),
                "given twice",
                "remove one".to_string(),
            ),
            Err(why) => (
                why,
                "not a warning code",
                format!(
                    "`numaplan codes` lists the warning codes, {}",
                    codes::warning_range()
                ),
            ),
        };
        bad += 1;
        match bad <= SAID {
            true => p.add(&format!("allow_warnings[{i}]"), why, label, &help),
            false => {
                first_unsaid.get_or_insert(i);
            }
        }
    }
    if let Some(i) = first_unsaid {
        p.add(
            &format!("allow_warnings[{i}]"),
            format!(
                "{} more entries of `allow_warnings`, from here on, are not warning codes or \
                 repeat one",
                bad - SAID
            ),
            "and from here on",
            &format!(
                "`numaplan codes` lists the warning codes, {}",
                codes::warning_range()
            ),
        );
    }
    out
}

/// `mpirun:`: any words, but none that takes over what the script sets itself: the binding
/// (`--bind-to none`, numaplan binds; CPUs per rank), where the ranks start (`-np`/`--map-by`,
/// `-n`/`-ppn`, the hosts) or which variables reach them (MPICH's `-genvlist`). Open MPI takes a second `--map-by`
/// silently, so the ranks would not be where the plan put them.
pub(super) fn mpirun(raw: &JobSpec, p: &mut Problems) -> MpirunSpec {
    let m = raw.mpirun.clone().unwrap_or_default();
    for (key, words) in [
        ("extra", &m.extra),
        ("openmpi", &m.openmpi),
        ("mpich", &m.mpich),
    ] {
        for (i, word) in words.iter().enumerate() {
            if let Some((what, label, help)) = mpirun_takes_over(word) {
                p.add(
                    &format!("mpirun.{key}[{i}]"),
                    format!("`{word}` {what}"),
                    label,
                    help,
                );
            }
        }
    }
    MpirunSpec {
        extra: m.extra,
        openmpi: m.openmpi,
        mpich: m.mpich,
    }
}

/// What an mpirun option (`-x`, `--x` or `--x=v`) would take over from the `--emit mpirun`
/// script: what it does, the label, the hint.
fn mpirun_takes_over(word: &str) -> Option<(&'static str, &'static str, &'static str)> {
    let name = word.strip_prefix('-')?.trim_start_matches('-');
    let name = name.split('=').next().unwrap_or(name);
    match name {
        // `--bind-to`, `-bind-to`, Open MPI's older `--bind-to-core`, Hydra's `-binding`.
        n if n.starts_with("bind-to") => Some(BINDS),
        "binding" | "cpu-set" | "rankfile" | "rf" => Some(BINDS),
        "n" | "np" | "c" | "N" | "npernode" | "npersocket" | "ppn" | "map-by" | "bynode"
        | "byslot" | "bysocket" => Some((
            "would say how many ranks start where, which the script does from the plan \
             (its ranks per node on each node)",
            "a rank count or mapping",
            "remove it: set `ranks_per_node` (and `nodes`) in the spec instead",
        )),
        "cpus-per-rank" | "cpus-per-proc" | "cpus-per-task" => Some((
            "would give each rank a number of CPUs to bind, which the plan says (each rank's \
             `cpus`)",
            "a CPU count per rank",
            "remove it: the plan gives each rank its CPUs (`cpu:` in the spec shapes them)",
        )),
        "H" | "host" | "hosts" | "hostfile" | "machinefile" | "default-hostfile" | "f" => Some((
            "would say which hosts run the ranks, which the script takes from the allocation \
             or `NUMAPLAN_HOSTFILE` (as `--hostfile` or `-f`), with ranks_per_node on each",
            "a host list",
            "remove it: run the script inside the allocation, or set NUMAPLAN_HOSTFILE to the \
             host file",
        )),
        "genvlist" => Some((
            "would replace the variables the script hands every rank (the plan's, \
             MASTER_ADDR and MASTER_PORT)",
            "a variable list",
            "add a variable with `-genv NAME VALUE` instead, or put it in the spec's `env:`",
        )),
        _ => None,
    }
}

const BINDS: (&str, &str, &str) = (
    "would bind the ranks, which `numaplan bind` does",
    "a binding option",
    "remove it: the script passes `--bind-to none` and each rank is bound to the plan's CPUs",
);

/// What `flux:` may not say: the resources, tasks, their order and binding are the
/// `--emit flux` script's (flux-core's `flux run` options of both resource sets, and
/// `--taskmap`, which would renumber the tasks the script numbers node by node).
const FLUX_OWN: [&str; 14] = [
    "-N",
    "--nodes",
    "-n",
    "--ntasks",
    "--tasks-per-node",
    "--tasks-per-core",
    "-c",
    "--cores-per-task",
    "--cores",
    "-g",
    "--gpus-per-task",
    "--gpus-per-node",
    "--exclusive",
    "--taskmap",
];

/// The short options of `FLUX_OWN`, which may be written with their value (`-N2`).
const FLUX_OWN_SHORT: [&str; 4] = ["-N", "-n", "-c", "-g"];

/// The job-shell options (`-o NAME=...`) that bind, place or count tasks, which the script
/// sets.
const FLUX_SHELL_OWN: [&str; 5] = [
    "cpu-affinity",
    "gpu-affinity",
    "mpibind",
    "per-resource",
    "taskmap",
];

pub(super) fn flux(raw: &JobSpec, p: &mut Problems) -> FluxSpec {
    let flux = raw.flux.clone().unwrap_or_default();
    let mut previous = "";
    for (i, word) in flux.extra.iter().enumerate() {
        let option = word.split('=').next().unwrap_or(word);
        // `-o NAME=VALUE`, `-oNAME=VALUE`, `--setopt NAME=VALUE`, `--setopt=NAME=VALUE`.
        let shell_option = match (previous, word.as_str()) {
            ("-o" | "--setopt", w) => Some(w),
            (_, w) if w.starts_with("--setopt=") => w.strip_prefix("--setopt="),
            (_, w) if w.starts_with("-o") && w.len() > 2 => w.strip_prefix("-o"),
            _ => None,
        };
        let binds = shell_option
            .is_some_and(|o| FLUX_SHELL_OWN.contains(&o.split(['=', '.']).next().unwrap_or(o)));
        let short_with_value = word.len() > 2 && FLUX_OWN_SHORT.iter().any(|s| word.starts_with(s));
        if FLUX_OWN.contains(&option) || short_with_value || binds {
            p.add(
                &format!("flux.extra[{i}]"),
                format!(
                    "`{word}` would set the job's resources, tasks or binding, which the \
                     `--emit flux` script sets from the plan"
                ),
                "the script's own",
                "remove it: the script asks for the plan's nodes, tasks and cores, and binds \
                 each task with `-o cpu-affinity=map:` and `numaplan bind`",
            );
        }
        previous = word;
    }
    for (key, value) in [
        ("flux.queue", &flux.queue),
        ("flux.requires", &flux.requires),
    ] {
        if value
            .as_deref()
            .is_some_and(|v| v.trim().is_empty() || v.contains('\n'))
        {
            p.add(
                key,
                format!("`{key}` cannot be empty or hold a newline"),
                "invalid",
                "write it as `flux run` takes it: `--queue=pbatch`, `--requires=host:tioga[10-13]`",
            );
        }
    }
    FluxSpec {
        queue: flux.queue,
        requires: flux.requires,
        extra: flux.extra,
    }
}

pub(super) fn slurm(raw: &JobSpec, p: &mut Problems) -> SlurmSpec {
    let slurm = raw.slurm.clone().unwrap_or_default();
    for (i, line) in slurm.extra.iter().enumerate() {
        if !line.starts_with('-') || line.contains('\n') {
            p.add(
                &format!("slurm.extra[{i}]"),
                format!("`{line}` is not an sbatch option"),
                "not an option",
                "write one option per entry, e.g. \"--qos=high\"",
            );
        }
    }
    for (key, value) in [
        ("slurm.partition", &slurm.partition),
        ("slurm.account", &slurm.account),
        ("slurm.time", &slurm.time),
    ] {
        if value
            .as_deref()
            .is_some_and(|v| v.is_empty() || v.contains(char::is_whitespace))
        {
            p.add(
                key,
                format!("`{key}` cannot be empty or contain spaces"),
                "invalid",
                "write a single Slurm word",
            );
        }
    }
    SlurmSpec {
        partition: slurm.partition,
        account: slurm.account,
        time: slurm.time,
        exclusive: slurm.exclusive.unwrap_or(true),
        extra: slurm.extra,
        verbose: slurm.verbose.unwrap_or(false),
    }
}
