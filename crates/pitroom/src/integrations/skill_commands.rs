//! Every `pitroom …` command the skills show must be one the CLI accepts today: a skill that
//! teaches a flag that does not exist makes the agent fail in front of the user. This module
//! finds the commands (shell code blocks and inline code) and the test parses each one with the
//! real parser.

#[cfg(test)]
/// The `pitroom` command lines in a Markdown text: lines of ```sh/bash/shell/console blocks and
/// inline code spans, split at `&&`, `||`, `;` and `|`, cut at redirections and comments.
pub(crate) fn pitroom_commands(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None; // Some(is_shell) inside a fenced block
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continue;
        }
        match fence {
            Some(true) => {
                let cmd = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                out.extend(segments(cmd));
            }
            Some(false) => {}
            None => {
                for span in inline_code(line) {
                    out.extend(segments(span));
                }
            }
        }
    }
    out
}

#[cfg(test)]
/// The contents of single-backtick code spans in a line.
fn inline_code(line: &str) -> Vec<&str> {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s)
        .collect()
}

#[cfg(test)]
/// The pieces of a shell line that run `pitroom` with arguments.
fn segments(line: &str) -> Vec<String> {
    split_unquoted(line)
        .into_iter()
        .map(|s| s.trim().to_string())
        // A bare `pitroom` in prose names the tool; only commands with arguments are checked.
        .filter(|s| s.starts_with("pitroom "))
        .collect()
}

/// Splits at unquoted `&&`, `||`, `;`, `|`, and drops everything from an unquoted `>`, `<` or
/// a `#` that starts a word.
pub(crate) fn split_unquoted(line: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut skipping = false;
    let mut prev = ' ';
    for c in line.chars() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                if !skipping {
                    current.push(c);
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    if !skipping {
                        current.push(c);
                    }
                }
                ';' | '|' | '&' => {
                    parts.push(std::mem::take(&mut current));
                    skipping = false;
                }
                '>' | '<' => skipping = true,
                '#' if prev.is_whitespace() => skipping = true,
                c if !skipping => current.push(c),
                _ => {}
            },
        }
        prev = c;
    }
    parts.push(current);
    parts
}

/// Shell words of a command (single and double quotes, backslash escapes in double quotes).
pub(crate) fn words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed ' in {command}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err(format!("dangling \\ in {command}")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed \" in {command}")),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use clap::Parser;

    use super::*;
    use crate::cli::{with_default_command, Cli};
    use crate::integrations::skills::SKILLS;

    fn parse(words: Vec<String>) -> Result<Cli, clap::Error> {
        let args: Vec<OsString> = words.into_iter().map(OsString::from).collect();
        Cli::try_parse_from(with_default_command(args))
    }

    #[test]
    fn every_pitroom_command_in_the_skills_parses_with_the_real_cli() {
        let mut checked = 0;
        let mut failures = Vec::new();
        for skill in SKILLS {
            for command in pitroom_commands(skill.text) {
                checked += 1;
                let result = words(&command)
                    .map_err(|e| e.to_string())
                    .and_then(|w| parse(w).map(|_| ()).map_err(|e| e.render().to_string()));
                if let Err(why) = result {
                    failures.push(format!("{}: `{command}`\n{why}", skill.name));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(
            checked > 80,
            "only {checked} commands found: is the extractor broken?"
        );
    }

    #[test]
    fn every_skill_shows_at_least_one_pitroom_command() {
        for skill in SKILLS {
            assert!(
                !pitroom_commands(skill.text).is_empty(),
                "{} shows no pitroom command",
                skill.name
            );
        }
    }

    #[test]
    fn the_extractor_finds_commands_in_shell_blocks_and_inline_code_only() {
        let md = "Run `pitroom ls -n 5` or `git log`.\n```sh\npitroom --bg \"a; b\" && pitroom wait # comment\npitroom show --patch X > x.patch\n```\n```text\npitroom ✔ done\n```\n";
        assert_eq!(
            pitroom_commands(md),
            vec![
                "pitroom ls -n 5",
                "pitroom --bg \"a; b\"",
                "pitroom wait",
                "pitroom show --patch X"
            ]
        );
    }

    #[test]
    fn shell_words_keep_quoted_text_together() {
        assert_eq!(
            words(r#"pitroom -i --verify "cargo test -p x" 'it''s'"#).expect("words"),
            vec!["pitroom", "-i", "--verify", "cargo test -p x", "its"]
        );
    }

    #[test]
    fn a_flag_that_does_not_exist_is_caught() {
        assert!(parse(words("pitroom run --no-such-flag x").expect("words")).is_err());
        assert!(parse(words("pitroom \"a bare task\"").expect("words")).is_ok());
    }
}
