//! Where a process's memory is: `/proc/PID/numa_maps`, one line per mapping with its memory
//! policy and its resident pages per NUMA node (`N3=2048`), counted at the mapping's page size
//! (`kernelpagesize_kB=2048` for huge pages). Read as a stream, one line at a time: the file
//! of a process with a very large address space is long, and reading it takes the kernel's
//! walk of its page tables, but never stops the process.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::ids::NodeId;

/// A process's memory as numa_maps shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Residence {
    /// The policy of the first mapping (`bind:3`, `default`): the process's own where no
    /// mapping has one of its own.
    pub policy: Option<String>,
    /// The process's own memory per node, in bytes: anonymous mappings (heap, stacks,
    /// `malloc`'s), shared memory (`/dev/shm`, memfd, System V) and huge pages, at their size.
    /// Page-cache pages of files (shared libraries, a model read from disk) are left out: their
    /// node is where the file was first read, not the process's to choose.
    pub bytes: BTreeMap<NodeId, u64>,
}

impl Residence {
    pub fn total(&self) -> u64 {
        self.bytes.values().sum()
    }

    /// The share of the memory on `nodes` (0 to 1); `None` without memory.
    pub fn share_on(&self, nodes: &[NodeId]) -> Option<f64> {
        let total = self.total();
        (total > 0).then(|| {
            let on: u64 = nodes.iter().filter_map(|n| self.bytes.get(n)).sum();
            on as f64 / total as f64
        })
    }
}

/// Reads `/proc/PID/numa_maps`: `NotFound` when the process is gone, `PermissionDenied` for
/// another user's process (reading it takes the right to trace it).
pub fn read(pid: u32) -> std::io::Result<Residence> {
    let file = std::fs::File::open(format!("/proc/{pid}/numa_maps"))?;
    Ok(parse(std::io::BufReader::with_capacity(64 * 1024, file)))
}

/// numa_maps text as a `Residence`, line by line.
pub fn parse(text: impl BufRead) -> Residence {
    let mut residence = Residence::default();
    for line in text.lines() {
        let Ok(line) = line else { break };
        let mut fields = line.split_ascii_whitespace();
        let _address = fields.next();
        let Some(policy) = fields.next() else {
            continue;
        };
        residence.policy.get_or_insert_with(|| policy.to_string());
        // A mapping counts unless it is a file's (page cache); huge pages always count.
        let (mut file_backed, mut huge) = (false, false);
        let mut page_kib: u64 = 4;
        let mut pages: Vec<(u32, u64)> = Vec::new();
        for field in fields {
            if field == "huge" {
                huge = true;
            } else if let Some(file) = field.strip_prefix("file=") {
                file_backed = !is_own_memory_file(file);
            } else if let Some(kib) = field.strip_prefix("kernelpagesize_kB=") {
                page_kib = kib.parse().unwrap_or(4);
            } else if let Some((node, count)) = field
                .strip_prefix('N')
                .and_then(|rest| rest.split_once('='))
            {
                if let (Ok(node), Ok(count)) = (node.parse(), count.parse()) {
                    pages.push((node, count));
                }
            }
        }
        if !file_backed || huge {
            for (node, count) in pages {
                *residence.bytes.entry(NodeId(node)).or_default() += count * page_kib * 1024;
            }
        }
    }
    residence
}

/// A file mapping that is the process's own memory rather than a file's page cache: shared
/// memory (`/dev/shm`, memfd, System V, and shared anonymous mappings, which the kernel backs
/// with a deleted `/dev/zero`: Python's `mmap.mmap(-1, n)`, multiprocessing's heaps), which a
/// process allocates as it allocates anonymous memory.
fn is_own_memory_file(file: &str) -> bool {
    ["/dev/shm/", "/memfd:", "/SYSV", "/dev/zero"]
        .iter()
        .any(|prefix| file.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55f0d19fc000 bind:3 file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4
55f0de7ac000 bind:3 heap anon=4 dirty=4 active=0 N3=4 kernelpagesize_kB=4
7f73f0800000 bind:3 anon=16384 dirty=16384 active=0 N3=16000 N1=384 kernelpagesize_kB=4
7f1b27b4b000 bind:3 file=/usr/lib/x86_64-linux-gnu/libc.so.6 mapped=38 mapmax=3 N0=38 kernelpagesize_kB=4
7f0000000000 bind:3 file=/anon_hugepage\\040(deleted) huge anon=3 dirty=3 N3=3 kernelpagesize_kB=2048
7e0000000000 bind:3 file=/dev/shm/torch_123 dirty=10 N1=10 kernelpagesize_kB=4
7d0000000000 bind:3 file=/dev/zero\\040(deleted) dirty=5 N3=5 kernelpagesize_kB=4
7ffd0a0c1000 bind:3 stack anon=33 dirty=33 N3=33 kernelpagesize_kB=4
7ffd0a1d4000 bind:3
";

    #[test]
    fn pages_count_at_their_size_on_their_node() {
        let r = parse(MAPS.as_bytes());
        assert_eq!(r.policy.as_deref(), Some("bind:3"));
        let kib = |node: u32| r.bytes.get(&NodeId(node)).copied().unwrap_or(0) / 1024;
        // Heap, anonymous mapping, shared anonymous mapping, 3 huge pages of 2 MiB, stack:
        // node 3.
        assert_eq!(kib(3), (4 + 16000 + 5 + 33) * 4 + 3 * 2048);
        // The anonymous mapping's 384 pages and the shared-memory segment: node 1.
        assert_eq!(kib(1), (384 + 10) * 4);
        // Page cache of files (the binary, libc) is not the process's own memory.
        assert_eq!(kib(0), 0);
        let share = r.share_on(&[NodeId(3)]).unwrap();
        let expected = kib(3) as f64 / (kib(3) + kib(1)) as f64;
        assert!((share - expected).abs() < 1e-12, "{share}");
        assert_eq!(Residence::default().share_on(&[NodeId(0)]), None);
    }
}
