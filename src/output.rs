//! Writing result files atomically: a temporary file beside the target, then a rename, so a
//! failure leaves neither a partial nor a stale file.
//!
//! The temporary file has an unpredictable name and is created exclusively (`O_EXCL`: a link
//! planted at its name is refused, never written through). A file that exists keeps its
//! permissions; a new one gets the usual ones (0666 or 0777 less the umask). Character devices
//! and FIFOs (`-o /dev/null`, `-o /dev/stdout`, a named pipe) are written directly: they cannot
//! be replaced, only written to. A symbolic link is followed: the file it names is replaced.

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// Whether a written file may be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// A data file.
    Data,
    /// A launch script: executable by whoever may read it.
    Executable,
}

pub fn write_atomic(path: &Path, contents: &[u8], mode: FileMode) -> std::io::Result<()> {
    let existing = std::fs::metadata(path).ok();
    if let Some(meta) = &existing {
        let kind = meta.file_type();
        if kind.is_char_device() || kind.is_fifo() {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)?
                .write_all(contents);
        }
    }
    let target = if path.is_symlink() {
        std::fs::canonicalize(path)?
    } else {
        path.to_path_buf()
    };
    let bits = permissions(existing.map(|m| m.permissions().mode() & 0o7777), mode);
    replace(&target, contents, bits)
}

/// The permissions of the written file: the existing file's, or the default for a new one; a
/// launch script is executable wherever it is readable.
fn permissions(existing: Option<u32>, mode: FileMode) -> u32 {
    let base = existing.unwrap_or(0o666 & !umask());
    match mode {
        FileMode::Data => base,
        FileMode::Executable => base | ((base & 0o444) >> 2),
    }
}

/// The process's umask, from /proc (reading it with umask(2) would change it for a moment).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Umask:"))?;
            u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
        })
        .unwrap_or(0o022)
}

/// Writes a temporary file beside `target` and renames it over `target`; on any failure the
/// temporary file is removed and `target` is untouched.
fn replace(target: &Path, contents: &[u8], bits: u32) -> std::io::Result<()> {
    let name = target
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) = create_temporary(&dir, &name.to_string_lossy())?;
    let result = (|| {
        file.write_all(contents)?;
        file.set_permissions(std::fs::Permissions::from_mode(bits))?;
        file.sync_all()?;
        std::fs::rename(&tmp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Creates `.NAME.XXXXXXXXXXXXXXXX.numaplan.tmp` in `dir`, the X a random number: exclusively
/// (`O_EXCL`: whatever already has the name, a planted link included, is never opened) and
/// without following a link (`O_NOFOLLOW`), readable by the owner only until renamed.
fn create_temporary(dir: &Path, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::hash::{BuildHasher as _, Hasher as _};
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut last = None;
    for attempt in 0u32..16 {
        // RandomState's keys come from the OS's random source.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        let path = dir.join(format!(".{name}.{:016x}.numaplan.tmp", h.finish()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AlreadyExists)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_executable_where_readable_and_existing_modes_stay() {
        assert_eq!(permissions(Some(0o600), FileMode::Data), 0o600);
        assert_eq!(permissions(Some(0o640), FileMode::Executable), 0o750);
        assert_eq!(permissions(Some(0o755), FileMode::Executable), 0o755);
    }
}
