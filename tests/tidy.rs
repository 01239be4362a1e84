//! Tidy rules, as ordinary tests: no debugging leftovers, and data flows one way between modules.

mod common;

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&common::repo().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(common::repo())
                .unwrap()
                .display()
                .to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn no_debugging_leftovers() {
    let forbidden = [
        concat!("dbg", "!("),
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("FIX", "ME"),
    ];
    for (file, text) in sources() {
        for word in forbidden {
            assert!(!text.contains(word), "{file} contains `{word}`");
        }
    }
}

#[test]
fn printing_and_exiting_only_in_main() {
    for (file, text) in sources() {
        if file == "src/main.rs" {
            continue;
        }
        for word in ["println!", "eprintln!", "process::exit"] {
            assert!(
                !text.contains(word),
                "{file} uses `{word}`: output goes through a Write handed down from main"
            );
        }
    }
}

#[test]
fn format_crates_stay_at_their_edges() {
    // serde_yaml and yaml-rust2 only in src/yaml/; hwloc only in src/topology/hwloc/.
    for (file, text) in sources() {
        if !file.starts_with("src/yaml/") {
            assert!(
                !text.contains("serde_yaml::") && !text.contains("yaml_rust2"),
                "{file} uses a YAML crate directly"
            );
        }
        if !file.starts_with("src/topology/hwloc/") {
            assert!(!text.contains("hwlocality::"), "{file} uses hwloc directly");
        }
    }
}

#[test]
fn unsafe_code_only_in_sys() {
    for (file, text) in sources() {
        if file.starts_with("src/sys/") {
            continue;
        }
        assert!(
            !text.contains(concat!("unsafe", " {")) && !text.contains(concat!("unsafe", " fn")),
            "{file}: syscalls and other unsafe code belong in src/sys/"
        );
    }
}

#[test]
fn every_template_file_is_embedded() {
    let names: Vec<&str> = numaplan::emit::templates::TEMPLATES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    for e in std::fs::read_dir(common::repo().join("templates")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(
            names.contains(&name.as_str()),
            "templates/{name} is not in emit::templates::TEMPLATES"
        );
    }
    // Loading the environment parses every embedded template.
    let env = numaplan::emit::templates::environment();
    for name in names {
        assert!(env.get_template(name).is_ok(), "{name}");
    }
}

/// STYLE: a function that grows past about 80 lines is split into named steps. A function is
/// measured from its `fn` line to the first line holding only `}` at the same indentation
/// (rustfmt's layout); test modules count too.
#[test]
fn no_function_longer_than_80_lines() {
    let mut long = Vec::new();
    for (file, text) in sources() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "pub(super) fn ",
                "const fn ",
            ]
            .iter()
            .any(|p| body.starts_with(p));
            if !is_fn || body.ends_with(';') {
                continue;
            }
            let closing = " ".repeat(indent) + "}";
            if let Some(len) = lines[i + 1..].iter().position(|l| *l == closing) {
                if len + 1 > 80 {
                    long.push(format!("{file}:{} ({} lines)", i + 1, len + 1));
                }
            }
        }
    }
    assert!(long.is_empty(), "split into named steps: {long:?}");
}

/// STYLE.md: "split any file past about 500 lines by concept". Counted up to a file's unit
/// tests; the one exception is the table of error codes and their explanations (data).
#[test]
fn no_file_past_500_lines_of_code() {
    const TABLES: [&str; 1] = ["src/diag/codes.rs"];
    let long: Vec<String> = sources()
        .into_iter()
        .filter(|(file, _)| !TABLES.contains(&file.as_str()))
        .filter_map(|(file, text)| {
            let code = text.lines().take_while(|l| *l != "#[cfg(test)]").count();
            (code > 500).then(|| format!("{file} ({code} lines)"))
        })
        .collect();
    assert!(long.is_empty(), "split by concept: {long:?}");
}

/// The project's own shell scripts (CI's entry, the test and bench scripts, the Slurm and QEMU
/// harnesses and their guest scripts, the torchrun stand-in) pass shellcheck, as the generated
/// ones do: found by their `#!` line under `.ci/`, `scripts/` and `tests/`.
#[test]
fn every_shell_script_passes_shellcheck() {
    fn scripts(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                scripts(&p, out);
            } else if std::fs::read(&p).is_ok_and(|b| {
                let first = b.split(|&c| c == b'\n').next().unwrap_or_default();
                first.starts_with(b"#!")
                    && [&b"/sh"[..], b"/bash", b"env bash", b"env sh"]
                        .iter()
                        .any(|shell| first.windows(shell.len()).any(|w| w == *shell))
            }) {
                out.push(p);
            }
        }
    }
    let mut found = Vec::new();
    for dir in [".ci", "scripts", "tests"] {
        scripts(&common::repo().join(dir), &mut found);
    }
    found.sort();
    let names: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(common::repo())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    for must in [
        "scripts/test.sh",
        ".ci/run",
        "tests/vm/gpu-guest.sh",
        "tests/bind/torchrun",
    ] {
        assert!(
            names.iter().any(|n| n == must),
            "{must} not found: {names:?}"
        );
    }
    let out = std::process::Command::new("shellcheck")
        .arg("-x")
        .args(&found)
        .current_dir(common::repo())
        .output()
        .expect("shellcheck is installed (scripts/deps.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every launcher, OpenMP and GPU-visibility variable a rank's environment holds is spelled
/// once, in src/variables.rs: the code names it by its constant, so that a misspelling is a
/// compile error and a rename one edit. (Tests may spell them: they check what users see.)
#[test]
fn rank_variables_are_spelled_once() {
    let names = [
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "OMP_NUM_THREADS",
        "OMP_PLACES",
        "OMP_PROC_BIND",
        "KMP_AFFINITY",
        "CUDA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ZE_AFFINITY_MASK",
        "NUMAPLAN_BOUND",
        "NUMAPLAN_GROUP",
    ];
    let mut found = Vec::new();
    for (path, text) in sources() {
        if path.ends_with("variables.rs") {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{path}:{}: \"{name}\"", i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "use the constant of src/variables.rs:\n{}",
        found.join("\n")
    );
}

/// The Python package's variable lists are the binary's (`variables.rs`): a variable added on
/// one side and not the other fails here.
#[test]
fn the_python_packages_variable_lists_are_the_binarys() {
    use numaplan::variables::{OPENMP_READ_AT_LOAD, TORCHRUN_NUMBERING, VISIBILITY};
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("python/numaplan/_bind.py"),
    )
    .unwrap();
    // `NAME = ("A", "B",\n  "C")`: the strings of the tuple.
    let tuple = |name: &str| -> Vec<String> {
        let start = source
            .find(&format!("\n{name} = ("))
            .unwrap_or_else(|| panic!("_bind.py has no `{name} = (...)`"));
        let body = &source[start..];
        let body = &body[body.find('(').unwrap() + 1..body.find(')').unwrap()];
        body.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    for (name, rust) in [
        ("VISIBILITY", &VISIBILITY[..]),
        ("_NUMBERING", &TORCHRUN_NUMBERING[..]),
        ("_OPENMP_ONCE", &OPENMP_READ_AT_LOAD[..]),
    ] {
        assert_eq!(tuple(name), rust, "python/numaplan/_bind.py's {name}");
    }
}
