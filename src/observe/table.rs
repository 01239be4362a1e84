//! `verify`'s table as text: one row per rank (a rank no process claims too, aligned with the
//! rest), its threads outside the rank's CPUs said once, however many they are, and where each
//! rank's memory is.

use super::Problem;
use super::verify::{Row, Table};
use crate::cpuset::CpuSet;
use crate::phrase::plural;

/// A rank is said by its local rank, as the plan and every launcher's local variable number it
/// (the global rank depends on the node, which `verify` need not know).
const HEADER: [&str; 8] = [
    "local rank",
    "pid",
    "threads",
    "CPUs planned",
    "CPUs actual",
    "memory planned",
    "memory actual",
    "",
];

impl Table {
    pub fn render(&self) -> String {
        let mut cells: Vec<[String; 8]> = self.rows.iter().map(row_cells).collect();
        cells.extend(self.missing.iter().map(|rank| {
            let dash = || "-".to_string();
            [
                rank.to_string(),
                dash(),
                dash(),
                dash(),
                dash(),
                dash(),
                dash(),
                format!("MISMATCH: no process claims local rank {rank}"),
            ]
        }));
        cells.sort_by_key(|c| c[0].parse::<u32>().unwrap_or(u32::MAX));
        let widths: Vec<usize> = (0..HEADER.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|c| c[i].len())
                    .chain([HEADER[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let mut s: String = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}  "))
                .collect();
            s.truncate(s.trim_end().len());
            s + "\n"
        };
        let mut out = line(&HEADER.map(String::from));
        for c in &cells {
            out.push_str(&line(c));
        }
        let memory: Vec<String> = self.rows.iter().filter_map(Row::memory_line).collect();
        if !memory.is_empty() {
            out.push_str("memory (numa_maps):\n");
            for m in memory {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out
    }
}

fn row_cells(r: &Row) -> [String; 8] {
    [
        r.rank.to_string(),
        r.pid.to_string(),
        r.tids.len().to_string(),
        r.planned_cpus.to_string(),
        r.actual_cpus.to_string(),
        r.planned_memory.clone(),
        r.actual_memory.clone(),
        verdict(r),
    ]
}

/// `ok`, `exited (...) before the check`, `UNKNOWN:` and what could not be read, or
/// `MISMATCH:` and the problems.
fn verdict(r: &Row) -> String {
    if let Some(how) = &r.exited {
        return format!("exited ({how}) before the check");
    }
    if r.problems.is_empty() {
        return match r.narrowed {
            0 => "ok".into(),
            n => format!(
                "ok ({} CPUs)",
                plural(n, "thread narrowed its", "threads narrowed their")
            ),
        };
    }
    let verdict = match r.problems.iter().all(super::Problem::unknown) {
        true => "UNKNOWN",
        false => "MISMATCH",
    };
    format!("{verdict}: {}", problems_text(&r.problems).join("; "))
}

/// The threads to name of many outside a rank's CPUs; the rest are counted.
const NAMED: usize = 3;

/// Each problem's text, the threads outside the rank's CPUs in one: `13 threads (4711 python,
/// 4712 pt_main, 4713 nccl-proxy and 10 more) may run on CPUs 0-255 outside the plan`.
pub fn problems_text(problems: &[Problem]) -> Vec<String> {
    let outside: Vec<(u32, &str, &CpuSet)> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::ThreadOutside { tid, name, outside } => Some((*tid, name.as_str(), outside)),
            _ => None,
        })
        .collect();
    let mut texts = Vec::new();
    if outside.len() > 1 {
        let named: Vec<String> = outside
            .iter()
            .take(NAMED)
            .map(|(tid, name, _)| format!("{tid} {name}"))
            .collect();
        let more = match outside.len().saturating_sub(NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let cpus: CpuSet = outside.iter().flat_map(|(_, _, c)| c.iter()).collect();
        texts.push(format!(
            "{} threads ({}{more}) may run on CPUs {cpus} outside the plan",
            outside.len(),
            named.join(", ")
        ));
    }
    for p in problems {
        let folded = outside.len() > 1 && matches!(p, Problem::ThreadOutside { .. });
        if !folded {
            texts.push(p.to_string());
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outside(tid: u32, cpus: &str) -> Problem {
        Problem::ThreadOutside {
            tid,
            name: format!("t{tid}"),
            outside: cpus.parse().unwrap(),
        }
    }

    #[test]
    fn many_threads_outside_are_one_problem() {
        let mut problems: Vec<Problem> = (0..13).map(|i| outside(100 + i, "8-15")).collect();
        problems.push(Problem::Gone { pid: 7 });
        let texts = problems_text(&problems);
        assert_eq!(
            texts,
            [
                "13 threads (100 t100, 101 t101, 102 t102 and 10 more) may run on CPUs 8-15 \
                 outside the plan",
                "process 7 is gone"
            ]
        );
        // One thread is said as before.
        assert_eq!(
            problems_text(&[outside(5, "3")]),
            ["thread 5 (t5) may run on CPUs 3 outside the plan"]
        );
    }

    #[test]
    fn a_missing_rank_is_a_row_like_the_others() {
        let table = Table {
            rows: Vec::new(),
            missing: vec![0, 1],
        };
        let text = table.render();
        let lines: Vec<&str> = text.lines().collect();
        // The verdict starts after the header's last column, in every row; before, a missing
        // rank's row was `0  MISMATCH: ...`, out of line.
        let verdict_at = lines[0].len() + 2;
        for l in &lines[1..] {
            assert_eq!(l.find("MISMATCH"), Some(verdict_at), "{text}");
        }
    }
}
