//! Launches: a job's plan as a launch script, from the embedded templates (`templates/`).
//! Every launcher takes the same view of a job (`view.rs`: the job, then its groups, a job of
//! one group as a list of one), with its own parts of it (`bash.rs`, `sbatch.rs`, `engine.rs`,
//! `flux.rs`; torchrun and mpirun need none), rendered by its one template. [`launch`] is the one entry:
//! a job of any shape in, the script and what it could not say out. How to add a launcher:
//! ARCHITECTURE.md, "The launch wing".

pub mod bash;
pub mod engine;
pub mod flux;
pub mod kubernetes;
pub mod sbatch;
pub mod templates;
pub mod view;

use serde::Serialize;

use crate::diag::Warning;
use crate::plan::job::JobPlan;
use crate::provenance;
use crate::spec::{Engine, Groups, Spec};
use crate::topology::Topology;

/// What to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EmitKind {
    /// A single-node bash launcher (numactl).
    Bash,
    /// A Slurm batch file: one srun step that binds every task.
    Sbatch,
    /// A Slurm batch file that runs one `numaplan exec` per node, which binds, verifies and
    /// supervises that node's ranks.
    SbatchExec,
    /// A script that starts torchrun on this node, each rank bound by `numaplan bind`.
    Torchrun,
    /// A script that starts mpirun (Open MPI or MPICH), each rank bound by `numaplan bind`.
    Mpirun,
    /// A script that starts `vllm serve`, which binds each GPU worker to its rank's node and
    /// CPUs (`--numa-bind-nodes`, `--numa-bind-cpus`).
    Vllm,
    /// A script that starts SGLang's server bound to the ranks' CPUs (`numaplan bind
    /// --all-ranks`), which binds each GPU worker to its rank's node (`--numa-node`).
    Sglang,
    /// A script that runs the plan as a Flux job (`flux run`; `--batch`: `flux batch`), each
    /// task bound by Flux's `cpu-affinity=map:` and `numaplan bind`; a job of several groups as
    /// one Flux job per group.
    Flux,
    /// Kubernetes manifests for `kubectl apply -f`: the plan in a ConfigMap, a Pod, Indexed Job,
    /// LeaderWorkerSet or JobSet running it Guaranteed, and its devices claimed by DRA or the
    /// device plugins (`kubernetes:` in the spec; docs/kubernetes.md).
    K8s,
    /// The KubeletConfiguration fragment the plan's node needs: CPU, Topology and Memory
    /// Manager settings, and the CPUs reserved for the system.
    Kubelet,
}

impl EmitKind {
    pub fn name(self) -> &'static str {
        match self {
            EmitKind::Bash => "bash",
            EmitKind::Sbatch => "sbatch",
            EmitKind::SbatchExec => "sbatch-exec",
            EmitKind::Torchrun => "torchrun",
            EmitKind::Mpirun => "mpirun",
            EmitKind::Vllm => "vllm",
            EmitKind::Sglang => "sglang",
            EmitKind::Flux => "flux",
            EmitKind::K8s => "k8s",
            EmitKind::Kubelet => "kubelet",
        }
    }

    /// Whether its script takes the program after `--` where the spec names none (the
    /// launchers that pass their own arguments on to every rank or to the engine).
    pub fn takes_command(self) -> bool {
        matches!(
            self,
            EmitKind::Torchrun
                | EmitKind::Mpirun
                | EmitKind::Vllm
                | EmitKind::Sglang
                | EmitKind::Flux
        )
    }

    /// The template that writes its script (the Kubernetes kinds are written as data).
    fn template(self) -> &'static str {
        match self {
            EmitKind::Bash => "bash.sh.j2",
            EmitKind::Sbatch => "slurm.sbatch.j2",
            EmitKind::SbatchExec => "slurm-exec.sbatch.j2",
            EmitKind::Torchrun => "torchrun.sh.j2",
            EmitKind::Mpirun => "mpirun.sh.j2",
            EmitKind::Vllm => "vllm.sh.j2",
            EmitKind::Sglang => "sglang.sh.j2",
            EmitKind::Flux => "flux.sh.j2",
            EmitKind::K8s | EmitKind::Kubelet => "",
        }
    }

    /// The serving engine whose launch it is.
    pub fn engine(self) -> Option<Engine> {
        match self {
            EmitKind::Vllm => Some(Engine::Vllm),
            EmitKind::Sglang => Some(Engine::Sglang),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// `--emit bash` starts one node's ranks; a plan of several groups spans nodes.
    #[error(
        "`--emit {kind}` cannot start a plan of several groups, which spans nodes of different shapes"
    )]
    GroupsNotOneNode { kind: &'static str },
    /// A launch needs the program to run.
    #[error("the job spec has no `command`, which a launch script needs")]
    MissingCommand,
    /// A worker of vLLM or SGLang drives one GPU: a rank with none or several has no worker.
    #[error("{engine} gives each worker one GPU, and rank {rank} has {gpus}")]
    EngineRankGpus {
        engine: &'static str,
        rank: u32,
        gpus: usize,
    },
    /// `--emit vllm` of a spec that says another engine.
    #[error("`--emit {emitted}` launches another engine than the spec's `engine: {spec}`")]
    OtherEngine {
        emitted: &'static str,
        spec: &'static str,
    },
    /// `--emit k8s` of a spec without a key a manifest needs.
    #[error("`--emit k8s` needs `{key}`{}, which the spec does not set", group.as_ref().map(|g| format!(" (of group `{g}`)")).unwrap_or_default())]
    KubernetesMissing {
        key: &'static str,
        group: Option<String>,
    },
    /// A plan that leaves no CPU to the system, which the kubelet must reserve.
    #[error("{}the plan leaves no CPU to the system, which a Kubernetes node must reserve (`reservedSystemCPUs`)", group.as_ref().map(|g| format!("group `{g}`: ")).unwrap_or_default())]
    KubernetesNoSystemCpus { group: Option<String> },
    /// More CPUs than one claim may hold under the CPU driver's `individual` mode.
    #[error(
        "{group}the plan gives a node {cpus} CPUs, and the CPU driver's `individual` mode needs a device per CPU, where a claim holds at most 32"
    )]
    KubernetesTooManyCpus { group: String, cpus: usize },
    /// The workload or a name cannot carry the job.
    #[error("{why}")]
    KubernetesShape { why: String, help: &'static str },
    /// The base name of the objects is no DNS label, or too long for the names made from it.
    #[error(
        "`{key}: {name}` cannot name the Kubernetes objects: it must be a DNS label of at most {room} characters here (lowercase letters, digits and `-`, starting with a letter), leaving room for the names made from it"
    )]
    KubernetesName {
        name: String,
        key: &'static str,
        room: usize,
    },
    /// A required memory policy where the namespace refuses `SYS_NICE`.
    #[error(
        "{group}the plan requires a memory policy, which needs SYS_NICE, and Pod Security `{level}` refuses SYS_NICE"
    )]
    KubernetesMemoryPolicy { group: String, level: &'static str },
    /// A template failed to render: a bug in numaplan.
    #[error("template `{name}` failed to render: {detail}")]
    Template { name: &'static str, detail: String },
}

/// Refuses, before anything is planned, a launch of `kind` that needs the spec's `command`
/// where a group of the job has none.
pub fn command_given(kind: EmitKind, spec: &Spec) -> Result<(), EmitError> {
    // The Kubernetes kinds say their own: `kubelet` runs nothing, and `k8s` takes an
    // engine's or `kubernetes.args`.
    let own = matches!(kind, EmitKind::K8s | EmitKind::Kubelet);
    match !own && !kind.takes_command() && spec.lacks_command(Groups::Any) {
        true => Err(EmitError::MissingCommand),
        false => Ok(()),
    }
}

/// What a generated file records of where it came from, and the plan it embeds.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    pub header: provenance::Header<'a>,
    /// The plan file (YAML), which every script embeds and its ranks read.
    pub plan_file: &'a str,
    /// The script's file name (`-o`), for its usage line; `None` on standard output.
    pub script: Option<&'a str>,
    /// Each group's plan id (`plan_file::id`), in order, which its ranks' marks carry.
    pub plan_ids: &'a [String],
}

/// A launch script, and what the plan says that the launch cannot (W0221, W0222), to be told
/// beside the plan's own warnings.
pub struct Launch {
    pub script: String,
    pub warnings: Vec<Warning>,
}

/// `job` as `kind`'s launch script or manifests; `machines` are its groups' topologies, in
/// order, which the Kubernetes kinds read (the scripts need only the plan).
pub fn launch(
    job: &JobPlan,
    machines: &[Topology],
    kind: EmitKind,
    origin: &Origin,
) -> Result<Launch, EmitError> {
    match kind {
        EmitKind::Kubelet => Ok(Launch {
            script: kubernetes::kubelet(job, machines, origin)?,
            warnings: Vec::new(),
        }),
        EmitKind::K8s => {
            // An engine runs its script, and so does a job that asks torchrun's: the ConfigMap
            // carries it beside the plan.
            let first = &job.groups[0];
            let kind = match first.engine {
                Some(engine) => [EmitKind::Vllm, EmitKind::Sglang]
                    .into_iter()
                    .find(|k| k.engine() == Some(engine)),
                None => first.kubernetes.torchrun.then_some(EmitKind::Torchrun),
            };
            let rendered = match kind {
                Some(kind) => {
                    let origin = Origin {
                        script: Some(kubernetes::SCRIPT_NAME),
                        ..*origin
                    };
                    Some((kind, script(job, kind, &origin)?))
                }
                None => None,
            };
            let (manifests, mut warnings) = kubernetes::manifests(
                job,
                machines,
                origin,
                rendered.as_ref().map(|(kind, s)| kubernetes::Script {
                    text: &s.script,
                    name: kind.name(),
                    engine: kind.engine().is_some(),
                }),
            )?;
            warnings.extend(rendered.into_iter().flat_map(|(_, s)| s.warnings));
            Ok(Launch {
                script: manifests,
                warnings,
            })
        }
        _ => script(job, kind, origin),
    }
}

/// `job` as the launch script of `kind`, one of the template kinds.
fn script(job: &JobPlan, kind: EmitKind, origin: &Origin) -> Result<Launch, EmitError> {
    if !kind.takes_command() && job.groups.iter().any(|g| g.command.is_empty()) {
        return Err(EmitError::MissingCommand);
    }
    let name = kind.template();
    let (view, warnings) = match kind {
        EmitKind::Bash => (value(bash::view(job, origin)?), Vec::new()),
        EmitKind::Sbatch | EmitKind::SbatchExec => (value(sbatch::view(job, origin)), Vec::new()),
        EmitKind::Flux => {
            let (view, unplaced) = flux::view(job, origin);
            (value(view), unplaced)
        }
        EmitKind::Torchrun | EmitKind::Mpirun => (
            value(view::job_view(job, origin, (), |_, _| ())),
            Vec::new(),
        ),
        EmitKind::K8s | EmitKind::Kubelet => unreachable!("invariant: written by `launch`"),
        EmitKind::Vllm | EmitKind::Sglang => {
            let engine = kind
                .engine()
                .expect("invariant: an engine's launch has its engine");
            let (view, lost) = engine::view(job, origin, engine)?;
            (value(view), lost)
        }
    };
    let script = templates::environment()
        .get_template(name)
        .and_then(|t| t.render(view))
        .map_err(|e| EmitError::Template {
            name,
            detail: format!("{e:#}"),
        })?;
    Ok(Launch { script, warnings })
}

/// A view as the templates take it.
fn value(view: impl Serialize) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(view))
}
