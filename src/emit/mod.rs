//! Emitters: a plan rendered as a launch script from the embedded templates. Imports only
//! `plan`, `ids`, `cpuset` and the spec's plain enums.

pub mod context;
pub mod engine;
pub mod sbatch;
pub mod templates;

use crate::plan::Plan;
use crate::plan::job::{JobPlan, Shape};
use crate::spec::{Engine, Groups, Spec};
pub use context::Origin;

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
        }
    }

    /// Whether its script takes the program after `--` where the spec names none (the
    /// launchers that pass their own arguments on to every rank or to the engine).
    pub fn takes_command(self) -> bool {
        matches!(
            self,
            EmitKind::Torchrun | EmitKind::Mpirun | EmitKind::Vllm | EmitKind::Sglang
        )
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
    /// A template failed to render: a bug in numaplan.
    #[error("template `{name}` failed to render: {detail}")]
    Template { name: &'static str, detail: String },
}

/// Refuses, before anything is planned, a launch of `kind` that needs the spec's `command`
/// where a group of the job has none.
pub fn command_given(kind: EmitKind, spec: &Spec) -> Result<(), EmitError> {
    match !kind.takes_command() && spec.lacks_command(Groups::Any) {
        true => Err(EmitError::MissingCommand),
        false => Ok(()),
    }
}

/// A job as `kind`: a job of one group as its plan always was, a job of several groups as one
/// launch of them all; `plan_ids`: each group's plan id (`plan_file::id`), which its ranks'
/// marks carry.
pub fn render_job(
    job: &JobPlan,
    kind: EmitKind,
    origin: &Origin,
    plan_ids: &[String],
) -> Result<String, EmitError> {
    match (job.shape, job.groups.as_slice(), plan_ids) {
        (Shape::OneGroup, [plan], [id]) => render(
            plan,
            kind,
            &Origin {
                plan_id: id,
                ..*origin
            },
        ),
        _ => render_groups(job, kind, origin, plan_ids),
    }
}

/// A job of several groups as `kind`.
fn render_groups(
    plan: &JobPlan,
    kind: EmitKind,
    origin: &Origin,
    plan_ids: &[String],
) -> Result<String, EmitError> {
    let takes_command = matches!(kind, EmitKind::Torchrun | EmitKind::Mpirun);
    if plan.groups.iter().any(|g| g.command.is_empty()) && !takes_command {
        return Err(EmitError::MissingCommand);
    }
    let name = match kind {
        EmitKind::Bash => return Err(EmitError::GroupsNotOneNode { kind: kind.name() }),
        EmitKind::Sbatch => "slurm-groups.sbatch.j2",
        EmitKind::SbatchExec => "slurm-groups-exec.sbatch.j2",
        EmitKind::Torchrun => "torchrun-groups.sh.j2",
        EmitKind::Mpirun => "mpirun-groups.sh.j2",
        EmitKind::Vllm | EmitKind::Sglang => {
            return Err(EmitError::GroupsNotOneNode { kind: kind.name() });
        }
    };
    let ctx = minijinja::Value::from(minijinja::value::Serde(sbatch::groups(
        plan, origin, plan_ids,
    )));
    templates::environment()
        .get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| EmitError::Template {
            name,
            detail: format!("{e:#}"),
        })
}

pub fn render(plan: &Plan, kind: EmitKind, origin: &Origin) -> Result<String, EmitError> {
    // The torchrun and mpirun scripts take the command after `--` when the spec has none.
    let takes_command = matches!(
        kind,
        EmitKind::Torchrun | EmitKind::Mpirun | EmitKind::Vllm | EmitKind::Sglang
    );
    if plan.command.is_empty() && !takes_command {
        return Err(EmitError::MissingCommand);
    }
    let env = templates::environment();
    let render = |name: &'static str, ctx: minijinja::Value| {
        (name, env.get_template(name).and_then(|t| t.render(ctx)))
    };
    let (name, rendered) = match kind {
        EmitKind::Bash => render(
            "bash.sh.j2",
            minijinja::Value::from(minijinja::value::Serde(context::bash(plan, origin))),
        ),
        EmitKind::Sbatch => render(
            "slurm.sbatch.j2",
            minijinja::Value::from(minijinja::value::Serde(sbatch::sbatch(plan, origin))),
        ),
        EmitKind::SbatchExec => render(
            "slurm-exec.sbatch.j2",
            minijinja::Value::from(minijinja::value::Serde(sbatch::sbatch_exec(plan, origin))),
        ),
        EmitKind::Torchrun => render(
            "torchrun.sh.j2",
            minijinja::Value::from(minijinja::value::Serde(context::bind_launcher(
                plan, origin,
            ))),
        ),
        EmitKind::Mpirun => render(
            "mpirun.sh.j2",
            minijinja::Value::from(minijinja::value::Serde(context::bind_launcher(
                plan, origin,
            ))),
        ),
        EmitKind::Vllm | EmitKind::Sglang => {
            let (name, engine) = match kind {
                EmitKind::Vllm => ("vllm.sh.j2", Engine::Vllm),
                _ => ("sglang.sh.j2", Engine::Sglang),
            };
            render(
                name,
                minijinja::Value::from(minijinja::value::Serde(engine::context(
                    plan, origin, engine,
                )?)),
            )
        }
    };
    rendered.map_err(|e| EmitError::Template {
        name,
        detail: format!("{e:#}"),
    })
}
