//! The command line, read once: a plain `numaplan bind` command line without clap, into the very
//! `Cli` clap would make of it, else clap itself.
//!
//! `bind` runs once per rank before the rank's program, where it replaces a shell trampoline
//! (`exec numactl --physcpubind=$LOCAL_RANK ...`), and clap's derive builds the whole command
//! tree (every subcommand, every argument and its help) before it reads one argument: 0.28 ms
//! of the 1.7 ms `bind` takes (BENCHMARKS.md). `fast_bind` reads the arguments a launcher
//! passes (the plan, `--local-rank`, `--topology`, `--set`, `--force`, `--verbose`,
//! `--dry-run`, `--format`, the global `-q`/`--quiet`, `--deny-warnings`, `--allow`,
//! `--message-format`, then `--` and the command) and declines anything else (help, an unknown
//! or repeated flag, a value clap would refuse), which clap then parses and reports exactly as
//! before. A test compares both on every form and on random command lines.

use std::ffi::{OsStr, OsString};

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{CommandFactory as _, FromArgMatches as _};

use crate::cli::{BindArgs, Cli, Command, EXIT_STATUSES, ReportFormat, SpecOverrides};
use crate::diag::render::MessageFormat;

/// The command line of this process, parsed; a usage error (`--help` and `--version` included,
/// which clap shows and exits on) is clap's, for `main` to show.
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = std::env::args_os().collect();
    match fast_bind(&args) {
        Some(cli) => Ok(cli),
        None => parse_from(args),
    }
}

/// `args` parsed by clap with `command()`, then checked for flags the subcommand does not use.
pub fn parse_from(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    if let Some(name) = matches.subcommand_name()
        && let Some(flag) = unused_warning_flag(&cli, name)
    {
        let sub = cmd
            .find_subcommand_mut(name)
            .expect("invariant: a parsed subcommand exists");
        return Err(sub.error(
            clap::error::ErrorKind::ArgumentConflict,
            format!(
                "`{flag}` does nothing for `numaplan {name}`: only `compile`, `exec` and `bind` show \
                 a plan's warnings"
            ),
        ));
    }
    Ok(cli)
}

/// Whether the command line asks for JSON diagnostics (`--message-format json` anywhere before
/// `--`): what a usage error is then shown as.
pub fn wants_json(args: &[OsString]) -> bool {
    let words: Vec<&OsStr> = args
        .iter()
        .map(OsString::as_os_str)
        .take_while(|w| *w != "--")
        .collect();
    words.iter().any(|w| *w == "--message-format=json")
        || words
            .windows(2)
            .any(|w| w[0] == "--message-format" && w[1] == "json")
}

/// The subcommands that show a plan's warnings, and so take `-q`, `--deny-warnings` and
/// `--allow` (global flags, which clap offers everywhere: hidden and refused elsewhere).
const WARNING_COMMANDS: [&str; 3] = ["compile", "exec", "bind"];
const WARNING_FLAGS: [(&str, &str); 3] = [
    ("quiet", "--quiet"),
    ("deny_warnings", "--deny-warnings"),
    ("allow", "--allow"),
];

/// The first warning flag given to subcommand `name` that does not show a plan's warnings.
fn unused_warning_flag(cli: &Cli, name: &str) -> Option<&'static str> {
    if WARNING_COMMANDS.contains(&name) {
        return None;
    }
    let given = [cli.quiet, cli.deny_warnings, !cli.allow.is_empty()];
    WARNING_FLAGS
        .iter()
        .zip(given)
        .find_map(|((_, flag), given)| given.then_some(*flag))
}

/// clap's command as the binary uses it: the exit statuses after `--help`, and the warning
/// flags hidden where they mean nothing.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command().after_long_help(exit_status_text());
    // A subcommand's own (hidden) copy of a global flag stands in for the global one.
    let hidden: Vec<clap::Arg> = warning_flags(&cmd)
        .into_iter()
        .map(|a| a.hide(true))
        .collect();
    // Every subcommand in turn, which keeps their order (`mut_subcommand` moves one last).
    for name in subcommand_names(&cmd) {
        let hide = !WARNING_COMMANDS.contains(&name.as_str());
        cmd = cmd.mut_subcommand(&name, |sub| match hide {
            true => sub.args(hidden.iter().cloned()),
            false => sub,
        });
    }
    cmd
}

/// The command shell completion is generated from: the warning flags offered only by the
/// subcommands that take them (completion scripts list hidden flags too), and the words to
/// complete: the spec's keys for `--set`, the codes for `codes` and `--allow` (file arguments
/// have their hint in `cli/`). The words change no parsing, so `command()` goes without them.
pub fn completion_command() -> clap::Command {
    let mut cmd = Cli::command().mut_arg("allow", |a| {
        a.value_parser(Offered::new(codes(true), crate::diag::codes::warning_code))
            .hide_possible_values(true)
    });
    // `gpu`, the one word these take besides a number (not a file name).
    cmd = cmd
        .mut_subcommand("exec", |sub| {
            sub.mut_arg("nproc_per_node", |a| {
                a.value_parser(Offered::new(vec!["gpu".into()], crate::cli::nproc_per_node))
                    .value_hint(clap::ValueHint::Other)
            })
        })
        .mut_subcommand("bind", |sub| {
            sub.mut_arg("local_rank", |a| {
                let parse = |s: &str| s.parse::<crate::rank::LocalRankChoice>();
                a.value_parser(Offered::new(vec!["gpu".into()], parse))
                    .value_hint(clap::ValueHint::Other)
            })
        });
    let flags: Vec<clap::Arg> = warning_flags(&cmd)
        .into_iter()
        .map(|a| a.global(false))
        .collect();
    for (id, _) in WARNING_FLAGS {
        cmd = cmd.mut_arg(id, |a| a.global(false));
    }
    let keys = spec_keys();
    for name in subcommand_names(&cmd) {
        let takes = WARNING_COMMANDS.contains(&name.as_str());
        cmd = cmd.mut_subcommand(&name, |mut sub| {
            if takes {
                sub = sub.args(flags.iter().cloned());
            }
            offer_words(sub, &keys)
        });
    }
    cmd
}

fn warning_flags(cmd: &clap::Command) -> Vec<clap::Arg> {
    cmd.get_arguments()
        .filter(|a| WARNING_FLAGS.iter().any(|(id, _)| a.get_id() == *id))
        .cloned()
        .collect()
}

fn subcommand_names(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

/// `--set` completes the spec's `keys`, `codes CODE` the codes.
fn offer_words(mut sub: clap::Command, keys: &[String]) -> clap::Command {
    let has = |sub: &clap::Command, id: &str| sub.get_arguments().any(|a| a.get_id() == id);
    if has(&sub, "set") {
        sub = sub.mut_arg("set", |a| {
            a.value_parser(Offered::new(keys.to_vec(), crate::cli::key_value))
                .hide_possible_values(true)
        });
    }
    if has(&sub, "code") {
        let any_text = |s: &str| Ok::<_, std::convert::Infallible>(s.to_string());
        sub = sub.mut_arg("code", |a| {
            a.value_parser(Offered::new(codes(false), any_text))
                .hide_possible_values(true)
        });
    }
    sub
}

/// The job spec's keys as `--set` takes them (`cpu.policy=`), from its JSON schema, and for a
/// key of fixed words each `key=word` (`cpu.policy=exclusive`); a mapping of free keys as
/// `env.`.
fn spec_keys() -> Vec<String> {
    let schema = serde_json::to_value(schemars::schema_for!(crate::spec::raw::JobSpec))
        .expect("invariant: a schema is JSON");
    let keys = crate::diag::schema_words::keys(&schema);
    let free = |key: &str| keys.iter().any(|k| k.strip_suffix('.') == Some(key));
    let mut offered = Vec::new();
    for k in keys.iter().filter(|k| k.ends_with('.') || !free(k)) {
        if k.ends_with('.') {
            offered.push(k.clone());
            continue;
        }
        offered.push(format!("{k}="));
        let words = crate::diag::schema_words::words_at(&schema, k);
        offered.extend(words.iter().map(|w| format!("{k}={w}")));
    }
    offered
}

/// Every code (`warnings`: the warning kinds only, which `--allow` takes: not W0200, the
/// stand-in for an old plan's warning without a code).
fn codes(warnings: bool) -> Vec<String> {
    let plain = crate::diag::codes::W0200_PLAN_WARNING.to_string();
    crate::diag::codes::ALL
        .iter()
        .map(|(c, _)| c.to_string())
        .filter(|c| !warnings || (c.starts_with('W') && *c != plain))
        .collect()
}

/// A value parser that offers `words` to shell completion and parses with `inner` (which
/// alone decides what is valid: a word need not be one of them).
#[derive(Clone)]
struct Offered<P> {
    words: Vec<&'static str>,
    inner: P,
}

impl<P> Offered<P> {
    fn new(words: Vec<String>, inner: P) -> Self {
        // Built once, by `numaplan completions`, for clap's `'static` words.
        let words = words
            .into_iter()
            .map(|w| &*Box::leak(w.into_boxed_str()))
            .collect();
        Offered { words, inner }
    }
}

impl<P: TypedValueParser> TypedValueParser for Offered<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Self::Value, clap::Error> {
        self.inner.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.words.iter().map(|w| PossibleValue::new(*w))))
    }
}

/// The exit statuses as `--help` and the README show them: a two-column list, wrapped at 100.
pub fn exit_status_text() -> String {
    let mut out = String::from("Exit status:");
    for (status, meaning) in EXIT_STATUSES {
        let mut line = format!("\n  {status:<6}");
        for word in meaning.split_whitespace() {
            if line.len() + 1 + word.len() > 100 {
                out.push_str(line.trim_end());
                line = format!("\n{:8}", "");
            } else if !line.ends_with(' ') {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
    }
    out
}

/// A plain `bind` command line as clap would parse it, or `None` for clap to parse.
pub fn fast_bind(args: &[OsString]) -> Option<Cli> {
    let mut globals = Globals::default();
    let mut rest = args.iter().skip(1);
    // Global options, then the subcommand.
    loop {
        let word = rest.next()?.to_str()?;
        if word == "bind" {
            break;
        }
        globals.take(word, &mut rest)?;
    }
    globals.allowed_before_bind = !globals.allow.is_empty();
    let mut bind = BindWords::default();
    while let Some(word) = rest.next() {
        let word = word.to_str()?;
        if word == "--" {
            bind.command = Some(rest.cloned().collect());
            break;
        }
        if globals.take(word, &mut rest).is_some() {
            continue;
        }
        bind.take(word, &mut rest)?;
    }
    let args = bind.finish()?;
    Some(Cli {
        version: false,
        verbose: false,
        message_format: globals.message_format.unwrap_or(MessageFormat::Human),
        quiet: globals.quiet,
        deny_warnings: globals.deny_warnings,
        allow: globals.allow,
        command: Some(Command::Bind(args)),
    })
}

/// `--name value` or `--name=value`: the value, when `word` is that option and the value is a
/// word clap would take as one (not another option).
fn value<'a>(
    word: &'a str,
    name: &str,
    rest: &mut dyn Iterator<Item = &'a OsString>,
) -> Option<Option<&'a str>> {
    let Some(tail) = word.strip_prefix(name) else {
        return Some(None);
    };
    let value = match tail.strip_prefix('=') {
        Some(v) => v,
        None if tail.is_empty() => rest.next()?.to_str()?,
        None => return Some(None),
    };
    (!value.starts_with('-')).then_some(Some(value))
}

/// The global options, each at most once.
#[derive(Default)]
struct Globals {
    quiet: bool,
    deny_warnings: bool,
    allow: Vec<crate::diag::Code>,
    message_format: Option<MessageFormat>,
    /// `--allow` came before the word `bind`: clap lets one given after the subcommand replace
    /// those values, which the fast path leaves to clap.
    allowed_before_bind: bool,
}

impl Globals {
    /// Takes `word` (and its value) when it is a global option; `None` when it is not one, or is
    /// one given twice.
    fn take<'a>(
        &mut self,
        word: &'a str,
        rest: &mut dyn Iterator<Item = &'a OsString>,
    ) -> Option<()> {
        match word {
            "-q" | "--quiet" if !self.quiet => self.quiet = true,
            "--deny-warnings" if !self.deny_warnings => self.deny_warnings = true,
            w if w.starts_with("--allow") && !self.allowed_before_bind => {
                let code = value(w, "--allow", rest)??;
                self.allow
                    .push(crate::diag::codes::warning_code(code).ok()?);
            }
            _ if self.message_format.is_none() => {
                let format = value(word, "--message-format", rest)??;
                self.message_format = Some(match format {
                    "human" => MessageFormat::Human,
                    "json" => MessageFormat::Json,
                    _ => return None,
                });
            }
            _ => return None,
        }
        Some(())
    }
}

/// `bind`'s own arguments as read so far.
#[derive(Default)]
struct BindWords {
    input: Option<String>,
    local_rank: Option<crate::rank::LocalRankChoice>,
    group: Option<String>,
    topology: Option<String>,
    set: Vec<crate::yaml::Override>,
    force: bool,
    verbose: bool,
    dry_run: bool,
    format: Option<ReportFormat>,
    command: Option<Vec<OsString>>,
}

impl BindWords {
    /// Takes `word` (and its value); `None` for anything clap should see.
    fn take<'a>(
        &mut self,
        word: &'a str,
        rest: &mut dyn Iterator<Item = &'a OsString>,
    ) -> Option<()> {
        match word {
            "--force" if !self.force => self.force = true,
            "--verbose" | "-v" if !self.verbose => self.verbose = true,
            "--dry-run" if !self.dry_run => self.dry_run = true,
            w if !w.starts_with('-') && self.input.is_none() => self.input = Some(w.to_string()),
            w if w.starts_with("--local-rank") && self.local_rank.is_none() => {
                self.local_rank = Some(value(w, "--local-rank", rest)??.parse().ok()?);
            }
            w if w.starts_with("--topology") && self.topology.is_none() => {
                self.topology = Some(value(w, "--topology", rest)??.to_string());
            }
            w if w.starts_with("--group") && self.group.is_none() => {
                self.group = Some(value(w, "--group", rest)??.to_string());
            }
            w if w.starts_with("--set") => {
                let pair = value(w, "--set", rest)??;
                match pair.split_once('=') {
                    Some((key, value)) if !key.is_empty() => {
                        self.set.push(crate::yaml::Override::set(key, value));
                    }
                    _ => return None,
                }
            }
            w if w.starts_with("--format") && self.format.is_none() => {
                self.format = Some(match value(w, "--format", rest)?? {
                    "text" => ReportFormat::Text,
                    "json" => ReportFormat::Json,
                    _ => return None,
                });
            }
            _ => return None,
        }
        Some(())
    }

    /// The arguments, when clap would accept them: an input, and `--format` only with
    /// `--dry-run`.
    fn finish(self) -> Option<BindArgs> {
        if self.format.is_some() && !self.dry_run {
            return None;
        }
        Some(BindArgs {
            input: self.input?,
            local_rank: self.local_rank,
            group: self.group,
            topology: self.topology.as_deref().map(crate::topology::Source::named),
            overrides: SpecOverrides { set: self.set },
            force: self.force,
            all_ranks: false,
            verbose: self.verbose,
            dry_run: self.dry_run,
            format: self.format.unwrap_or(ReportFormat::Text),
            command: self.command.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &[&str]) -> Vec<OsString> {
        std::iter::once("numaplan")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// The fast path either declines or agrees with clap, field for field.
    fn agrees(line: &[&str]) -> bool {
        let args = words(line);
        let fast = fast_bind(&args);
        let clap = parse_from(args.clone());
        match (&fast, &clap) {
            (None, _) => false,
            (Some(f), Ok(c)) => {
                assert_eq!(format!("{f:?}"), format!("{c:?}"), "{line:?}");
                true
            }
            (Some(f), Err(e)) => panic!("{line:?}: fast path took {f:?}, clap refused: {e}"),
        }
    }

    #[test]
    fn plain_bind_lines_take_the_fast_path_and_agree_with_clap() {
        for line in [
            &["bind", "plan.yaml"][..],
            &["-q", "bind", "plan.yaml", "--", "python", "-c", "--x"],
            &["bind", "--local-rank", "3", "plan.yaml"],
            &[
                "bind",
                "--local-rank=gpu",
                "env:NUMAPLAN_PLAN",
                "--force",
                "-v",
                "--",
                "true",
            ],
            &[
                "--deny-warnings",
                "--message-format",
                "json",
                "--allow",
                "w0203",
                "bind",
                "p.yaml",
                "--dry-run",
                "--format",
                "json",
            ],
            &[
                "bind",
                "p.yaml",
                "--set",
                "cpu.policy=exclusive",
                "--set=env.A=b=c",
                "--topology",
                "t.yaml",
                "--group=trainer",
            ],
            &[
                "bind",
                "p.yaml",
                "-q",
                "--message-format=human",
                "--verbose",
                "--dry-run",
            ],
            &["bind", "p.yaml", "--allow=W0215", "--allow", "w0204"],
            &["bind", "--", "p.yaml"],
        ] {
            let fast = fast_bind(&words(line)).is_some();
            // `bind -- p.yaml` has no input: clap refuses it, and so does the fast path.
            assert_eq!(fast, line != ["bind", "--", "p.yaml"], "{line:?}");
            if fast {
                assert!(agrees(line));
            }
        }
    }

    #[test]
    fn anything_else_is_left_to_clap() {
        for line in [
            &["bind"][..],
            &["bind", "--help"],
            &["bind", "-h", "p.yaml"],
            &["bind", "p.yaml", "--format", "json"],
            &["bind", "p.yaml", "--local-rank", "first"],
            &["bind", "p.yaml", "--local-rank", "-1"],
            &["bind", "p.yaml", "--force", "--force"],
            &["bind", "p.yaml", "q.yaml"],
            &["bind", "p.yaml", "--set", "novalue"],
            &["bind", "p.yaml", "--topology"],
            &["bind", "p.yaml", "--topology", "--force"],
            &["bind", "p.yaml", "-vq"],
            &["--verbose", "bind", "p.yaml"],
            &["compile", "p.yaml"],
            &["bind", "p.yaml", "--message-format", "xml"],
            &["bind", "p.yaml", "--dry-run", "--format", "yaml"],
            &["bind", "p.yaml", "--unknown"],
            &["bind", "p.yaml", "--allow", "E0201"],
            &["--allow", "W0203", "bind", "p.yaml", "--allow", "W0204"],
            &["bind", "p.yaml", "--allow", "W9999"],
            &["--version"],
        ] {
            assert!(fast_bind(&words(line)).is_none(), "{line:?}");
        }
    }

    proptest::proptest! {
        // One line in eight or so is one the fast path takes.
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Random command lines from bind's words: whenever the fast path takes one, clap
        /// parses it to the same `Cli`.
        #[test]
        fn random_lines_agree_with_clap(picks in proptest::collection::vec(0usize..29, 0..9)) {
            const WORDS: [&str; 29] = [
                "bind", "plan.yaml", "other.yaml", "--local-rank", "2", "gpu", "--local-rank=1",
                "--topology", "t.yaml", "--set", "a=b", "--set=c=d", "--force", "-v", "--verbose",
                "--dry-run", "--format", "json", "--format=text", "-q", "--quiet",
                "--deny-warnings", "--message-format=json", "--allow", "W0215", "--",
                "--group", "trainer", "--group=rollout",
            ];
            let mut line = vec!["bind"];
            line.extend(picks.iter().map(|&i| WORDS[i]));
            agrees(&line);
        }
    }
}
