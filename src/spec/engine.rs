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
                 they all run on that rank's CPUs (and with `--numa-bind` it binds them to \
                 NVML's node of each GPU instead)"
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

/// The serving engine a command line runs, where it is one numaplan knows: `vllm serve`,
/// `python -m vllm.entrypoints...`, `trtllm-serve`, `trtllm-llmapi-launch`, anything naming
/// `tensorrt_llm`, `python -m sglang.launch_server` and `sglang serve`, anywhere in the line
/// (behind `uv run`, `numactl ...` or another wrapper).
pub fn runs<S: AsRef<str>>(argv: &[S]) -> Option<Engine> {
    let words: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    words.iter().enumerate().find_map(|(i, w)| {
        let next = words.get(i + 1).copied().unwrap_or("");
        let module = match *w {
            "-m" => next,
            _ => w.strip_prefix("-m").unwrap_or(""),
        };
        match (base(w).as_str(), next) {
            ("vllm", "serve") => Some(Engine::Vllm),
            ("sglang", "serve") => Some(Engine::Sglang),
            ("trtllm-serve" | "trtllm-llmapi-launch", _) => Some(Engine::Trtllm),
            _ if module.starts_with("vllm.entrypoints") => Some(Engine::Vllm),
            _ if module == "sglang.launch_server" => Some(Engine::Sglang),
            _ if w.contains("tensorrt_llm") => Some(Engine::Trtllm),
            _ => None,
        }
    })
}

/// W0220 where `argv` runs a serving engine the spec does not name (`engine`: what it names).
pub fn unsaid<S: AsRef<str>>(engine: Option<Engine>, argv: &[S]) -> Option<Warning> {
    let runs = runs(argv)?;
    let said = match engine {
        Some(e) if e == runs => return None,
        Some(e) => format!("the spec says `engine: {}`", e.word()),
        None => "the spec has no `engine:`".to_string(),
    };
    Some(Warning::new(
        codes::W0220_ENGINE_UNSAID,
        format!(
            "the command runs {}, and {said}: {}; add `engine: {}` to the spec",
            runs.title(),
            runs.own_binding(),
            runs.word()
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
            ("python train.py", None),
        ] {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(runs(&words), engine, "{line}");
        }
    }
}
