//! `perf_event_open`: one counter of an event on one thread and the threads it starts later,
//! read as the kernel returns it (value, time enabled, time running). What to count and what
//! the counts mean is `observe/counters.rs`'s.

use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd};

/// What the kernel counts: `perf_event_attr`'s `type` and `config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfEvent {
    pub kind: u32,
    pub config: u64,
}

/// `PERF_TYPE_HW_CACHE`: the generic cache events (`node-loads` among them).
pub const PERF_TYPE_HW_CACHE: u32 = 3;

/// One counter's reading: value, time enabled, time running (nanoseconds).
pub type Reading = [u64; 3];

/// The value of `/proc/sys/kernel/perf_event_paranoid`, when readable.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `struct perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64 bytes): every kernel
/// since 2.6.31 takes it, and the fields after it are not needed here.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// A counter of `event` on thread `tid` and the threads it starts from now on, counting user
/// space only.
pub fn open(tid: u32, event: PerfEvent) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: event.kind,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: event.config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags: FLAG_INHERIT | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..PerfEventAttr::default()
    };
    // SAFETY: the attribute is a valid, fully initialised perf_event_attr of the size it
    // states; the kernel only reads it during the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The counter's value, time enabled and time running.
pub fn read(fd: &OwnedFd) -> Option<Reading> {
    use std::io::Read as _;
    let mut file = std::fs::File::from(fd.try_clone().ok()?);
    let mut raw = [0u8; 24];
    file.read_exact(&mut raw).ok()?;
    Some(decode(&raw))
}

/// Three native-endian u64s, as `read(2)` of a counter returns them.
pub fn decode(raw: &[u8; 24]) -> Reading {
    let word = |i: usize| u64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    [word(0), word(1), word(2)]
}

/// Writes one byte into each 4 KiB page of `bytes` of fresh memory (huge pages off): a known
/// number of page faults, for the tests that count them through `open`.
pub fn touch_small_pages(bytes: usize) {
    const PAGE: usize = 4096;
    if bytes == 0 {
        return;
    }
    // SAFETY: a fresh private anonymous mapping, written only within its length and unmapped
    // once; MADV_NOHUGEPAGE keeps one fault per 4 KiB page.
    unsafe {
        let at = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(at, libc::MAP_FAILED);
        libc::madvise(at, bytes, libc::MADV_NOHUGEPAGE);
        let base = at.cast::<u8>();
        for page in 0..bytes / PAGE {
            std::ptr::write_volatile(base.add(page * PAGE), 1);
        }
        libc::munmap(at, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_is_the_kernels_first_layout() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }

    #[test]
    fn readings_are_three_native_words() {
        let mut raw = [0u8; 24];
        for (i, w) in [7u64, 9, 11].iter().enumerate() {
            raw[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        assert_eq!(decode(&raw), [7, 9, 11]);
    }
}
