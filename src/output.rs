//! Writing result files atomically: a temporary file beside the target, then a rename, so a
//! failure leaves neither a partial nor a stale file.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// Whether a written file may be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// 0644.
    Data,
    /// 0755, for launch scripts.
    Executable,
}

pub fn write_atomic(path: &Path, contents: &[u8], mode: FileMode) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let tmp = path.with_file_name(format!(
        ".{}.numaplan-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        let bits = match mode {
            FileMode::Data => 0o644,
            FileMode::Executable => 0o755,
        };
        f.set_permissions(std::fs::Permissions::from_mode(bits))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
