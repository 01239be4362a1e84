//! Runs the real `numaplan` binary, as a user would.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn numaplan(args: &[&str]) -> Run {
    numaplan_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Runs numaplan with `dir` as the working directory.
pub fn numaplan_in(dir: &Path, args: &[&str]) -> Run {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run numaplan");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(self) -> String {
        assert_eq!(self.code, 0, "numaplan failed:\n{}", self.stderr);
        self.stdout
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every fixture in examples/topologies, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/topologies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}
