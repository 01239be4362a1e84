//! The embedded templates and the minijinja environment that renders them: strict undefined
//! variables, trailing newlines kept, and the `sh` filter (`shell::quote`), through which every
//! interpolated value passes (the `comment` filter, for text in `#` comment lines).

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior};

use crate::shell;

/// Every file of `templates/`, embedded in the binary. A test fails when a file is missing here.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("bash.sh.j2", include_str!("../../templates/bash.sh.j2")),
    (
        "check-node.sh.j2",
        include_str!("../../templates/check-node.sh.j2"),
    ),
    (
        "embedded-plan.sh.j2",
        include_str!("../../templates/embedded-plan.sh.j2"),
    ),
    ("mpirun.sh.j2", include_str!("../../templates/mpirun.sh.j2")),
    (
        "provenance.j2",
        include_str!("../../templates/provenance.j2"),
    ),
    (
        "sbatch-macros.j2",
        include_str!("../../templates/sbatch-macros.j2"),
    ),
    (
        "sbatch-header.j2",
        include_str!("../../templates/sbatch-header.j2"),
    ),
    (
        "slurm-exec.sbatch.j2",
        include_str!("../../templates/slurm-exec.sbatch.j2"),
    ),
    (
        "slurm.sbatch.j2",
        include_str!("../../templates/slurm.sbatch.j2"),
    ),
    (
        "torchrun.sh.j2",
        include_str!("../../templates/torchrun.sh.j2"),
    ),
    ("vllm.sh.j2", include_str!("../../templates/vllm.sh.j2")),
    ("flux.sh.j2", include_str!("../../templates/flux.sh.j2")),
    (
        "prelude.sh.j2",
        include_str!("../../templates/prelude.sh.j2"),
    ),
    ("sglang.sh.j2", include_str!("../../templates/sglang.sh.j2")),
    ("engine.sh.j2", include_str!("../../templates/engine.sh.j2")),
];

pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("invariant: the default delimiters are valid"),
    );
    env.add_filter("sh", shell::quote);
    env.add_filter("comment", shell::comment);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .expect("invariant: embedded templates parse (a test renders each)");
    }
    env
}
