//! Writing YAML: serde_yaml's block style, with sequences of plain scalars in flow style.

use serde::Serialize;

/// Serializes a value as a YAML document (no leading `---`). Sequences of plain scalars are
/// written in flow style (`threads: ['0-3', '128-131']`, `0: [10, 21]`) so matrices and CPU rows
/// read as one line each.
pub fn emit<T: Serialize>(value: &T) -> String {
    let block =
        serde_yaml::to_string(value).expect("invariant: numaplan's output types always serialize");
    compact_scalar_sequences(&block)
}

/// Rewrites `key:` followed by `- scalar` lines at the key's indentation as `key: [a, b]`.
fn compact_scalar_sequences(block: &str) -> String {
    let lines: Vec<&str> = block.lines().collect();
    let mut out = String::with_capacity(block.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent_of = |l: &str| l.len() - l.trim_start().len();
        if line
            .rsplit_once(": ")
            .is_some_and(|(_, m)| ["|", "|-", "|+", ">", ">-", ">+"].contains(&m))
        {
            // A block scalar: copy its body verbatim.
            let key_indent = indent_of(line);
            let body = lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || indent_of(l) > key_indent)
                .count();
            for l in &lines[i..=i + body] {
                out.push_str(l);
                out.push('\n');
            }
            i += 1 + body;
            continue;
        }
        if line.ends_with(':') && !line.trim_start().starts_with('#') {
            let indent = line.len() - line.trim_start().len();
            // An item of a sequence that is itself a mapping entry starts with `- key:`; its
            // nested sequence items sit two columns deeper than the `- `.
            let item_indent = if line.trim_start().starts_with("- ") {
                indent + 2
            } else {
                indent
            };
            let prefix = format!("{}- ", " ".repeat(item_indent));
            let items: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with(&prefix))
                .map(|l| &l[prefix.len()..])
                .collect();
            let next = lines.get(i + 1 + items.len());
            let ends_clean = next.is_none_or(|l| {
                let ind = l.len() - l.trim_start().len();
                ind <= item_indent && !l.starts_with(&format!("{}  ", " ".repeat(item_indent)))
            });
            if !items.is_empty() && ends_clean && items.iter().all(|it| flow_safe(it).is_some()) {
                let flow: Vec<String> = items.iter().filter_map(|it| flow_safe(it)).collect();
                out.push_str(line);
                out.push_str(" [");
                out.push_str(&flow.join(", "));
                out.push_str("]\n");
                i += 1 + items.len();
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// The flow-context form of a block scalar, if it is a simple one (numbers, cpulists, words).
fn flow_safe(item: &str) -> Option<String> {
    if item.is_empty() {
        return None;
    }
    if let Some(inner) = item.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        // Prose (a warning, a note) stays one item per line.
        return (!inner.contains('\'') && !inner.contains(' ')).then(|| item.to_string());
    }
    if !item
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.:,+/".contains(&b))
    {
        return None;
    }
    if item.contains(',') || item.contains(':') {
        Some(format!("'{item}'"))
    } else {
        Some(item.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse;

    #[test]
    fn emit_compacts_scalar_sequences_and_stays_equal() {
        let text = "p: |-\n  x:\n  - y\na:\n  0: [10, 21]\n  1: [21, 10]\nb:\n- id: 0\n  threads: ['0-3,8', '4']\n- id: 1\n  rows:\n  - x: 1\n";
        let (value, _) = parse::<serde_yaml::Value>("f.yaml", text).unwrap();
        let out = emit(&value);
        assert_eq!(
            out,
            "p: |-\n  x:\n  - y\na:\n  0: [10, 21]\n  1: [21, 10]\nb:\n- id: 0\n  threads: ['0-3,8', '4']\n- id: 1\n  rows:\n  - x: 1\n"
        );
        let (again, _) = parse::<serde_yaml::Value>("f.yaml", &out).unwrap();
        assert_eq!(again, value);
    }
}
