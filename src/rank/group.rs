//! Which group of a plan of several groups (`groups:`) this node runs: `--group NAME`, else
//! `NUMAPLAN_GROUP` (which the generated scripts set per component), else the heterogeneous
//! Slurm component whose node list (`SLURM_JOB_NODELIST_HET_GROUP_<n>`) holds this host, else
//! the one group whose machine has this node's shape. Pure: the environment comes in as a map.

use super::{Env, RankError, hostlist};
use crate::plan::MachineShape;
pub use crate::plan::place::GroupShape;
use crate::variables::NUMAPLAN_GROUP;

/// What this node knows of itself.
pub struct ThisNode<'a> {
    /// `--group`.
    pub flag: Option<&'a str>,
    pub env: &'a Env,
    /// Its host name (Slurm's `SLURMD_NODENAME` where set).
    pub host: &'a str,
    /// Its shape, read (from `/sys`) only when no name or Slurm component says the group: a
    /// rank's `bind` pays for it only where it is needed.
    pub shape: &'a dyn Fn() -> MachineShape,
}

/// The index of this node's group in `groups`.
pub fn find_group(groups: &[GroupShape], node: &ThisNode) -> Result<usize, RankError> {
    if let Some(found) = by_name(groups, node)? {
        return Ok(found);
    }
    if let Some(found) = by_slurm_component(groups, node)? {
        return Ok(found);
    }
    by_shape(groups, node)
}

/// Step 1: the group named by `--group`, else by `NUMAPLAN_GROUP`.
fn by_name(groups: &[GroupShape], node: &ThisNode) -> Result<Option<usize>, RankError> {
    let named = match node.flag {
        Some(name) => Some((name, "--group")),
        None => node
            .env
            .get(NUMAPLAN_GROUP)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(|v| (v, NUMAPLAN_GROUP)),
    };
    let Some((name, via)) = named else {
        return Ok(None);
    };
    match groups.iter().position(|g| g.name == name) {
        Some(i) => Ok(Some(i)),
        None => Err(RankError::GroupUnknown {
            name: name.to_string(),
            via: via.to_string(),
            groups: groups.to_vec(),
        }),
    }
}

/// The variable that lists component `n`'s nodes in a heterogeneous Slurm job.
fn component_list(n: usize) -> String {
    format!("SLURM_JOB_NODELIST_HET_GROUP_{n}")
}

/// Step 2: in a heterogeneous Slurm job (`SLURM_HET_SIZE`), whose components are the plan's
/// groups in order, the component whose node list holds this host.
fn by_slurm_component(groups: &[GroupShape], node: &ThisNode) -> Result<Option<usize>, RankError> {
    let Some(size) = node
        .env
        .get("SLURM_HET_SIZE")
        .and_then(|v| v.trim().parse::<usize>().ok())
    else {
        return Ok(None);
    };
    if size != groups.len() {
        return Err(RankError::GroupComponents {
            components: size,
            groups: groups.to_vec(),
        });
    }
    let holding: Vec<usize> = (0..size)
        .filter(|n| {
            node.env
                .get(&component_list(*n))
                .is_some_and(|list| hostlist::contains(list, node.host))
        })
        .collect();
    match holding[..] {
        [one] => Ok(Some(one)),
        // Not in any list (a step on another host), or in several: the shape decides.
        _ => Ok(None),
    }
}

/// Step 3: the one group whose machine has this node's shape.
fn by_shape(groups: &[GroupShape], node: &ThisNode) -> Result<usize, RankError> {
    let shape = (node.shape)();
    let matching: Vec<usize> = (0..groups.len())
        .filter(|i| groups[*i].shape == shape)
        .collect();
    match matching[..] {
        [one] => Ok(one),
        _ => Err(RankError::GroupNotFound {
            shape,
            matching: matching.iter().map(|i| groups[*i].name.clone()).collect(),
            groups: groups.to_vec(),
        }),
    }
}

/// The groups, one line each: `trainer: 2 nodes of nvidia-dgx-h100 (224 CPUs, 8 NUMA nodes,
/// 8 GPUs)`.
pub fn groups_text(groups: &[GroupShape]) -> String {
    groups
        .iter()
        .map(|g| {
            format!(
                "`{}`: {} node(s) of {} ({})",
                g.name,
                g.nodes,
                g.topology,
                g.shape.text()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(cpus: usize, gpus: usize) -> MachineShape {
        MachineShape {
            cpus,
            numa_nodes: 2,
            gpus,
        }
    }

    fn groups() -> Vec<GroupShape> {
        [("trainer", 224, 8), ("rollout", 128, 4), ("replay", 128, 4)]
            .into_iter()
            .map(|(name, cpus, gpus)| GroupShape {
                name: name.into(),
                nodes: 1,
                topology: "t".into(),
                shape: shape(cpus, gpus),
            })
            .collect()
    }

    fn find(
        flag: Option<&str>,
        vars: &[(&str, &str)],
        shape: MachineShape,
    ) -> Result<usize, RankError> {
        let env: Env = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        find_group(
            &groups(),
            &ThisNode {
                flag,
                env: &env,
                host: "n3",
                shape: &|| shape,
            },
        )
    }

    #[test]
    fn the_flag_then_the_variable_then_slurm_then_the_shape() {
        let het = [
            ("SLURM_HET_SIZE", "3"),
            ("SLURM_JOB_NODELIST_HET_GROUP_0", "n1"),
            ("SLURM_JOB_NODELIST_HET_GROUP_1", "n2"),
            ("SLURM_JOB_NODELIST_HET_GROUP_2", "n[3-4]"),
        ];
        let both = [&het[..], &[(NUMAPLAN_GROUP, "rollout")]].concat();
        assert_eq!(find(Some("trainer"), &both, shape(1, 0)).unwrap(), 0);
        assert_eq!(find(None, &both, shape(1, 0)).unwrap(), 1);
        assert_eq!(find(None, &het, shape(1, 0)).unwrap(), 2);
        assert_eq!(find(None, &[], shape(224, 8)).unwrap(), 0);
    }

    #[test]
    fn what_cannot_be_found_is_an_error() {
        let unknown = find(Some("critic"), &[], shape(224, 8)).unwrap_err();
        assert!(matches!(unknown, RankError::GroupUnknown { ref via, .. } if via == "--group"));
        // Two groups have this shape, and none the other.
        for s in [shape(128, 4), shape(64, 0)] {
            assert!(matches!(
                find(None, &[], s).unwrap_err(),
                RankError::GroupNotFound { .. }
            ));
        }
        // A heterogeneous job of two components is not this plan of three groups.
        let two = [("SLURM_HET_SIZE", "2")];
        assert!(matches!(
            find(None, &two, shape(224, 8)).unwrap_err(),
            RankError::GroupComponents { components: 2, .. }
        ));
    }
}
