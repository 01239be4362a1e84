//! The README's example output is real: each `readme-excerpt` block must appear verbatim in the
//! output (stdout, then stderr) of the command named in its marker.

mod common;

use common::{numaplan, repo};

#[test]
fn readme_excerpts_match_real_output() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut checked = 0;
    for block in readme.split("<!-- readme-excerpt: ").skip(1) {
        let (command, rest) = block.split_once(" -->").unwrap();
        let body = rest.split("<!-- /readme-excerpt -->").next().unwrap();
        let excerpt = body
            .trim()
            .trim_start_matches("```text")
            .trim_end_matches("```")
            .trim_matches('\n');
        let args: Vec<&str> = command.split_whitespace().collect();
        let run = numaplan(&args);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(
            output.contains(excerpt),
            "README excerpt of `numaplan {command}` is stale:\n{excerpt}\n--- actual:\n{output}"
        );
        checked += 1;
    }
    assert!(checked >= 1);
}

#[test]
fn readme_lists_every_fixture() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for path in common::fixtures() {
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert!(
            readme.contains(&format!("`{stem}`")),
            "README does not list {stem}"
        );
    }
}

/// The README never calls an existing subcommand missing: every sentence that says something is
/// not implemented, not yet there or planned names no subcommand the binary has.
#[test]
fn readme_does_not_call_existing_subcommands_missing() {
    use clap::CommandFactory;
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let subcommands: Vec<String> = numaplan::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(subcommands.contains(&"exec".to_string()));
    let text = readme.replace('\n', " ");
    for sentence in text.split(". ") {
        let lower = sentence.to_lowercase();
        let says_missing = [
            "not implemented",
            "not yet",
            "unimplemented",
            "coming soon",
            "planned for",
            "open issues and",
        ]
        .iter()
        .any(|p| lower.contains(p));
        if !says_missing {
            continue;
        }
        for sub in &subcommands {
            for mention in [format!("`numaplan {sub}`"), format!("`{sub}`")] {
                assert!(
                    !sentence.contains(&mention),
                    "README calls `{sub}` missing, but it exists: {sentence}"
                );
            }
        }
    }
}

/// The README names the warning codes' range as the code has it: a new warning code must not
/// leave it behind.
#[test]
fn readme_names_the_current_warning_codes() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let range = numaplan::diag::codes::warning_range();
    assert!(
        readme.contains(&format!("`numaplan codes` lists {range}")),
        "README.md must say \"`numaplan codes` lists {range}\""
    );
    // Every warning code lies in the range (the table is in code order).
    let (first, last) = range.split_once(" to ").unwrap();
    for (code, _) in numaplan::diag::codes::ALL {
        let code = code.to_string();
        if code.starts_with('W') && code != "W0200" {
            assert!(
                first <= code.as_str() && code.as_str() <= last,
                "{code} not in {range}"
            );
        }
    }
}
