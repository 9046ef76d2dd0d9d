//! The shell commands no worker may run, whatever its CLI and mode, written once: in the pattern
//! form OpenCode reads (`words*`: the words as a prefix; `words *`: the words, then arguments),
//! and rendered from here into each CLI's own rule syntax — OpenCode and Kilo permission
//! patterns, Claude's and Qwen's `Bash(…)` rules, Gemini's policy prefixes, Cursor's `Shell(…)`
//! tokens. The git guard and the floor (`pitroom_guard`) enforce the same below any CLI;
//! these rules make the CLI itself refuse, before a command even starts.

use crate::facts::CLIS;

/// Commands that change history, the index or refs; raise privileges; or publish in the
/// user's name. (The agent CLIs come from the table of CLIs, see [`patterns`].)
const COMMANDS: &[&str] = &[
    "git commit*",
    "git push*",
    "git reset*",
    "git checkout*",
    "git restore*",
    "git switch*",
    "git stash*",
    "git clean*",
    "git rebase*",
    "git merge*",
    "git cherry-pick*",
    "git revert*",
    "git am *",
    "git update-ref*",
    "git add*",
    "git rm *",
    "git mv *",
    "git gc*",
    "git prune*",
    "git filter-branch*",
    "git replace*",
    "git notes*",
    "git worktree*",
    "sudo *",
    "su *",
    "doas *",
    "npm publish*",
    "pnpm publish*",
    "yarn publish*",
    "cargo publish*",
    "twine upload*",
    "gh *",
    "pitroom*",
];

/// Every denied pattern: the commands above, then every agent CLI by every name it installs
/// (a worker must not delegate to another agent outside the run's limits; the floor refuses
/// the same names, a test in `facts` holds the two equal).
pub(crate) fn patterns() -> impl Iterator<Item = String> {
    let agent_names = CLIS
        .iter()
        .flat_map(|cli| std::iter::once(cli.program).chain(cli.aliases.iter().copied()));
    COMMANDS
        .iter()
        .map(|p| (*p).to_string())
        .chain(agent_names.map(|name| format!("{name}*")))
}

/// A pattern's command words without its wildcard (`git am *` → `git am`): what the syntaxes
/// that match a command by its leading words take.
pub(crate) fn words(pattern: &str) -> &str {
    pattern.trim_end_matches('*').trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InvocationRequest, Mode};

    /// CLIs with no rule syntax for shell commands, and what refuses the denied commands
    /// instead. Every other row of the table must render them into its invocation.
    const NO_RULE_SYNTAX: &[(&str, &str)] = &[
        (
            "codex",
            "its sandbox and the git guard (Codex has no per-command rules)",
        ),
        (
            "antigravity",
            "nothing needed: with no rule format, Antigravity refuses write runs",
        ),
    ];

    /// What a CLI reads its rules from in a write run: its arguments, its environment and the
    /// settings files the engine writes for it; `None` when the CLI refuses write runs.
    fn rules_text(backend: &str) -> Option<String> {
        let adapter = crate::adapter_for(backend).expect("a row of the table");
        let req = InvocationRequest::for_test_of(backend, Mode::Write, vec![]);
        let inv = match adapter.invocation(&req) {
            Ok(inv) => inv,
            Err(crate::AdapterError::ModeUnsupported { .. }) => return None,
            Err(e) => panic!("{backend}: {e}"),
        };
        let mut text: Vec<String> = inv
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        text.extend(
            inv.env
                .iter()
                .map(|(_, v)| v.to_string_lossy().into_owned()),
        );
        text.extend(inv.files.iter().map(|f| f.content.clone()));
        Some(text.join("\n"))
    }

    #[test]
    fn every_cli_refuses_every_denied_command_in_its_own_syntax() {
        for cli in CLIS {
            if NO_RULE_SYNTAX.iter().any(|(b, _)| *b == cli.backend) {
                continue;
            }
            let text = rules_text(cli.backend)
                .unwrap_or_else(|| panic!("{} refuses write runs", cli.backend));
            for pattern in patterns() {
                let words = words(&pattern);
                // Cursor writes `git push` as `Shell(git:push…)`.
                let cursor_form = words.replacen(' ', ":", 1);
                assert!(
                    text.contains(words)
                        || (cli.backend == "cursor" && text.contains(&cursor_form)),
                    "{} does not refuse `{words}`:\n{text}",
                    cli.backend
                );
            }
        }
    }

    #[test]
    fn a_cli_without_rules_is_one_that_renders_none() {
        // The exemption list names rows of the table, each with a reason, and none of them
        // writes rules after all (the list would then hide a rendering from the test above).
        for (backend, why) in NO_RULE_SYNTAX {
            assert!(crate::facts(backend).is_some(), "{backend}: not a CLI");
            assert!(!why.is_empty());
            if let Some(text) = rules_text(backend) {
                assert!(
                    !text.contains("git push"),
                    "{backend} renders the rules:\n{text}"
                );
            }
        }
    }

    #[test]
    fn the_agent_clis_denied_are_the_floors() {
        for cli in pitroom_guard::floor::AGENT_CLIS {
            assert!(patterns().any(|p| words(&p) == *cli), "{cli} is not denied");
        }
        assert!(patterns().any(|p| p == "agy*"));
    }
}
