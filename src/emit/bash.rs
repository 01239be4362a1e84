//! `--emit bash`: one node's ranks started by bash, each bound with numactl
//! (`templates/bash.sh.j2`). A job of several groups spans nodes of different shapes: refused.

use serde::Serialize;

use super::view::{JobView, job_view};
use super::{EmitError, EmitKind, Origin};
use crate::ids::node_list;
use crate::plan::Plan;
use crate::plan::job::JobPlan;
use crate::spec::MemPolicy;

/// A group's ranks, as `start_rank` takes them.
#[derive(Serialize)]
pub struct BashGroup {
    rank_list: Vec<BashRank>,
}

#[derive(Serialize)]
pub struct BashRank {
    rank: String,
    cpus: String,
    /// The numactl memory option (`--preferred=3`), or "" for none.
    memory: String,
    /// `NAME=value` entries.
    env: Vec<String>,
    /// `required` or `optional`: whether a refused memory policy stops the job (W0217 else).
    memory_required: &'static str,
}

/// The numactl option for a rank's memory policy.
fn numactl_memory(policy: MemPolicy, nodes: &str) -> String {
    match policy {
        MemPolicy::None => String::new(),
        MemPolicy::Preferred => format!("--preferred={nodes}"),
        MemPolicy::Bind => format!("--membind={nodes}"),
        MemPolicy::Interleave => format!("--interleave={nodes}"),
    }
}

pub fn view(job: &JobPlan, origin: &Origin) -> Result<JobView<(), BashGroup>, EmitError> {
    super::view::one_node_shape(job, EmitKind::Bash)?;
    Ok(job_view(job, origin, (), |plan, _| group(plan)))
}

fn group(plan: &Plan) -> BashGroup {
    BashGroup {
        rank_list: plan
            .ranks
            .iter()
            .map(|r| BashRank {
                rank: r.local_rank.to_string(),
                cpus: r.cpus.to_string(),
                memory: numactl_memory(r.memory.policy, &node_list(&r.memory.nodes)),
                memory_required: match r.memory.required {
                    true => "required",
                    false => "optional",
                },
                env: r.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            })
            .collect(),
    }
}
