//! Serving engines' workers, found by the titles the engines give them: vLLM titles each GPU
//! worker `VLLM::Worker_DP0_PP1_TP3` (`setup_proc_title_and_log_prefix`; the prefix is
//! `VLLM_PROCESS_NAME_PREFIX`, a part only where its size is over 1), SGLang each scheduler
//! `sglang::scheduler_DP0_TP3`. Such a worker carries no mark and no launcher's variable (or
//! the server's, which every worker inherits alike): its title says which GPU it drives, and so
//! which rank of the plan it is. Pure: `find.rs` reads the command lines.

use std::collections::BTreeSet;

use crate::spec::Engine;

/// A worker's parallel ranks, as its title shows them (a rank the title lacks is 0, its size 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Title {
    /// vLLM or SGLang.
    pub engine: Engine,
    /// The title as shown (`VLLM::Worker_DP0_TP1`).
    pub text: String,
    pub dp: Option<u32>,
    pub pp: u32,
    /// vLLM's prefill context parallel rank (between PP and TP in its ranks' order).
    pub pcp: u32,
    pub tp: u32,
}

/// The engine worker's title a command line starts with, if it is one: `PREFIX::Worker...` of
/// vLLM (not its `EngineCore`), `sglang::scheduler...` of SGLang (not its detokenizer or data
/// parallel controller).
pub fn parse(command: &str) -> Option<Title> {
    let text = command.split_whitespace().next()?;
    let (prefix, name) = text.split_once("::")?;
    let (engine, parts) = if let Some(parts) = name.strip_prefix("Worker") {
        (Engine::Vllm, parts)
    } else if prefix == "sglang" {
        (Engine::Sglang, name.strip_prefix("scheduler")?)
    } else {
        return None;
    };
    if !(parts.is_empty() || parts.starts_with('_')) {
        return None;
    }
    let mut title = Title {
        engine,
        text: text.to_string(),
        dp: None,
        pp: 0,
        pcp: 0,
        tp: 0,
    };
    // SGLang's `ATTN_CP1` and `MOE_DP0` are two words each, neither of them its DP rank.
    let mut words = parts.split('_').filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        if word == "ATTN" || word == "MOE" {
            words.next();
            continue;
        }
        let split = word.find(|c: char| c.is_ascii_digit())?;
        let (kind, number) = word.split_at(split);
        let number: u32 = number.parse().ok()?;
        match kind {
            "DP" => title.dp = Some(number),
            "PP" => title.pp = number,
            "PCP" => title.pcp = number,
            "TP" => title.tp = number,
            // Decode context and expert parallel ranks share the GPU of the TP rank.
            "DCP" | "EP" => {}
            _ => return None,
        }
    }
    Some(title)
}

/// The local rank of the plan (of `ranks_per_node`) each worker of `titles` is: the GPU it
/// drives, in CUDA's order of the visible GPUs, as the engine numbers them: worker `local`
/// of data parallel rank `d` on this node drives GPU `local + d x W` (vLLM's
/// `get_local_gpu_index`; SGLang's base GPU of each data parallel rank), where a replica's `W`
/// GPUs are its PP x PCP x TP workers of the node, TP the fastest. The node's data parallel
/// ranks are numbered from its first (a node of KServe's form runs ranks 4 to 7), and the
/// ranks of a replica spanning nodes (TP 16 over two nodes of 8) are taken modulo the node's
/// share. Workers of both engines are numbered apart; none past the plan's ranks.
pub fn number(titles: &[Title], ranks_per_node: u32) -> Vec<Option<u32>> {
    titles
        .iter()
        .map(|t| {
            let same: Vec<&Title> = titles.iter().filter(|o| o.engine == t.engine).collect();
            let dps: BTreeSet<u32> = same.iter().filter_map(|o| o.dp).collect();
            let first_dp = dps.first().copied().unwrap_or(0);
            let replicas = dps.last().map_or(1, |last| last - first_dp + 1);
            let per_replica = match ranks_per_node % replicas {
                0 => ranks_per_node / replicas,
                _ => count(&same, |o| (o.pp, o.pcp, o.tp)),
            };
            let pp = count(&same, |o| o.pp);
            let pcp = count(&same, |o| o.pcp);
            let tp = match per_replica % (pp * pcp) {
                0 => (per_replica / (pp * pcp)).max(1),
                _ => count(&same, |o| o.tp),
            };
            let replica = t.dp.map_or(0, |d| d - first_dp);
            let local =
                replica * per_replica + (t.pp % pp) * pcp * tp + (t.pcp % pcp) * tp + t.tp % tp;
            (local < ranks_per_node).then_some(local)
        })
        .collect()
}

/// How many distinct values `key` takes among `titles` (at least 1).
fn count<K: Ord>(titles: &[&Title], key: impl Fn(&Title) -> K) -> u32 {
    let distinct: BTreeSet<K> = titles.iter().map(|t| key(t)).collect();
    (distinct.len() as u32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(titles: &[&str], ranks_per_node: u32) -> Vec<Option<u32>> {
        let titles: Vec<Title> = titles.iter().map(|t| parse(t).unwrap()).collect();
        number(&titles, ranks_per_node)
    }

    #[test]
    fn titles_are_read_as_the_engines_write_them() {
        let t = parse("VLLM::Worker_DP1_PP1_TP3_EP7   ").unwrap();
        assert_eq!(
            (t.engine, t.dp, t.pp, t.pcp, t.tp),
            (Engine::Vllm, Some(1), 1, 0, 3)
        );
        let t = parse("myserve::Worker").unwrap();
        assert_eq!((t.dp, t.pp, t.tp), (None, 0, 0));
        let t = parse("sglang::scheduler_DP0_ATTN_CP1_MOE_DP2_TP5_EP5").unwrap();
        assert_eq!((t.engine, t.dp, t.tp), (Engine::Sglang, Some(0), 5));
        for not_a_worker in [
            "VLLM::EngineCore_DP0",
            "VLLM::APIServer",
            "sglang::detokenizer",
            "sglang::data_parallel_controller",
            "vllm serve m",
            "VLLM::Workers",
            "VLLM::Worker_XY1",
            "python worker.py",
        ] {
            assert_eq!(parse(not_a_worker), None, "{not_a_worker}");
        }
    }

    #[test]
    fn workers_are_numbered_as_the_engines_give_them_gpus() {
        // TP 8 on one node; TP 4 of a plan of 8 (the first four GPUs).
        let tp8: Vec<String> = (0..8).map(|t| format!("VLLM::Worker_TP{t}")).collect();
        let tp8: Vec<&str> = tp8.iter().map(String::as_str).collect();
        assert_eq!(numbered(&tp8, 8), (0..8).map(Some).collect::<Vec<_>>());
        assert_eq!(numbered(&tp8[..4], 8), (0..4).map(Some).collect::<Vec<_>>());
        // Tensor parallel 1: one worker, no rank in its title.
        assert_eq!(numbered(&["VLLM::Worker"], 1), vec![Some(0)]);
        // TP 2 x DP 4: DP rank d's TP rank t drives GPU 2d + t, whatever order they are in.
        assert_eq!(
            numbered(
                &[
                    "VLLM::Worker_DP3_TP1",
                    "VLLM::Worker_DP0_TP0",
                    "VLLM::Worker_DP2_TP0"
                ],
                8
            ),
            vec![Some(7), Some(0), Some(4)]
        );
        // KServe's form: this node runs data parallel ranks 4 to 7 of TP 2.
        let kserve: Vec<String> = (4..8)
            .flat_map(|d| (0..2).map(move |t| format!("VLLM::Worker_DP{d}_TP{t}")))
            .collect();
        let kserve: Vec<&str> = kserve.iter().map(String::as_str).collect();
        assert_eq!(numbered(&kserve, 8), (0..8).map(Some).collect::<Vec<_>>());
        // TP 16 over two nodes: the second node's TP ranks 8 to 15.
        let second: Vec<String> = (8..16)
            .map(|t| format!("sglang::scheduler_TP{t}"))
            .collect();
        let second: Vec<&str> = second.iter().map(String::as_str).collect();
        assert_eq!(numbered(&second, 8), (0..8).map(Some).collect::<Vec<_>>());
        // PP 2 x TP 4 on one node: PP rank p's TP rank t drives GPU 4p + t.
        assert_eq!(
            numbered(&["VLLM::Worker_PP1_TP2", "VLLM::Worker_PP0_TP3"], 8),
            vec![Some(6), Some(3)]
        );
        // A TP rank past the node's share is a later node's (TP 8 over two nodes of 4); a
        // data parallel rank past the plan's GPUs is none of its ranks.
        assert_eq!(numbered(&["VLLM::Worker_TP5"], 4), vec![Some(1)]);
        assert_eq!(
            numbered(
                &["VLLM::Worker_DP0", "VLLM::Worker_DP1", "VLLM::Worker_DP2"],
                2
            ),
            vec![Some(0), Some(1), None]
        );
    }
}
