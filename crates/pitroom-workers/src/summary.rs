//! How a tool call reads in a report: its input and its error, each on one short line.

use serde_json::Value;

use crate::json::str_at;

/// How long the summary of a call's input may be, in characters.
pub(crate) const INPUT_CHARS: usize = 160;
/// How long a call's error may be, in characters.
pub(crate) const ERROR_CHARS: usize = 300;

/// The most telling field of a tool's input, on one line: the first of `keys` (the CLI's names
/// for a path, a command, a pattern, …) that holds a string, else the whole input as JSON.
pub(crate) fn input_summary(input: &Value, keys: &[&str]) -> String {
    match keys.iter().find_map(|k| str_at(input, &[k])) {
        Some(s) => one_line(s, INPUT_CHARS),
        None if input.is_null() => String::new(),
        None => one_line(&input.to_string(), INPUT_CHARS),
    }
}

/// `text` with its white space folded to single spaces, cut to at most `max` characters (the
/// last one an ellipsis when it was cut).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_to_its_limit_ellipsis_included() {
        assert_eq!(one_line("a\nb  c", 10), "a b c");
        assert_eq!(one_line("abcdef", 6), "abcdef");
        assert_eq!(one_line("abcdefg", 6), "abcde…");
    }

    #[test]
    fn the_first_key_holding_a_string_is_the_summary() {
        let input = serde_json::json!({"path": 3, "command": "ls  -l"});
        assert_eq!(input_summary(&input, &["path", "command"]), "ls -l");
        assert_eq!(input_summary(&Value::Null, &["path"]), "");
        assert_eq!(
            input_summary(&serde_json::json!({"x": 1}), &["path"]),
            r#"{"x":1}"#
        );
    }
}
