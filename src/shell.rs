//! Shell words: a value quoted for bash (the templates' `sh` filter), a command line of quoted
//! words (the "regenerate with" command of a generated file, which a user pastes into a shell),
//! and text made safe for a `#` comment line.

/// Quotes a value for bash: single quotes, with `'` written as `'\''`. Safe for spaces, `$`,
/// backticks, globs, newlines and any UTF-8.
pub fn quote(value: String) -> String {
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

/// A command line: each word quoted, joined by spaces; `sh -c` runs it as those words.
pub fn command(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().cloned().map(quote).collect();
    quoted.join(" ")
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
    use super::*;

    #[test]
    fn comments_stay_on_their_line() {
        assert_eq!(comment("a\nrm -rf /\r\tb".into()), "a rm -rf /  b");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("plain-1.0".into()), "plain-1.0");
        assert_eq!(quote("=hsn0".into()), "'=hsn0'");
        assert_eq!(quote("RANK=0".into()), "RANK=0");
        assert_eq!(
            quote("NCCL_SOCKET_IFNAME==hsn0".into()),
            "'NCCL_SOCKET_IFNAME==hsn0'"
        );
        assert_eq!(quote("".into()), "''");
        assert_eq!(quote("a b".into()), "'a b'");
        assert_eq!(quote("it's".into()), r"'it'\''s'");
        assert_eq!(quote("$(touch pwned)`x`*".into()), "'$(touch pwned)`x`*'");
    }

    #[test]
    fn a_command_is_its_words_quoted() {
        let words: Vec<String> = ["numaplan", "compile", "my jobs/job.yaml", "-o", "it's.yaml"]
            .map(String::from)
            .into();
        assert_eq!(
            command(&words),
            r"numaplan compile 'my jobs/job.yaml' -o 'it'\''s.yaml'"
        );
    }
}
