//! The words a key takes, read from its format's JSON schema: for an error about a mapping or a
//! list where a word belongs, where serde names no choices.

use serde_json::Value;

/// The `const` strings the schema allows at `path` (`memory.policy`, `gpus[0]`), in schema order;
/// empty when the path leads nowhere or the key takes no fixed words.
pub fn words_at(schema: &Value, path: &str) -> Vec<String> {
    let mut node = schema;
    for segment in path.split('.') {
        let (key, indexed) = match segment.split_once('[') {
            Some((key, _)) => (key, true),
            None => (segment, false),
        };
        let Some(next) = property(schema, node, key) else {
            return Vec::new();
        };
        node = next;
        if indexed {
            let Some(items) = alternatives(schema, node).find_map(|n| n.get("items")) else {
                return Vec::new();
            };
            node = items;
        }
    }
    let mut words = Vec::new();
    collect_words(schema, node, &mut words);
    words
}

/// `node` and the schemas it stands for: itself, what its `$ref` names, and its `anyOf` and
/// `oneOf` alternatives, depth first.
fn alternatives<'a>(schema: &'a Value, node: &'a Value) -> impl Iterator<Item = &'a Value> {
    let mut stack = vec![node];
    // A recursive schema would never run dry: a schema path is never this deep.
    let mut budget = 1000;
    std::iter::from_fn(move || {
        budget -= 1;
        let n = stack.pop().filter(|_| budget > 0)?;
        if let Some(target) = n
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(schema, r))
        {
            stack.push(target);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = n.get(key).and_then(Value::as_array) {
                stack.extend(list.iter().rev());
            }
        }
        Some(n)
    })
}

/// Every key the schema's mappings take, dotted from the top (`cpu`, `cpu.policy`, ...), in
/// schema order; a mapping of free keys (`env`) is offered as `env.`: what `--set` completes.
pub fn keys(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_keys(schema, schema, "", &mut out);
    out
}

fn collect_keys(schema: &Value, node: &Value, prefix: &str, out: &mut Vec<String>) {
    // The spec's formats nest a few levels; the bound keeps a recursive schema finite.
    if prefix.matches('.').count() > 4 {
        return;
    }
    for n in alternatives(schema, node) {
        if let Some(props) = n.get("properties").and_then(Value::as_object) {
            for (key, child) in props {
                let path = format!("{prefix}{key}");
                if !out.contains(&path) {
                    out.push(path.clone());
                }
                collect_keys(schema, child, &format!("{path}."), out);
            }
        }
        let free = n.get("additionalProperties").is_some_and(|a| a.is_object());
        if free && !prefix.is_empty() && !out.iter().any(|k| k == prefix) {
            out.push(prefix.to_string());
        }
    }
}

fn property<'a>(schema: &'a Value, node: &'a Value, key: &str) -> Option<&'a Value> {
    alternatives(schema, node).find_map(|n| n.get("properties")?.get(key))
}

fn resolve<'a>(schema: &'a Value, reference: &str) -> Option<&'a Value> {
    schema.pointer(reference.strip_prefix('#')?)
}

fn collect_words(schema: &Value, node: &Value, words: &mut Vec<String>) {
    for n in alternatives(schema, node) {
        let listed = n
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let consts = n.get("const").into_iter().chain(listed);
        for word in consts.filter_map(Value::as_str) {
            if !words.iter().any(|w| w == word) {
                words.push(word.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_through_refs_alternatives_and_lists() {
        let schema = serde_json::json!({
            "properties": {
                "memory": {"anyOf": [{"$ref": "#/$defs/Memory"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"enum": ["a", "b"]}},
                "free": {"type": "string"}
            },
            "$defs": {
                "Memory": {"properties": {"policy": {"anyOf": [{"$ref": "#/$defs/Policy"}, {"type": "null"}]}}},
                "Policy": {"oneOf": [{"const": "preferred"}, {"const": "bind"}]}
            }
        });
        assert_eq!(words_at(&schema, "memory.policy"), ["preferred", "bind"]);
        assert_eq!(words_at(&schema, "list[1]"), ["a", "b"]);
        assert!(words_at(&schema, "free").is_empty());
        assert!(words_at(&schema, "memory.nothing").is_empty());
        assert!(words_at(&schema, "nothing.at.all").is_empty());
    }
}
