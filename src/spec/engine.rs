//! The serving engines (`engine:`): their names, the variables that keep each from undoing a
//! plan, what each does with its workers' binding on its own, and which engine a command line
//! runs (`runs`), for the warning that a spec without `engine:` starts one.

use super::model::Engine;
use crate::diag::{Warning, codes};
use crate::variables::{SGLANG_AUTO_NUMA_BIND, TLLM_NUMA_AWARE_WORKER_AFFINITY};

impl Engine {
    /// The spec's word: `vllm`, `sglang`, `trtllm`.
    pub fn word(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
        }
    }

    /// The engine's word back (`engine:` in a plan file).
    pub fn from_word(word: &str) -> Option<Engine> {
        [Engine::Vllm, Engine::Sglang, Engine::Trtllm]
            .into_iter()
            .find(|e| e.word() == word)
    }

    /// Its name as its project writes it.
    pub fn title(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
        }
    }

    /// What every rank's environment holds so that the engine keeps the plan's binding: its
    /// own binding turned off where a rank is bound before the engine starts. vLLM binds only
    /// when `--numa-bind` is on its command line, so it needs none.
    pub fn variables(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Engine::Vllm => &[],
            Engine::Sglang => &[(SGLANG_AUTO_NUMA_BIND, "0")],
            Engine::Trtllm => &[(TLLM_NUMA_AWARE_WORKER_AFFINITY, "0")],
        }
    }

    /// What the engine does with its workers' binding when nothing tells it the plan.
    pub fn own_binding(self) -> &'static str {
        match self {
            Engine::Vllm => {
                "vLLM starts every worker of a server from the one process numaplan bound, so \
                 they all run on that rank's CPUs (and given `--numa-bind` without its lists, it \
                 finds that process's affinity constrained, skips its own detection and \
                 refuses to start: \"could not detect the GPU-to-NUMA topology\")"
            }
            Engine::Sglang => {
                "SGLang binds each worker to the first NUMA node NVML gives its GPU \
                 (SGLANG_AUTO_NUMA_BIND, on by default), replacing the plan's CPUs and memory \
                 policy"
            }
            Engine::Trtllm => {
                "TensorRT-LLM clears a worker's affinity when it finds it constrained \
                 (TLLM_NUMA_AWARE_WORKER_AFFINITY unset), which throws the plan's CPUs away"
            }
        }
    }
}

/// The serving engine a command line runs, where it is one numaplan knows, by its words (a
/// program's name, a module after `-m`), never by a word's substring: `vllm serve`,
/// `python -m vllm.entrypoints...`, `trtllm-serve`, `trtllm-llmapi-launch`,
/// `python -m tensorrt_llm...`, `python -m sglang.launch_server`, SGLang's router
/// (`python -m sglang_router.launch_server`, which starts servers) and `sglang serve`, anywhere
/// in the line (behind `uv run`, `numactl ...` or another wrapper, and in a shell's `-c` script).
pub fn runs<S: AsRef<str>>(argv: &[S]) -> Option<Engine> {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    words.iter().enumerate().find_map(|(i, w)| {
        let next = words.get(i + 1).copied().unwrap_or("");
        let (module, module_root) = module_at(&words, i);
        match (base(w).as_str(), next) {
            ("vllm", "serve") => Some(Engine::Vllm),
            ("sglang", "serve") => Some(Engine::Sglang),
            ("trtllm-serve" | "trtllm-llmapi-launch", _) => Some(Engine::Trtllm),
            ("sh" | "bash" | "dash" | "zsh" | "ksh", _) => shell_script(&words[i + 1..])
                .and_then(|script| runs(&script.split_whitespace().collect::<Vec<_>>())),
            _ if module_root == "vllm" && module.starts_with("vllm.entrypoints") => {
                Some(Engine::Vllm)
            }
            _ if ["sglang.launch_server", "sglang_router.launch_server"].contains(&module) => {
                Some(Engine::Sglang)
            }
            _ if module_root == "tensorrt_llm" => Some(Engine::Trtllm),
            _ => None,
        }
    })
}

/// The Python module word `i` of a command line names (`-m vllm.entrypoints...`,
/// `-mvllm...`), and its package: empty where it names none.
fn module_at<'a>(words: &[&'a str], i: usize) -> (&'a str, &'a str) {
    let module = match words[i] {
        "-m" => words.get(i + 1).copied().unwrap_or(""),
        w => w.strip_prefix("-m").unwrap_or(""),
    };
    (module, module.split('.').next().unwrap_or(""))
}

/// The script a shell runs (`bash -c SCRIPT`, `sh -ec SCRIPT`): the word after its first
/// option that ends in `c`.
fn shell_script<'a>(after_shell: &[&'a str]) -> Option<&'a str> {
    let at = after_shell
        .iter()
        .take_while(|w| w.starts_with('-'))
        .position(|w| !w.starts_with("--") && w.ends_with('c'))?;
    after_shell.get(at + 1).copied()
}

/// What the spec's command, or a program `exec`, `bind` and `numaplan.bind()` start, says
/// against the plan's engine: W0220 where it runs a serving engine the spec does not name;
/// W0224 where it passes the named engine's own binding flags (`engine`: what it names);
/// W0225 where it runs a framework that binds its workers itself, unless `env` (what the
/// ranks' environment holds) turns that off.
pub fn command_warnings<S: AsRef<str>>(
    engine: Option<Engine>,
    argv: &[S],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Warning> {
    unsaid(engine, argv)
        .into_iter()
        .chain(own_binding_flags(engine, argv))
        .chain(framework_binds(argv, env))
        .collect()
}

/// A training framework that binds its workers itself, numaplan's binding notwithstanding.
struct Framework {
    name: &'static str,
    /// Its package, as `-m` names its modules and a checkout's path holds it.
    words: &'static [&'static str],
    does: &'static str,
    /// The variable and value that turn it off, where it has one.
    off: Option<(&'static str, &'static str)>,
}

const FRAMEWORKS: [Framework; 2] = [
    Framework {
        name: "NeMo-RL",
        words: &["nemo_rl", "nemo-rl", "NeMo-RL"],
        does: "binds each Ray worker to its GPU's CPUs and memory from the file its `ray.sub` \
               writes (NRL_GPU_CPU_AFFINITY_FILE; nemo_rl/distributed/numa_utils.py), replacing \
               the plan's",
        off: Some(("NRL_DISABLE_NUMA_BINDING", "1")),
    },
    Framework {
        name: "AReaL",
        words: &["areal", "AReaL"],
        does: "binds each training engine to NVML's CPUs of GPU LOCAL_RANK \
               (nvmlDeviceSetCpuAffinity in areal/infra/platforms/cuda.py, by NVML's index \
               whatever CUDA_VISIBLE_DEVICES says), replacing the plan's, and has no switch to \
               turn that off",
        off: None,
    },
];

/// The framework a command line runs: a module of its package after `-m`, or a program or
/// script inside its package's directory (`.../nemo_rl/...`, `AReaL/examples/...`), by path
/// components, never substrings (`/data/areal_runs` is no AReaL).
fn framework<S: AsRef<str>>(argv: &[S]) -> Option<&'static Framework> {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    FRAMEWORKS.iter().find(|f| {
        words.iter().enumerate().any(|(i, w)| {
            let (_, root) = module_at(&words, i);
            let package = f.words[0];
            let in_checkout = w.contains('/')
                && w.split('/').collect::<Vec<_>>().windows(2).any(|pair| {
                    f.words.contains(&pair[0])
                        && (pair[0] == package || ["examples", package].contains(&pair[1]))
                });
            root == package || in_checkout
        })
    })
}

/// W0225 where `argv` runs a framework that binds its workers itself and `env` does not turn
/// that off.
fn framework_binds<S: AsRef<str>>(
    argv: &[S],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Warning> {
    let f = framework(argv)?;
    let fix = match f.off {
        Some((var, value)) if env(var).as_deref() == Some(value) => return None,
        Some((var, value)) => {
            format!("set `{var}: \"{value}\"` in the spec's `env:` to keep the plan's binding")
        }
        None => "run its workers unbound by numaplan, or accept that the framework's binding \
                 replaces the plan's (`--allow W0225`)"
            .to_string(),
    };
    Some(Warning::new(
        codes::W0225_FRAMEWORK_BINDS,
        format!("the command runs {}, which {}; {fix}", f.name, f.does),
    ))
}

/// W0220 where `argv` runs a serving engine the spec does not name (`engine`: what it names).
pub fn unsaid<S: AsRef<str>>(engine: Option<Engine>, argv: &[S]) -> Option<Warning> {
    let runs = runs(argv)?;
    let said = match engine {
        Some(e) if e == runs => return None,
        Some(e) => format!("the spec says `engine: {}`", e.word()),
        None => "the spec has no `engine:`".to_string(),
    };
    let fix = match runs {
        Engine::Trtllm => format!("add `engine: {}` to the spec", runs.word()),
        e => format!(
            "add `engine: {w}` to the spec and start the server with its script, \
             `numaplan compile job.yaml --emit {w}` (one server, whose workers {t} binds to \
             their ranks; `exec` and `bind` would start one server per rank)",
            w = e.word(),
            t = e.title()
        ),
    };
    Some(Warning::new(
        codes::W0220_ENGINE_UNSAID,
        format!(
            "the command runs {}, and {said}: {}; {fix}",
            runs.title(),
            runs.own_binding(),
        ),
    ))
}

/// The engine's own binding flags, as its parser takes them (argparse's unique prefixes of at
/// least so many characters): vLLM's `--numa-bind*`, SGLang's `--numa-node`.
fn binding_flags(engine: Engine) -> &'static [(&'static str, usize)] {
    match engine {
        Engine::Vllm => &[
            ("--numa-bind-nodes", 6),
            ("--numa-bind-cpus", 6),
            ("--no-numa-bind", 6),
        ],
        Engine::Sglang => &[("--numa-node", 6)],
        Engine::Trtllm => &[],
    }
}

/// W0224 where the command of the spec's engine passes that engine's own binding flags, which
/// replace the plan's binding (or, in the engine's script, are refused).
fn own_binding_flags<S: AsRef<str>>(engine: Option<Engine>, argv: &[S]) -> Option<Warning> {
    let engine = engine.filter(|e| runs(argv) == Some(*e))?;
    let flags: Vec<&str> = argv
        .iter()
        .map(|w| w.as_ref().split('=').next().unwrap_or_default())
        .filter(|w| {
            binding_flags(engine)
                .iter()
                .any(|(name, min)| w.len() >= *min && name.starts_with(w))
        })
        .collect();
    let first = flags.first()?;
    Some(Warning::new(
        codes::W0224_ENGINE_OWN_BINDING,
        format!(
            "the command passes {}'s own binding flag {first}: the engine binds its workers by it, \
             not by the plan (and `--emit {}` refuses it); remove {}",
            engine.title(),
            engine.word(),
            match flags.len() {
                1 => "it".to_string(),
                _ => format!("them ({})", flags.join(", ")),
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_command_lines_are_known_wherever_they_stand() {
        for (line, engine) in [
            ("vllm serve meta-llama/Llama-3.1-8B", Some(Engine::Vllm)),
            ("/opt/venv/bin/vllm serve m", Some(Engine::Vllm)),
            (
                "python3 -m vllm.entrypoints.openai.api_server",
                Some(Engine::Vllm),
            ),
            ("uv run vllm serve m", Some(Engine::Vllm)),
            ("trtllm-serve m --tp_size 8", Some(Engine::Trtllm)),
            (
                "mpirun -n 8 trtllm-llmapi-launch python run.py",
                Some(Engine::Trtllm),
            ),
            (
                "python -m tensorrt_llm.commands.serve m",
                Some(Engine::Trtllm),
            ),
            (
                "python3 -m sglang.launch_server --model m",
                Some(Engine::Sglang),
            ),
            (
                "python3 -msglang.launch_server --model m",
                Some(Engine::Sglang),
            ),
            ("sglang serve --model m", Some(Engine::Sglang)),
            // Not the engines: a program named alike, a word that only mentions one.
            ("python train.py --model vllm", None),
            ("vllm bench throughput", None),
            ("python -m sglang.bench_serving", None),
            // Words, not substrings of paths; a shell's script; SGLang's router.
            ("python train.py --log-dir /data/tensorrt_llm_runs", None),
            ("python /opt/vllm_serve/train.py", None),
            ("bash -c vllm_serve_m", None),
            ("bash -lc cd_/w", None),
            (
                "python -m tensorrt_llm.commands.serve m",
                Some(Engine::Trtllm),
            ),
            (
                "python -m sglang_router.launch_server --model m",
                Some(Engine::Sglang),
            ),
            ("python train.py", None),
        ] {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(runs(&words), engine, "{line}");
        }
        for (argv, engine) in [
            (vec!["bash", "-c", "vllm serve m -tp 8"], Some(Engine::Vllm)),
            (
                vec!["sh", "-ec", "exec python3 -m sglang.launch_server"],
                Some(Engine::Sglang),
            ),
            (vec!["bash", "-c", "echo vllm"], None),
            (vec!["bash", "run.sh", "-c", "vllm serve m"], None),
        ] {
            assert_eq!(runs(&argv), engine, "{argv:?}");
        }
    }

    #[test]
    fn the_engines_own_binding_flags_are_said_under_its_name() {
        let vllm = ["vllm", "serve", "m", "--numa-bind", "--numa-bind-nodes=0,1"];
        let none = |_: &str| None;
        let said = command_warnings(Some(Engine::Vllm), &vllm, &none);
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].code, codes::W0224_ENGINE_OWN_BINDING);
        assert!(
            said[0]
                .message
                .contains("them (--numa-bind, --numa-bind-nodes)")
        );
        let sglang = ["python3", "-m", "sglang.launch_server", "--numa", "0"];
        assert_eq!(
            command_warnings(Some(Engine::Sglang), &sglang, &none).len(),
            1
        );
        // Without them, or a flag of the same name in another program: nothing.
        assert!(command_warnings(Some(Engine::Vllm), &["vllm", "serve", "m"], &none).is_empty());
        assert!(
            command_warnings(
                Some(Engine::Vllm),
                &["python", "x.py", "--numa-bind"],
                &none
            )
            .is_empty()
        );
        // Another engine than the spec's is W0220 alone.
        let other = command_warnings(Some(Engine::Sglang), &vllm, &none);
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].code, codes::W0220_ENGINE_UNSAID);
    }

    #[test]
    fn frameworks_that_bind_their_workers_are_said_with_their_switch() {
        let none = |_: &str| None;
        let off = |v: &str| (v == "NRL_DISABLE_NUMA_BINDING").then(|| "1".to_string());
        for (line, framework) in [
            ("uv run python -m nemo_rl.algorithms.grpo", Some("NeMo-RL")),
            (
                "uv run python /opt/nemo-rl/examples/run_grpo_math.py",
                Some("NeMo-RL"),
            ),
            ("python /src/nemo_rl/run.py", Some("NeMo-RL")),
            (
                "python3 -m areal.launcher.local examples/gsm8k.py",
                Some("AReaL"),
            ),
            (
                "python /work/AReaL/examples/math/gsm8k_rl.py",
                Some("AReaL"),
            ),
            // Words that only mention one.
            ("python train.py --out /data/areal_runs", None),
            ("python /home/me/RL/examples/train.py", None),
            ("python nemo_rl_notes.py", None),
        ] {
            let words: Vec<&str> = line.split(' ').collect();
            let said = command_warnings(None, &words, &none);
            let name = said.first().map(|w| {
                assert_eq!(w.code, codes::W0225_FRAMEWORK_BINDS);
                if w.message.contains("NeMo-RL") {
                    "NeMo-RL"
                } else {
                    "AReaL"
                }
            });
            assert_eq!(name, framework, "{line}");
        }
        let nemo = ["python", "-m", "nemo_rl.algorithms.grpo"];
        assert!(
            command_warnings(None, &nemo, &none)[0]
                .message
                .contains("NRL_DISABLE_NUMA_BINDING")
        );
        assert!(
            command_warnings(None, &nemo, &off).is_empty(),
            "turned off in env:"
        );
        let areal = ["python", "-m", "areal.launcher.local"];
        assert!(
            command_warnings(None, &areal, &off)[0]
                .message
                .contains("no switch")
        );
    }
}
