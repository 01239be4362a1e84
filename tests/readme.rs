//! The README's and the user guide's (`docs/*.md`) example output is real: each
//! `readme-excerpt` block must appear verbatim in the output (stdout, then stderr) of the
//! command named in its marker; and what they say stays true of the binary.

mod common;

use common::{numaplan, repo};

/// The README and every chapter of the user guide, with their paths.
fn documents() -> Vec<(String, String)> {
    let mut docs = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(repo().join("README.md")).unwrap(),
    )];
    let mut guide: Vec<_> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    for p in guide {
        let name = p.strip_prefix(repo()).unwrap().display().to_string();
        docs.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    docs
}

#[test]
fn readme_excerpts_match_real_output() {
    let readme: String = documents().into_iter().map(|(_, text)| text).collect();
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
fn the_guide_lists_every_fixture() {
    let fixtures = std::fs::read_to_string(repo().join("docs/fixtures.md")).unwrap();
    for path in common::fixtures() {
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert!(
            fixtures.contains(&format!("`{stem}`")),
            "docs/fixtures.md does not list {stem}"
        );
    }
}

/// The README never calls an existing subcommand missing: every sentence that says something is
/// not implemented, not yet there or planned names no subcommand the binary has.
#[test]
fn readme_does_not_call_existing_subcommands_missing() {
    use clap::CommandFactory;
    let readme: String = documents().into_iter().map(|(_, text)| text).collect();
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

/// Every relative link of the README and the guide leads to a file of the repository, and a
/// link to a heading (`policies.md#inside-a-rank`) to a heading of that file.
#[test]
fn every_link_of_the_documents_leads_somewhere() {
    let mut checked = 0;
    for (name, text) in documents() {
        let dir = repo().join(&name).parent().unwrap().to_path_buf();
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap();
            if target.contains("://") || target.starts_with('#') {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = dir.join(file);
            assert!(
                path.exists(),
                "{name} links to {target}, which is not there"
            );
            if !anchor.is_empty() {
                let headings: Vec<String> = std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(|l| github_anchor(l.trim_start_matches('#').trim()))
                    .collect();
                assert!(
                    headings.iter().any(|h| h == anchor),
                    "{name} links to {target}: no such heading in {headings:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, punctuation but `-` and `_`
/// left out.
fn github_anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every document the code, its messages, the templates, the schemas and the Python package
/// name (`docs/policies.md, "Options a policy ignores"`, `BENCHMARKS.md`) is in the repository,
/// and a quoted section after it is a heading there: users never see the developers' notes.
#[test]
fn every_document_the_code_names_exists() {
    let mut sources = Vec::new();
    for dir in ["src", "templates", "schemas", "python"] {
        collect(&repo().join(dir), &mut sources);
    }
    let mut checked = 0;
    for path in sources {
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices(".md") {
            let start = text[..at]
                .rfind(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.')))
                .map_or(0, |i| i + 1);
            let name = &text[start..at + 3];
            if name.starts_with('.') || name.contains("://") {
                continue;
            }
            let file = repo().join(name);
            assert!(
                file.is_file(),
                "{} names {name}, which is not in the repository",
                path.display()
            );
            // `docs/x.md, "Section"` (in a Rust string, `\"Section\"`): a heading of the file.
            let after = text[at + 3..]
                .trim_start_matches([',', ' '])
                .replace("\\\"", "\"");
            if let Some(quoted) = after.strip_prefix('"') {
                // A Rust string may go on on the next line (a `\\`, then the line's indent).
                let section = quoted.split('"').next().unwrap().replace('\\', " ");
                let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
                let headings = std::fs::read_to_string(&file).unwrap();
                assert!(
                    headings
                        .lines()
                        .any(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == section),
                    "{} names {name}, \"{section}\": no such heading",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["rs", "j2", "json", "py", "md"].contains(&x.to_str().unwrap()))
        {
            out.push(p);
        }
    }
}

/// ARCHITECTURE.md's code map names files and folders that exist: each backquoted path with a
/// `/` in it, from the repository's root or within one of its folders (`app/input/spec.rs`,
/// `verify/` in its module's paragraph, `common/mod.rs` among the tests). A file moved or renamed without the map following fails here.
#[test]
fn architecture_md_names_paths_that_exist() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            if e.path().is_dir() {
                out.push(format!("{rel}{name}/"));
                walk(&e.path(), &format!("{rel}{name}/"), out);
            } else {
                out.push(format!("{rel}{name}"));
            }
        }
    }
    let mut under_src = Vec::new();
    for dir in ["src", "tests", "python", "templates", "scripts", "benches"] {
        walk(&repo().join(dir), &format!("{dir}/"), &mut under_src);
    }
    let mut checked = 0;
    for (i, quoted) in doc.split('`').enumerate() {
        let looks_like_path = i % 2 == 1
            && quoted.contains('/')
            && !quoted.contains([' ', ':', '*', '<', '(', '-'])
            && quoted
                .rsplit('/')
                .next()
                .is_some_and(|last| last.is_empty() || last.contains('.'));
        if !looks_like_path {
            continue;
        }
        let found = repo().join(quoted).exists()
            || under_src
                .iter()
                .any(|p| p == quoted || p.ends_with(&format!("/{quoted}")));
        assert!(
            found,
            "ARCHITECTURE.md names `{quoted}`, which does not exist"
        );
        checked += 1;
    }
    assert!(checked >= 20, "{checked}");
}

/// The guide's index (docs/README.md) lists every chapter of docs/.
#[test]
fn the_guide_index_lists_every_chapter() {
    let index = std::fs::read_to_string(repo().join("docs/README.md")).unwrap();
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") && name != "README.md" {
            assert!(
                index.contains(&format!("]({name})")),
                "docs/README.md does not list {name}"
            );
        }
    }
}

/// No paragraph of the README or the guide starts with stray punctuation (an edit once cut the
/// first words of five paragraphs, leaving `, for any vendor's GPUs, ...`).
#[test]
fn no_paragraph_starts_with_punctuation() {
    let mut files = vec![repo().join("README.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let (mut code, mut previous) = (false, "");
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                code = !code;
            }
            let starts_cut = line.starts_with([',', ';', ':', '.', ')']);
            assert!(
                code || !previous.trim().is_empty() || !starts_cut,
                "{}:{}: a paragraph starts with `{line}`",
                file.display(),
                i + 1
            );
            previous = line;
        }
    }
}
