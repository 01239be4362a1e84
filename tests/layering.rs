//! The crate's layering, as ARCHITECTURE.md's "Layers" table states it: each top-level module
//! imports only the modules the table allows, the table itself has no cycle, no two files import
//! each other (directly or around a longer circle, `mod.rs` re-exports followed to the file that
//! defines the item), and every module file starts with its `//!` doc.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module -> the modules it may import (beside itself). The foundation (`cpuset`, `ids`,
/// `nic_kind`, `pci_addr`, `phrase`, `shell`, `text`, `output`, `variables`) is open to every
/// module.
const LAYERS: &[(&str, &[&str])] = &[
    ("sys", &[]),
    ("diag", &[]),
    ("provenance", &[]),
    ("yaml", &["diag"]),
    ("topology", &["sys", "yaml", "diag"]),
    ("spec", &["topology", "yaml", "diag"]),
    ("plan", &["spec", "diag"]),
    ("resolve", &["plan", "spec", "topology", "diag"]),
    ("plan_file", &["provenance", "plan", "spec", "yaml", "diag"]),
    ("emit", &["provenance", "plan", "spec", "topology", "diag"]),
    ("rank", &["plan", "diag"]),
    ("observe", &["rank", "plan", "spec", "sys"]),
    ("exec", &["plan", "spec", "sys"]),
    ("review", &["plan", "resolve", "spec", "topology"]),
    ("cli", &["rank", "emit", "topology", "yaml", "diag"]),
    ("argv", &["cli", "rank", "spec", "topology", "yaml", "diag"]),
    (
        "error",
        &[
            "exec",
            "rank",
            "observe",
            "emit",
            "plan_file",
            "resolve",
            "spec",
            "topology",
            "yaml",
            "diag",
        ],
    ),
    (
        "app",
        &[
            "argv",
            "cli",
            "error",
            "review",
            "exec",
            "observe",
            "rank",
            "emit",
            "plan_file",
            "provenance",
            "resolve",
            "plan",
            "spec",
            "topology",
            "yaml",
            "sys",
            "diag",
        ],
    ),
];

const FOUNDATION: &[&str] = &[
    "cpuset",
    "ids",
    "nic_kind",
    "pci_addr",
    "phrase",
    "shell",
    "text",
    "output",
    "variables",
];

/// Every `.rs` file under `src/`, by its module path (`exec::job`; `exec` for `exec/mod.rs`),
/// with its text up to its unit tests.
fn modules() -> BTreeMap<Vec<String>, (String, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = common::repo().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_str().unwrap().to_string();
            let mut path: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(String::from)
                .collect();
            if path
                .last()
                .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
            {
                path.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = match text.find("#[cfg(test)]") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            (path, (format!("src/{rel}"), code))
        })
        .collect()
}

/// The code without comments (doc links name paths, but are no imports).
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a `use` declaration names, its braces expanded: `use a::{b, c::{d}}` gives
/// `a::b` and `a::c::d` (an `as` rename and `self` in braces are read as what they name).
fn use_paths(code: &str) -> Vec<Vec<String>> {
    use_decls(code)
        .into_iter()
        .flat_map(|(_, paths)| paths)
        .collect()
}

/// Each `use` declaration's paths, and whether it is a re-export (`pub use`, `pub(crate) use`).
fn use_decls(code: &str) -> Vec<(bool, Vec<Vec<String>>)> {
    use_spans(code)
        .into_iter()
        .map(|(reexport, at, end)| {
            let tree: String = code[at + 4..end]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let mut paths = Vec::new();
            expand(&tree, &mut Vec::new(), &mut paths);
            (reexport, paths)
        })
        .collect()
}

/// The code with its `use` declarations left out (the paths written in the code itself).
fn without_uses(code: &str) -> String {
    let mut out = String::new();
    let mut from = 0;
    for (_, at, end) in use_spans(code) {
        out.push_str(&code[from..at]);
        from = end;
    }
    out.push_str(&code[from..]);
    out
}

/// Where each `use` declaration starts (at `use`) and ends (at its `;`), and whether it is a
/// re-export.
fn use_spans(code: &str) -> Vec<(bool, usize, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end();
        let starts = before.is_empty()
            || before.ends_with(';')
            || before.ends_with('}')
            || before.ends_with('{')
            || before.ends_with(')')
            || before.ends_with("pub");
        if !starts {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            continue;
        };
        let reexport = before.ends_with("pub")
            || (before.ends_with(')')
                && before
                    .rfind("pub(")
                    .is_some_and(|p| !before[p..].contains([';', '{', '}'])));
        out.push((reexport, at, at + end));
    }
    out
}

fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree.find('{') {
        Some(open) if tree.ends_with('}') => {
            let head: Vec<String> = tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let n = prefix.len();
            prefix.extend(head);
            for item in split_top(&tree[open + 1..tree.len() - 1]) {
                expand(item, prefix, out);
            }
            prefix.truncate(n);
        }
        _ => {
            let name = tree.split(" as ").next().unwrap_or(tree);
            let name = name.split("as").next().unwrap_or(name);
            let mut path = prefix.clone();
            path.extend(
                name.split("::")
                    .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                    .map(String::from),
            );
            out.push(path);
        }
    }
}

/// Splits `a, b::{c, d}, e` at its top-level commas.
fn split_top(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

/// The path written at `at` (`crate::a::b`, up to the first character no path holds); `None`
/// where it ends in `::`, a use tree's head (`crate::a::{b, c}`), which `use_paths` reads.
fn path_written_at(code: &str, at: usize) -> Option<&str> {
    let written = code[at..]
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .next()
        .unwrap_or("");
    (!written.ends_with("::")).then_some(written)
}

/// Paths written out in code: `crate::a::b`, `super::a`, outside `use` declarations too.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for root in ["crate::", "super::"] {
        for (at, _) in code.match_indices(root) {
            let prev = code[..at].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // `pub(in crate::topology)` is a visibility, not an import.
            if code[..at].ends_with("(in ") {
                continue;
            }
            // `crate::a::{b, c}` is a use tree: `use_paths` reads it.
            let Some(written) = path_written_at(code, at) else {
                continue;
            };
            let path: Vec<String> = written
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            out.push(path);
        }
    }
    out
}

/// Where a path written in module `at` leads: the module path of the file that holds its item,
/// following `pub use` re-exports of a `mod.rs`. `None` for paths outside the crate.
fn resolve(
    at: &[String],
    path: &[String],
    modules: &BTreeMap<Vec<String>, (String, String)>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    depth: usize,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut module, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "super" => {
            let mut m = at.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                m.pop();
                rest = &rest[1..];
            }
            (m, rest)
        }
        "self" => (at.to_vec(), &path[1..]),
        child => {
            let mut m = at.to_vec();
            m.push(child.to_string());
            if !modules.contains_key(&m) {
                return None; // std, an outside crate, or a local item
            }
            (at.to_vec(), path)
        }
    };
    for (i, seg) in rest.iter().enumerate() {
        let mut next = module.clone();
        next.push(seg.clone());
        if modules.contains_key(&next) {
            module = next;
            continue;
        }
        // An item of `module`: defined there, or re-exported from a child.
        if depth < 8
            && let Some(target) = reexports.get(&module).and_then(|r| r.get(seg))
        {
            let mut followed = target.clone();
            followed.extend(rest[i + 1..].iter().cloned());
            let mut from = module.clone();
            from.insert(0, "crate".into());
            let mut absolute = vec!["crate".to_string()];
            absolute.extend(followed);
            return resolve(&[], &absolute, modules, reexports, depth + 1);
        }
        break;
    }
    Some(module)
}

/// The names each module re-exports with `pub use`, and the absolute path each stands for.
fn reexports(
    modules: &BTreeMap<Vec<String>, (String, String)>,
) -> BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> {
    let mut all = BTreeMap::new();
    for (path, (_, code)) in modules {
        let code = without_comments(code);
        let mut names = BTreeMap::new();
        for line in code.split(';') {
            let line = line.trim();
            let public = line.starts_with("pub use ")
                || (line.starts_with("pub(") && line.contains(") use "));
            if !public {
                continue;
            }
            for used in use_paths(&format!("use {};", line.split_once("use ").unwrap().1)) {
                let Some(name) = used.last().cloned() else {
                    continue;
                };
                // Absolute: relative to this module.
                let mut absolute: Vec<String> = match used.first().map(String::as_str) {
                    Some("crate") => used[1..].to_vec(),
                    Some("super") => {
                        let mut m = path.clone();
                        m.pop();
                        m.extend(used[1..].iter().cloned());
                        m
                    }
                    _ => {
                        let mut m = path.clone();
                        m.extend(used.iter().cloned());
                        m
                    }
                };
                absolute.retain(|s| s != "self");
                names.insert(name, absolute);
            }
        }
        all.insert(path.clone(), names);
    }
    all
}

/// File -> the files it imports from.
fn file_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let reexports = reexports(&modules);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, (file, code)) in &modules {
        let code = without_comments(code);
        let targets = graph.entry(file.clone()).or_default();
        for used in use_paths(&code).iter().chain(inline_paths(&code).iter()) {
            if let Some(to) = resolve(path, used, &modules, &reexports, 0)
                && let Some((to_file, _)) = modules.get(&to)
                && to_file != file
                && !to.is_empty()
            {
                targets.insert(to_file.clone());
            }
        }
    }
    graph
}

/// The top-level module a file belongs to (`exec` for `src/exec/job.rs`).
fn top(file: &str) -> String {
    let rel = file.trim_start_matches("src/");
    rel.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

#[test]
fn each_module_imports_only_what_its_layer_allows() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut broken = Vec::new();
    for (file, targets) in file_graph() {
        let from = top(&file);
        if ["lib", "main"].contains(&from.as_str()) || FOUNDATION.contains(&from.as_str()) {
            // The foundation imports only itself (checked below); lib and main see all.
            if FOUNDATION.contains(&from.as_str()) {
                for t in &targets {
                    let to = top(t);
                    if !FOUNDATION.contains(&to.as_str()) {
                        broken.push(format!(
                            "{file} imports {t}: the foundation imports only itself"
                        ));
                    }
                }
            }
            continue;
        }
        let Some(may) = allowed.get(from.as_str()) else {
            broken.push(format!(
                "{file}: module `{from}` is not in the layering table"
            ));
            continue;
        };
        for t in &targets {
            let to = top(t);
            if to != from && !FOUNDATION.contains(&to.as_str()) && !may.contains(&to.as_str()) {
                broken.push(format!("{file} imports {t}: `{from}` may import {may:?}"));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

/// ARCHITECTURE.md's "Layers" table says what this file's table says: each module's row names
/// exactly the modules it may import (the rows of `error` and `app` say it in words).
#[test]
fn architecture_md_states_this_table() {
    let doc = std::fs::read_to_string(common::repo().join("ARCHITECTURE.md")).unwrap();
    let table = doc
        .split("## Layers")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let rows: BTreeMap<String, BTreeSet<String>> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            let names = |cell: &str| -> Vec<String> {
                cell.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(String::from)
                    .collect()
            };
            let may: BTreeSet<String> = names(cells[2])
                .into_iter()
                .filter(|m| m != "main")
                .collect();
            names(cells[1]).into_iter().map(move |m| (m, may.clone()))
        })
        .collect();
    for (module, may) in LAYERS {
        let row = rows
            .get(*module)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no row for `{module}`"));
        if ["error", "app"].contains(module) {
            continue;
        }
        let may: BTreeSet<String> = may.iter().map(|m| m.to_string()).collect();
        assert_eq!(*row, may, "ARCHITECTURE.md's row for `{module}`");
    }
}

#[test]
fn the_layering_table_has_no_cycle() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    // Each module's allowed set may only name modules earlier in the table.
    let order: Vec<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    for (i, (module, may)) in LAYERS.iter().enumerate() {
        for m in *may {
            let at = order.iter().position(|o| o == m);
            assert!(
                at.is_some_and(|at| at < i),
                "`{module}` may import `{m}`, which is not above it in the table"
            );
            assert!(allowed.contains_key(m));
        }
    }
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let graph = file_graph();
    let cycles = strongly_connected(&graph);
    assert!(
        cycles.is_empty(),
        "import circles (each line: files that import each other, directly or around):\n{}",
        cycles
            .iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The groups of two or more files that reach each other (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// Whether `path`, written in module `at`, names a module of the crate (`super::node`) rather
/// than an item in one.
fn names_module(
    at: &[String],
    path: &[String],
    modules: &BTreeMap<Vec<String>, (String, String)>,
) -> bool {
    let mut full: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        _ => at.to_vec(),
    };
    for seg in path {
        match seg.as_str() {
            "crate" => {}
            "self" => {}
            "super" => {
                full.pop();
            }
            s => full.push(s.to_string()),
        }
    }
    modules.contains_key(&full)
}

/// Paths that start at a child module of `at` (`child::f`, `self::child::f`), written in code
/// outside `use` declarations: a parent's calls into its children, which `inline_paths` does
/// not read.
fn child_paths(
    at: &[String],
    code: &str,
    modules: &BTreeMap<Vec<String>, (String, String)>,
) -> Vec<Vec<String>> {
    let children: BTreeSet<&str> = modules
        .keys()
        .filter(|m| m.len() == at.len() + 1 && m.starts_with(at))
        .filter_map(|m| m.last().map(String::as_str))
        .collect();
    let mut out = Vec::new();
    for child in children {
        let written = format!("{child}::");
        for (i, _) in code.match_indices(&written) {
            let before = &code[..i];
            let path_from = match before.strip_suffix("self::") {
                Some(rest) => rest,
                None => before,
            };
            let prev = path_from.chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let Some(text) = path_written_at(code, i) else {
                continue;
            };
            out.push(text.split("::").map(String::from).collect());
        }
    }
    out
}

/// File -> the files whose functions it calls: a path whose last segment is a lower-case item
/// (a function; types and constants are other cases) of another file, through a `use`, a
/// written-out `crate::`, `super::` or `self::` path, or a parent's `child::f`; and a child's
/// `use super::*`, which takes its parent's functions whole. A parent's `pub use child::f`
/// re-export is no call unless the parent calls `f` itself.
fn call_graph_of(
    modules: &BTreeMap<Vec<String>, (String, String)>,
) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = reexports(modules);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, (file, code)) in modules {
        let code = without_comments(code);
        let targets = graph.entry(file.clone()).or_default();
        let mut written: Vec<Vec<String>> = Vec::new();
        for (reexport, paths) in use_decls(&code) {
            for used in paths {
                let name = used.last().cloned().unwrap_or_default();
                if reexport && !code.contains(&format!("{name}(")) {
                    continue;
                }
                written.push(used);
            }
        }
        if code.contains("use super::*;")
            && let Some((parent_file, _)) = path
                .split_last()
                .and_then(|(_, parent)| modules.get(parent))
        {
            targets.insert(parent_file.clone());
        }
        let body = without_uses(&code);
        written.extend(inline_paths(&body));
        written.extend(child_paths(path, &body, modules));
        for used in written {
            let Some(item) = used.last() else { continue };
            let is_function = item.chars().next().is_some_and(|c| c.is_ascii_lowercase());
            if !is_function || names_module(path, &used, modules) {
                continue;
            }
            if let Some(to) = resolve(path, &used, modules, &reexports, 0)
                && let Some((to_file, _)) = modules.get(&to)
                && to_file != file
            {
                targets.insert(to_file.clone());
            }
        }
    }
    graph
}

/// No module calls a function of a child that calls one of its own back (ARCHITECTURE.md: a
/// `mod.rs` is a front door). The import check above cannot see these: a parent's
/// `child::f(..)` is no `use`. Shared types and constants of a parent stay allowed.
#[test]
fn no_module_calls_a_child_that_calls_it_back() {
    let cycles = strongly_connected(&call_graph_of(&modules()));
    assert!(
        cycles.is_empty(),
        "call cycles (each line: files whose functions call each other, directly or around):\n{}",
        cycles
            .iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The call checker itself: a parent's `child::f()` with the child's `super::g()` (or its
/// `use super::*`) is a cycle; a parent's types and constants named by a child are not, and
/// neither is a parent that only re-exports the child's function.
#[test]
fn the_call_checker_finds_a_parent_and_child_calling_each_other() {
    let module = |p: &str| -> Vec<String> {
        p.split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let tree = |files: &[(&str, &str, &str)]| -> BTreeMap<Vec<String>, (String, String)> {
        files
            .iter()
            .map(|(m, f, c)| (module(m), (f.to_string(), c.to_string())))
            .collect()
    };
    let cycles = |files: &[(&str, &str, &str)]| strongly_connected(&call_graph_of(&tree(files)));
    let both = vec![vec!["src/a/b.rs".to_string(), "src/a/mod.rs".into()]];
    // A parent's call and a child's call back.
    let calls = [
        (
            "a",
            "src/a/mod.rs",
            "mod b;\nfn run() { b::go(); }\npub(crate) fn help() {}",
        ),
        ("a::b", "src/a/b.rs", "pub fn go() { super::help(); }"),
    ];
    assert_eq!(cycles(&calls), both);
    // The same call back through a `use`, through `use super::*`, and through `crate::`.
    for back in [
        "use super::help;\npub fn go() { help(); }",
        "use super::*;\npub fn go() { help(); }",
        "pub fn go() { crate::a::help(); }",
    ] {
        let files = [calls[0], ("a::b", "src/a/b.rs", back)];
        assert_eq!(cycles(&files), both, "{back}");
    }
    // The parent through `self::`, and a grandchild calling its grandparent back.
    let deep = [
        (
            "a",
            "src/a/mod.rs",
            "mod b;\nfn run() { self::b::c::go(); }\npub(crate) fn help() {}",
        ),
        ("a::b", "src/a/b/mod.rs", "pub mod c;"),
        (
            "a::b::c",
            "src/a/b/c.rs",
            "pub fn go() { super::super::help(); }",
        ),
    ];
    assert_eq!(
        cycles(&deep),
        [vec!["src/a/b/c.rs".to_string(), "src/a/mod.rs".into()]]
    );
    // Types and constants of the parent, and a module path, are no calls back.
    let shared = [
        (
            "a",
            "src/a/mod.rs",
            "mod b;\npub struct Shared;\nconst N: u8 = 1;\nfn run() { b::go(); }",
        ),
        (
            "a::b",
            "src/a/b.rs",
            "use super::{Shared, N};\nuse super::c;\npub fn go() -> Shared { c::f(); Shared }",
        ),
        ("a::c", "src/a/c.rs", "pub fn f() {}"),
    ];
    assert!(cycles(&shared).is_empty());
    // A parent that only re-exports its child's function calls nothing.
    let front = [
        (
            "a",
            "src/a/mod.rs",
            "mod b;\npub use b::go;\npub(crate) fn help() {}",
        ),
        ("a::b", "src/a/b.rs", "pub fn go() { super::help(); }"),
    ];
    assert!(cycles(&front).is_empty());
}

#[test]
fn every_module_file_starts_with_its_doc() {
    for (_, (file, code)) in modules() {
        assert!(
            code.trim_start().starts_with("//!"),
            "{file} does not start with a `//!` doc saying what the module is for"
        );
    }
}

/// The checker itself: a circle between two files is found, a `mod.rs` re-export is followed
/// to the file that defines the item, and a path outside the crate is no edge.
#[test]
fn the_checker_finds_circles_and_follows_reexports() {
    let module = |p: &str| -> Vec<String> { p.split("::").map(String::from).collect() };
    let modules: BTreeMap<Vec<String>, (String, String)> = [
        ("a", "src/a/mod.rs", "pub use x::Thing;\nmod x;\nmod y;"),
        ("a::x", "src/a/x.rs", "use super::y::other;"),
        ("a::y", "src/a/y.rs", "use super::Thing;\nuse std::io;"),
    ]
    .into_iter()
    .map(|(m, f, c)| (module(m), (f.to_string(), c.to_string())))
    .collect();
    let reexports = reexports(&modules);
    let thing = resolve(
        &module("a::y"),
        &module("super::Thing"),
        &modules,
        &reexports,
        0,
    );
    assert_eq!(thing, Some(module("a::x")));
    assert_eq!(
        resolve(&module("a::y"), &module("std::io"), &modules, &reexports, 0),
        None
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("x".into()).or_default().insert("y".into());
    graph.entry("y".into()).or_default().insert("x".into());
    graph.entry("z".into()).or_default().insert("x".into());
    assert_eq!(
        strongly_connected(&graph),
        [vec!["x".to_string(), "y".into()]]
    );
    assert_eq!(
        use_paths("use a::{b, c::{d, e as f}};"),
        [module("a::b"), module("a::c::d"), module("a::c::e")]
    );
}
