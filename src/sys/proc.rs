//! Reading processes and the kernel through `/proc` and `/sys`: a process's threads, state,
//! thread names, environment and command line; small files read in as few reads as they take.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::cpuset::CpuSet;

/// The ids of a process's threads (`/proc/PID/task`), sorted; none when it is gone.
pub fn task_ids(pid: u32) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort();
    tids
}

/// `(tid, CPUs)` of every live thread of process `pid`, each read with one syscall. A zombie
/// leader (a rank that exited and that its parent has not reaped yet, as `exec` keeps its ranks
/// until the end) is no live thread: a rank whose threads are all gone has none.
pub fn thread_cpus(pid: u32) -> Vec<(u32, CpuSet)> {
    let tids = task_ids(pid);
    if tids.is_empty() {
        return Vec::new();
    }
    let leader_gone = stat(pid).is_none_or(|(state, _)| matches!(state, 'Z' | 'X'));
    tids.into_iter()
        .filter(|&tid| !(tid == pid && leader_gone))
        .filter_map(|tid| Some((tid, super::affinity::thread_affinity(tid).ok()?)))
        .collect()
}

/// The state letter (`R`, `S`, `Z`...) and parent of a process, from `/proc/PID/stat` (read
/// after the command name, which may hold spaces and parentheses).
pub fn stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// A thread's name (`comm`), read only for threads a report names.
pub fn thread_name(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|n| n.trim_end().to_string())
        .unwrap_or_default()
}

/// The environment a process was started with (`/proc/PID/environ`: what it had at `execve`,
/// not what it set since), the variables whose name and value are UTF-8. Another user's
/// process is `PermissionDenied` (reading it takes the right to trace it).
pub fn environ(pid: u32) -> io::Result<BTreeMap<String, String>> {
    let environ = std::fs::read(format!("/proc/{pid}/environ"))?;
    Ok(environ
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let eq = kv.iter().position(|&b| b == b'=')?;
            let key = std::str::from_utf8(&kv[..eq]).ok()?;
            let value = std::str::from_utf8(&kv[eq + 1..]).ok()?;
            Some((key.to_string(), value.to_string()))
        })
        .collect())
}

/// Who a process is, from `/proc/PID/status` and `/proc/PID/stat`: its real user, its pid as
/// its own pid namespace numbers it (a container's `getpid()`), and when it started (clock
/// ticks after boot: with the pid, a name no later process can have).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub own_pid: u32,
    pub start_time: u64,
}

/// The identity of process `pid`; `None` when it is gone.
pub fn identity(pid: u32) -> Option<Identity> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::split_whitespace)
    };
    let uid = field("Uid:")?.next()?.parse().ok()?;
    // NSpid lists the pid in each namespace from the outermost; kernels before 4.1 lack it.
    let own_pid = field("NSpid:")
        .and_then(|f| f.last()?.parse().ok())
        .unwrap_or(pid);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22, the 20th after the command name.
    let start_time = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    Some(Identity {
        uid,
        own_pid,
        start_time,
    })
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A process's command line, its arguments joined by spaces.
pub fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        String::from_utf8_lossy(&raw)
            .trim_end_matches('\0')
            .replace('\0', " "),
    )
}

/// The program a process runs (`/proc/PID/exe`; `self` for this one).
pub fn exe(pid: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// The ids of every process `/proc` shows.
pub fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// A `/proc` file of any length in one or two reads where it fits in `expected` bytes: procfs
/// says its size is 0, so `read_to_string` alone would start at 32 bytes and double (eight
/// reads of a few PCI functions' listing, or of mountinfo).
pub fn read_expecting(path: &Path, expected: usize) -> Option<String> {
    let mut text = String::with_capacity(expected);
    let mut file = std::fs::File::open(path).ok()?;
    std::io::Read::read_to_string(&mut file, &mut text).ok()?;
    Some(text)
}

/// A small `/sys` or `/proc` file in one read (`read_to_string` also asks for its size and reads
/// twice; the node check reads two files per PCI device).
pub fn read_small(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut buf = [0u8; 4096];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    String::from_utf8(buf[..n].to_vec()).ok()
}

/// A field of this process's `/proc/self/status` (`Mems_allowed_list`), its value trimmed.
pub fn status_field(name: &str) -> Option<String> {
    field(&self_status(), name).map(str::to_string)
}

/// This process's `/proc/self/status` (empty where unreadable).
pub fn self_status() -> String {
    read_expecting(Path::new("/proc/self/status"), 2048).unwrap_or_default()
}

/// The value of field `name` in a `/proc/PID/status` text, trimmed.
pub fn field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key == name).then(|| value.trim())
    })
}

/// A list file of `/sys` (`0-3,8`), when readable.
pub fn list(path: &str) -> Option<CpuSet> {
    read_small(Path::new(path))?.trim().parse().ok()
}

/// This machine's name; an unnamed one (a bare kernel says `(none)`) still needs one for its
/// plans and messages.
pub fn hostname() -> String {
    use std::io::Read as _;
    // One read (`read_to_string` asks for the size first and reads twice): `bind` asks on every
    // rank's start.
    let mut buf = [0u8; 256];
    std::fs::File::open("/proc/sys/kernel/hostname")
        .and_then(|mut f| f.read(&mut buf))
        .ok()
        .and_then(|n| {
            std::str::from_utf8(&buf[..n])
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty() && h != "(none)")
        .unwrap_or_else(|| "this-machine".into())
}
