//! `command: "python train.py --lr '3e-4'"`: a command line split into words as a POSIX shell
//! splits them (quotes, backslashes), without running a shell: no expansion, no globbing, no
//! variables, no operators.

/// Why a command line cannot be split.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WordsError {
    #[error("the {0} quote opened at character {1} is not closed")]
    Unclosed(&'static str, usize),
    #[error("the line ends with a backslash that escapes nothing")]
    TrailingBackslash,
}

/// The words of `line`: whitespace separates words; `'...'` keeps everything literally;
/// `"..."` keeps everything but `\\"`, `\\\\`, `\\$` and `` \\` ``, which lose their backslash;
/// outside quotes a backslash keeps the next character (a backslash-newline joins lines).
pub fn split(line: &str) -> Result<Vec<String>, WordsError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().enumerate().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                words.extend(word.take());
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => w.push(c),
                        None => return Err(WordsError::Unclosed("single", i + 1)),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.peek() {
                            Some((_, n @ ('"' | '\\' | '$' | '`'))) => {
                                w.push(*n);
                                chars.next();
                            }
                            Some((_, '\n')) => {
                                chars.next();
                            }
                            _ => w.push('\\'),
                        },
                        Some((_, c)) => w.push(c),
                        None => return Err(WordsError::Unclosed("double", i + 1)),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, n)) => word.get_or_insert_with(String::new).push(n),
                None => return Err(WordsError::TrailingBackslash),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        let cases: &[(&str, &[&str])] = &[
            ("python train.py", &["python", "train.py"]),
            ("  a   b\tc\n", &["a", "b", "c"]),
            ("a 'b c' \"d e\"", &["a", "b c", "d e"]),
            ("'it'\\''s'", &["it's"]),
            (
                "\"say \\\"hi\\\" \\$HOME \\\\ \\n\"",
                &["say \"hi\" $HOME \\ \\n"],
            ),
            ("a\\ b c", &["a b", "c"]),
            ("''", &[""]),
            ("x'' ''y", &["x", "y"]),
            ("$HOME *.py ; echo", &["$HOME", "*.py", ";", "echo"]),
            ("a \\\n b", &["a", "b"]),
            ("naïve → ünïcode", &["naïve", "→", "ünïcode"]),
        ];
        for (line, words) in cases {
            assert_eq!(split(line).unwrap(), *words, "{line:?}");
        }
    }

    #[test]
    fn refuses_what_a_shell_refuses() {
        assert_eq!(split("a 'b"), Err(WordsError::Unclosed("single", 3)));
        assert_eq!(split("\"b"), Err(WordsError::Unclosed("double", 1)));
        assert_eq!(split("a\\"), Err(WordsError::TrailingBackslash));
    }
}
