//! The text of what a command is given: a file, standard input (`-`), a file from git history
//! (`git:REV:PATH`) or an environment variable (`env:VAR`, how the generated launchers hand
//! the plan to every rank), with the directory a spec's relative `topology:` is taken from.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::text::TextError;

/// The value of the variable `var`; when it is not set, the parts `var_1`, `var_2`... joined,
/// each without the newline that ends it (how launch scripts hand over a plan larger than one
/// variable may hold: `templates/embedded-plan.sh.j2`).
fn read_variable(var: &str) -> Result<String, std::env::VarError> {
    let whole = std::env::var(var);
    if !matches!(whole, Err(std::env::VarError::NotPresent)) {
        return whole;
    }
    let mut text = String::new();
    let mut i = 1;
    loop {
        match std::env::var(format!("{var}_{i}")) {
            Ok(part) => text.push_str(part.strip_suffix('\n').unwrap_or(&part)),
            Err(std::env::VarError::NotPresent) if i > 1 => return Ok(text),
            Err(e) => return Err(e),
        }
        i += 1;
    }
}

/// The text of `arg` and the directory a spec's relative `topology:` is taken from (for a file
/// from git history: its directory in the working tree; for standard input, `-`, and an
/// environment variable: the current directory).
pub(super) fn read_input(arg: &str) -> Result<(String, PathBuf), Error> {
    let unreadable = |e| match e {
        TextError::Io(source) => Error::InputRead {
            path: PathBuf::from(arg),
            source,
        },
        TextError::NotUtf8(at) => Error::NotUtf8 {
            path: PathBuf::from(arg),
            at,
        },
        TextError::TooLarge { limit } => Error::TooLarge {
            path: PathBuf::from(arg),
            limit,
        },
    };
    if arg == "-" {
        return Ok((
            crate::text::read_stdin().map_err(unreadable)?,
            PathBuf::new(),
        ));
    }
    if let Some(var) = arg.strip_prefix("env:") {
        let text = read_variable(var).map_err(|e| Error::InputRead {
            path: PathBuf::from(arg),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, format!("`{var}`: {e}")),
        })?;
        return Ok((text, PathBuf::new()));
    }
    match arg.strip_prefix("git:") {
        Some(rest) => from_git(arg, rest),
        None => {
            let text = crate::text::read(Path::new(arg)).map_err(unreadable)?;
            Ok((text, parent(Path::new(arg))))
        }
    }
}

/// `git:REV:PATH` (`rest`: `REV:PATH`): the file as git history has it.
fn from_git(arg: &str, rest: &str) -> Result<(String, PathBuf), Error> {
    let git_err = |detail: String| Error::Git {
        arg: arg.to_string(),
        detail,
    };
    let (rev, path) = rest
        .split_once(':')
        .ok_or_else(|| git_err("expected `git:REV:PATH`".into()))?;
    let git = |args: &[&str]| -> Result<String, Error> {
        let out = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(|e| git_err(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(git_err(msg));
        }
        String::from_utf8(out.stdout).map_err(|_| git_err("the file is not UTF-8 text".into()))
    };
    let text = git(&["show", &format!("{rev}:{path}")])?;
    let dir = if path.starts_with("./") || path.starts_with("../") {
        parent(Path::new(path))
    } else {
        let top = git(&["rev-parse", "--show-toplevel"])?;
        parent(&Path::new(top.trim()).join(path))
    };
    Ok((text, dir))
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}
