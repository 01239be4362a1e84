//! `verify --counters`: each rank's node-load counts as text under the table and in the JSON
//! report, or why the machine has none.

use schemars::JsonSchema;
use serde::Serialize;

use crate::ids::RankPid;
use crate::observe::counters::{Counted, Unavailable};

/// `--counters`' lines under the table: each rank's (`(local rank, pid)`) remote share, or why
/// there is none.
pub(super) fn counters_text(ranks: &[RankPid], counted: Option<&Counted>) -> String {
    let Some(Counted { seconds, counts }) = counted else {
        return String::new();
    };
    let counts = match counts {
        Ok(counts) => counts,
        Err(Unavailable(why)) => {
            return format!("counters: unavailable: {why}; pages only\n");
        }
    };
    let mut out = format!("counters over {seconds} s (node-loads, node-load-misses):\n");
    for &RankPid { rank, pid } in ranks {
        let c = counts.get(&pid).copied().unwrap_or_default();
        let share = match c.remote_share() {
            Some(share) => format!("{:.1}% remote", share * 100.0),
            None => "no loads counted".into(),
        };
        out.push_str(&format!(
            "  rank {rank}: {} node loads, {} missed the local node, {share}\n",
            c.loads, c.misses
        ));
    }
    out
}

#[derive(Serialize, JsonSchema)]
pub(super) struct CountersReport {
    seconds: f64,
    /// Why the machine offers no counters (then `ranks` is empty).
    unavailable: Option<String>,
    ranks: Vec<CountedRank>,
}

#[derive(Serialize, JsonSchema)]
struct CountedRank {
    rank: u32,
    pid: u32,
    node_loads: u64,
    node_load_misses: u64,
    /// `node_load_misses / node_loads`; absent without loads.
    remote_share: Option<f64>,
}

impl CountersReport {
    /// Each rank's (`(local rank, pid)`) counts, or why the machine has none.
    pub(super) fn new(ranks: &[RankPid], Counted { seconds, counts }: &Counted) -> CountersReport {
        let ranks = match counts {
            Ok(counts) => ranks
                .iter()
                .map(|&RankPid { rank, pid }| {
                    let c = counts.get(&pid).copied().unwrap_or_default();
                    CountedRank {
                        rank,
                        pid,
                        node_loads: c.loads,
                        node_load_misses: c.misses,
                        remote_share: c.remote_share(),
                    }
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        CountersReport {
            seconds: *seconds,
            unavailable: counts.as_ref().err().map(|u| u.0.clone()),
            ranks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::counters::Counts;

    /// What `--counters` prints once a machine has counted (this one has no PMU to show it
    /// live): a share per rank, in the order of the ranks; a rank without loads says so.
    #[test]
    fn counted_ranks_read_as_remote_shares() {
        let ranks = [(0, 4711), (1, 4712), (2, 4713)].map(|(rank, pid)| RankPid { rank, pid });
        let counts = [
            (
                4711,
                Counts {
                    loads: 1_804_331,
                    misses: 259_486,
                },
            ),
            (
                4712,
                Counts {
                    loads: 1_000,
                    misses: 0,
                },
            ),
        ];
        let counted = Counted {
            seconds: 2.0,
            counts: Ok(counts.into_iter().collect()),
        };
        insta::assert_snapshot!(counters_text(&ranks, Some(&counted)));
        let report = serde_json::to_string_pretty(&CountersReport::new(&ranks, &counted))
            .expect("serializes");
        insta::assert_snapshot!(report);
        let refused = Counted {
            seconds: 2.0,
            counts: Err(Unavailable("the kernel has no perf_event_open".into())),
        };
        assert_eq!(
            counters_text(&ranks, Some(&refused)),
            "counters: unavailable: the kernel has no perf_event_open; pages only\n"
        );
        assert!(CountersReport::new(&ranks, &refused).ranks.is_empty());
        assert_eq!(counters_text(&ranks, None), "");
    }
}
