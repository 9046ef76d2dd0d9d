//! The shell commands no worker may run, whatever its CLI and mode, written once: in the pattern
//! form OpenCode reads (`words*`: the words as a prefix; `words *`: the words, then arguments),
//! and rendered from here into each CLI's own rule syntax — OpenCode and Kilo permission
//! patterns, Claude's and Qwen's `Bash(…)` rules, Gemini's policy prefixes, Cursor's `Shell(…)`
//! tokens. The git guard and the floor (`pitroom_git::guard`) enforce the same below any CLI;
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
    use crate::Mode;

    /// Every rendering of the policy, as text, for each CLI that has one.
    fn renderings() -> Vec<(&'static str, String)> {
        vec![
            (
                "opencode",
                crate::opencode::config::permission_profile(Mode::Write, false).to_string(),
            ),
            (
                "claude",
                crate::claude::profile::permissions(Mode::Write, false).to_string(),
            ),
            (
                "qwen",
                crate::qwen::deny_rules(Mode::Write, false).join("\n"),
            ),
            ("gemini", crate::gemini::policy(Mode::Write, false)),
            ("cursor", crate::cursor::denied_shell_tokens().join("\n")),
        ]
    }

    #[test]
    fn every_cli_refuses_every_denied_command_in_its_own_syntax() {
        for (cli, text) in renderings() {
            for pattern in patterns() {
                let words = words(&pattern);
                // Cursor writes `git push` as `Shell(git:push…)`.
                let cursor_form = words.replacen(' ', ":", 1);
                assert!(
                    text.contains(words) || (cli == "cursor" && text.contains(&cursor_form)),
                    "{cli} does not refuse `{words}`:\n{text}"
                );
            }
        }
    }

    #[test]
    fn the_agent_clis_denied_are_the_floors() {
        for cli in pitroom_git::guard::floor::AGENT_CLIS {
            assert!(patterns().any(|p| words(&p) == *cli), "{cli} is not denied");
        }
        assert!(patterns().any(|p| p == "agy*"));
    }
}
