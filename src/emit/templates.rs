//! The embedded templates and the minijinja environment that renders them: strict undefined
//! variables, trailing newlines kept, and the `sh` filter, through which every interpolated
//! value passes (the `comment` filter, for text in `#` comment lines).

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior};

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
    env.add_filter("sh", sh);
    env.add_filter("comment", comment);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .expect("invariant: embedded templates parse (a test renders each)");
    }
    env
}

/// Quotes a value for bash: single quotes, with `'` written as `'\''`. Safe for spaces, `$`,
/// backticks, globs, newlines and any UTF-8.
pub fn sh(value: String) -> String {
    // Plain words stay readable; `=` only where shellcheck cannot mistake it for `==`.
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:,+@%=".contains(&b))
        && !value.starts_with('=')
        && !value.contains("==");
    if plain {
        return value;
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// Text for a `#` comment line: control characters (a newline would end the comment and start
/// a command) become spaces.
pub fn comment(value: String) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{comment, sh};

    #[test]
    fn comments_stay_on_their_line() {
        assert_eq!(comment("a\nrm -rf /\r\tb".into()), "a rm -rf /  b");
    }

    #[test]
    fn quoting() {
        assert_eq!(sh("plain-1.0".into()), "plain-1.0");
        assert_eq!(sh("=hsn0".into()), "'=hsn0'");
        assert_eq!(sh("RANK=0".into()), "RANK=0");
        assert_eq!(
            sh("NCCL_SOCKET_IFNAME==hsn0".into()),
            "'NCCL_SOCKET_IFNAME==hsn0'"
        );
        assert_eq!(sh("".into()), "''");
        assert_eq!(sh("a b".into()), "'a b'");
        assert_eq!(sh("it's".into()), r"'it'\''s'");
        assert_eq!(sh("$(touch pwned)`x`*".into()), "'$(touch pwned)`x`*'");
    }
}
