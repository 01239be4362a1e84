//! What a plan must hold, every field that can disagree with another checked against it: a
//! plan is written by numaplan, but it is a file in a repository that anyone may edit, and a
//! hand-edited value that the rest contradicts (`cores: 7` on one CPU, a `WORLD_SIZE` of
//! another job) must be refused at its own line, never run. Each problem names its path
//! (`ranks[3].cpus`), which the plan file's reader turns into a line and column.

use super::{Plan, RankBinding, Sharing};
use crate::cpuset::CpuSet;
use crate::spec::MemPolicy;
use crate::variables::{
    GROUP_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_PORT, NODE_RANK, RANK, WORLD_SIZE,
};

/// A problem of a plan: its path (`ranks[3].cores`) and what is wrong.
pub type Located = (String, String);

impl Plan {
    /// Checks the plan against itself and the CPUs it was allowed: every rank has CPUs, all
    /// inside `allowed` and outside the reserved ones; ranks of an exclusive policy share no
    /// CPU; local ranks are 0..n, as many as `ranks_per_node`; each rank's core count, memory
    /// policy, helper pool, OpenMP places and torchrun numbering agree with the rest.
    pub fn check(&self, allowed: &CpuSet) -> Result<(), Located> {
        if self.ranks.len() != self.ranks_per_node as usize {
            return Err((
                "ranks_per_node".into(),
                format!(
                    "ranks_per_node is {}, but the plan lists {} rank(s)",
                    self.ranks_per_node,
                    self.ranks.len()
                ),
            ));
        }
        let mut earlier = CpuSet::new();
        for (i, r) in self.ranks.iter().enumerate() {
            let at = |key: &str| format!("ranks[{i}].{key}");
            if r.local_rank as usize != i {
                let message = format!("rank {i} is numbered {}", r.local_rank);
                return Err((at("local_rank"), message));
            }
            self.cpus_fit(r, allowed, &earlier)
                .map_err(|m| (at("cpus"), format!("rank {i}: {m}")))?;
            earlier = earlier.union(&r.cpus);
            cores_fit(r).map_err(|m| (at("cores"), format!("rank {i}: {m}")))?;
            if (r.memory.policy == MemPolicy::None) != r.memory.nodes.is_empty() {
                let m = format!("rank {i}: memory policy and nodes disagree");
                return Err((at("memory.nodes"), m));
            }
            r.check_inside()
                .map_err(|(key, m)| (at(key), format!("rank {i}: {m}")))?;
            self.numbering_fits(r)
                .map_err(|(var, m)| (at(&format!("env.{var}")), format!("rank {i}: {m}")))?;
        }
        self.one_port()
    }

    /// The rank's CPUs: some, inside what is allowed, none reserved, and under an exclusive
    /// policy none of an earlier rank's.
    fn cpus_fit(&self, r: &RankBinding, allowed: &CpuSet, earlier: &CpuSet) -> Result<(), String> {
        if r.cpus.is_empty() {
            return Err("it has no CPUs".into());
        }
        if r.cpus.intersects(&self.reserved) {
            let reserved = r.cpus.intersection(&self.reserved);
            return Err(format!("it has reserved CPUs {reserved}"));
        }
        if !r.cpus.is_subset(allowed) {
            let outside = r.cpus.difference(allowed);
            return Err(format!("it has CPUs {outside} outside the allowed set"));
        }
        if self.policy.sharing() == Sharing::Exclusive && r.cpus.intersects(earlier) {
            let shared = r.cpus.intersection(earlier);
            return Err(format!("it shares CPUs {shared} with an earlier rank"));
        }
        Ok(())
    }

    /// torchrun's numbering in a rank's environment, where the plan sets it: `LOCAL_RANK` is
    /// the rank's, `LOCAL_WORLD_SIZE` the ranks per node, `WORLD_SIZE` nodes x ranks per node,
    /// and `RANK`, `GROUP_RANK` and `NODE_RANK` those of the first node (which the plan lists;
    /// `exec` and the launch scripts set each node's own). `Err((variable, message))`.
    fn numbering_fits(&self, r: &RankBinding) -> Result<(), (&'static str, String)> {
        let expected = [
            (LOCAL_RANK, u64::from(r.local_rank), "the rank's local rank"),
            (
                RANK,
                self.global_rank(0, r.local_rank),
                "its rank on the first node",
            ),
            (
                LOCAL_WORLD_SIZE,
                u64::from(self.ranks_per_node),
                "ranks_per_node",
            ),
            (
                WORLD_SIZE,
                self.world_size(),
                match self.place.group {
                    None => "nodes x ranks_per_node",
                    Some(_) => "the groups' ranks (world_size)",
                },
            ),
            (GROUP_RANK, self.global_node(0), "the first node's"),
            (NODE_RANK, self.global_node(0), "the first node's"),
        ];
        for (var, want, what) in expected {
            match r.env.get(var) {
                Some(v) if v.trim().parse::<u64>() != Ok(want) => {
                    return Err((var, format!("{var} is `{v}`, but {what} is {want}")));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Every rank meets the others at one `MASTER_PORT`.
    fn one_port(&self) -> Result<(), Located> {
        let first = self.ranks.first().and_then(|r| r.env.get(MASTER_PORT));
        for (i, r) in self.ranks.iter().enumerate().skip(1) {
            let port = r.env.get(MASTER_PORT);
            if port != first {
                let show = |p: Option<&String>| p.map_or("unset".to_string(), |p| format!("`{p}`"));
                return Err((
                    format!("ranks[{i}].env.MASTER_PORT"),
                    format!(
                        "rank {i}: MASTER_PORT is {}, but rank 0's is {}: every rank meets \
                         at one port",
                        show(port),
                        show(first)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A rank's `cores`: at least one, and no more than its CPUs (a core has one CPU or more).
fn cores_fit(r: &RankBinding) -> Result<(), String> {
    let cpus = r.cpus.len() as u32;
    match r.cores {
        0 => Err("it has 0 cores".into()),
        n if n > cpus => Err(format!("it has {n} cores on {cpus} CPU(s)")),
        _ => Ok(()),
    }
}

impl RankBinding {
    /// The helper pool and the OpenMP places split the rank's CPUs: the pool inside them and
    /// short of all of them, every place inside the compute set, no CPU in two places.
    /// `Err((key, message))`, the key of the field at fault.
    fn check_inside(&self) -> Result<(), (&'static str, String)> {
        if !self.helpers.is_subset(&self.cpus) {
            let outside = self.helpers.difference(&self.cpus);
            return Err(("helpers", format!("helper CPUs {outside} outside its CPUs")));
        }
        if !self.helpers.is_empty() && self.compute().is_empty() {
            return Err(("helpers", "its helper pool takes all its CPUs".into()));
        }
        let Some(omp) = &self.openmp else {
            return Ok(());
        };
        let compute = self.compute();
        let mut seen = CpuSet::new();
        for (k, place) in omp.places.iter().enumerate() {
            if place.is_empty() || !place.is_subset(&compute) {
                let m =
                    format!("OpenMP place {k} ({place}) is not inside its compute CPUs {compute}");
                return Err(("openmp.places", m));
            }
            if place.intersects(&seen) {
                let m = format!("OpenMP place {k} ({place}) overlaps an earlier place");
                return Err(("openmp.places", m));
            }
            seen = seen.union(place);
        }
        if omp.threads == 0 {
            return Err(("openmp.threads", "it runs 0 OpenMP threads".into()));
        }
        Ok(())
    }
}
