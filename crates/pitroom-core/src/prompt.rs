//! The worker prompt contract: the preamble Pitroom wraps every task in.

use pitroom_workers::Mode;

const COMMON_RULES: &str = "\
- Never commit, push, reset, checkout, restore, stash, clean, rebase or merge; never change git history, branches, tags or the index. The primary agent reviews and commits.
- Never read secrets (.env files, keys, credentials) and never print secret values.
- Delete files only when the task asks for it, and list every deletion.
- Ask no questions: nobody will answer. When the task is ambiguous, pick the safest reading and say which one you picked.
- For list, count or \"all\" questions, search the whole scope and give exact counts; otherwise be economical.";

const ANSWER_FORMAT: &str = "\
Reply in this format:
SUMMARY: 1-5 lines answering the task.
DETAILS: the specifics, citing code as path:line or path:start-end (paths relative to the project root).
FILES CHANGED: each file you changed, or none.
VERIFICATION: what you ran or checked, and the result.
OPEN ISSUES: anything unresolved, risky or proposed but not done.";

fn mode_rules(mode: Mode) -> &'static str {
    match mode {
        Mode::Read => "\
- This is a READ-ONLY task. Do not create, edit, move or delete any file, not even temporary ones inside the project; use shell commands only to look. Any change to the project is detected and fails the task.",
        Mode::Write => "\
- You may edit files in the working directory. Make the smallest correct change, then run cheap checks (a build, the relevant tests) if they exist.",
        Mode::Isolate => "\
- You work in a private copy of the project; dependency folders may be missing unless linked. Make the smallest correct change, then run cheap checks if they exist.",
    }
}

/// The full prompt for a fresh task.
pub fn worker_prompt(mode: Mode, task: &str) -> String {
    format!(
        "You are a worker agent. Your answer is draft work that a primary agent will verify.\n\nRules:\n{}\n{}\n\n{}\n\nTASK:\n{}\n",
        mode_rules(mode),
        COMMON_RULES,
        ANSWER_FORMAT,
        task.trim_end()
    )
}

/// The prompt for a follow-up in the same session: the rules already stand.
pub fn follow_up_prompt(mode: Mode, task: &str) -> String {
    format!(
        "Follow-up task. The same rules and answer format apply.\n{}\n\nTASK:\n{}\n",
        mode_rules(mode),
        task.trim_end()
    )
}

/// The full prompt for a worker that finishes a task another worker started: the task, then
/// what that worker did.
pub fn handoff_prompt(mode: Mode, task: &str, account: &str) -> String {
    format!(
        "{}\nHAND-OFF (continue from here, do not start over):\n{}\n",
        worker_prompt(mode, task),
        account.trim_end()
    )
}

/// What a worker is told in a repair round: the check it has to make pass, how it failed and
/// the end of its output. In a resumed session the rules and the task are already there; a
/// fresh session (a CLI that cannot resume) gets the whole task first.
pub fn repair_prompt(mode: Mode, task: &str, failure: &RepairBrief, resumed: bool) -> String {
    let head = if resumed {
        "Repair round. The same rules and answer format apply.".to_string()
    } else {
        format!(
            "{}\nYour earlier changes for this task are already in the working tree (keep what is right; do not start over).",
            worker_prompt(mode, task)
        )
    };
    format!(
        "{head}\n\nREPAIR (round {round} of {of}): the check `{command}` {how} after your changes. The last lines of its output:\n```\n{tail}\n```\nFix the code so that this check passes. Do not weaken, skip or edit the check itself. Then answer in the same format as before, covering all your changes.\n",
        round = failure.round,
        of = failure.of,
        command = failure.command,
        how = failure.how,
        tail = failure.tail.trim_end(),
    )
}

/// A failed `--verify` as a repair round tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairBrief {
    /// The round about to start (2 for the first repair) and how many the run has.
    pub round: u32,
    pub of: u32,
    pub command: String,
    /// "failed with exit code 1", "timed out after 15m".
    pub how: String,
    /// The end of the check's output, already redacted.
    pub tail: String,
}

/// The most of one attached file's contents that goes into a prompt.
pub const ATTACH_FILE_CAP: usize = 64 * 1024;
/// The most of all attached contents together.
pub const ATTACH_TOTAL_CAP: usize = 256 * 1024;

/// The attached files (`run -f`) as a prompt section: each path, and its contents while
/// within the caps (past them, or when it is not text, only the path: the worker reads it).
pub fn attachments_block(paths: &[std::path::PathBuf]) -> String {
    if paths.is_empty() {
        return String::new();
    }
    let mut block = String::from("\nATTACHED FILES (given with the task):\n");
    let mut total = 0usize;
    for path in paths {
        let shown = path.display();
        match std::fs::read(path) {
            Ok(bytes)
                if bytes.len() <= ATTACH_FILE_CAP && total + bytes.len() <= ATTACH_TOTAL_CAP =>
            {
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        total += text.len();
                        block.push_str(&format!(
                            "=== {shown} ===\n{}\n=== end of {shown} ===\n",
                            text.trim_end()
                        ));
                    }
                    Err(_) => block.push_str(&format!(
                        "=== {shown} (not text: read it yourself if needed) ===\n"
                    )),
                }
            }
            Ok(bytes) => block.push_str(&format!(
                "=== {shown} ({} bytes, too large to include: read it yourself) ===\n",
                bytes.len()
            )),
            Err(e) => block.push_str(&format!("=== {shown} (could not be read: {e}) ===\n")),
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attached_files_carry_their_contents_within_the_cap_and_only_the_path_beyond() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("notes.md");
        std::fs::write(&small, "the plan\n").unwrap();
        let big = dir.path().join("big.log");
        std::fs::write(&big, "x".repeat(ATTACH_FILE_CAP + 1)).unwrap();
        let block = attachments_block(&[small.clone(), big.clone()]);
        assert!(
            block.contains(&format!(
                "=== {} ===\nthe plan\n=== end of",
                small.display()
            )),
            "{block}"
        );
        assert!(block.contains("too large to include"), "{block}");
        assert!(!block.contains("xxxx"), "the big file's contents stay out");
        assert_eq!(attachments_block(&[]), "");
    }

    #[test]
    fn read_prompt_carries_the_read_only_rule_and_the_format() {
        let p = worker_prompt(Mode::Read, "Where is X?");
        for part in ["READ-ONLY", "SUMMARY:", "OPEN ISSUES:"] {
            assert!(p.contains(part), "{part} is missing from:\n{p}");
        }
        assert!(p.ends_with("TASK:\nWhere is X?\n"));
    }

    #[test]
    fn write_prompt_allows_edits_and_forbids_history_changes() {
        let p = worker_prompt(Mode::Write, "fix it");
        assert!(!p.contains("READ-ONLY"));
        assert!(p.contains("Never commit, push"));
    }

    #[test]
    fn a_repair_round_carries_the_failed_check_and_only_a_fresh_session_gets_the_task_again() {
        let brief = RepairBrief {
            round: 2,
            of: 3,
            command: "cargo test".into(),
            how: "failed with exit code 101".into(),
            tail: "test parse ... FAILED\n".into(),
        };
        let resumed = repair_prompt(Mode::Write, "fix the parser", &brief, true);
        assert!(resumed.starts_with("Repair round."), "{resumed}");
        assert!(
            resumed.contains(
                "REPAIR (round 2 of 3): the check `cargo test` failed with exit code 101"
            ),
            "{resumed}"
        );
        assert!(
            resumed.contains("```\ntest parse ... FAILED\n```"),
            "{resumed}"
        );
        assert!(
            !resumed.contains("fix the parser"),
            "a resumed session has the task"
        );
        let fresh = repair_prompt(Mode::Write, "fix the parser", &brief, false);
        assert!(fresh.contains("TASK:\nfix the parser\n"), "{fresh}");
        assert!(fresh.contains("already in the working tree"), "{fresh}");
        assert!(fresh.contains("REPAIR (round 2 of 3)"), "{fresh}");
    }

    #[test]
    fn follow_up_is_short() {
        let p = follow_up_prompt(Mode::Read, "and Y?");
        assert!(p.len() < worker_prompt(Mode::Read, "and Y?").len());
        assert!(p.contains("and Y?"));
    }

    #[test]
    fn a_handoff_prompt_carries_the_task_the_rules_and_the_account() {
        let p = handoff_prompt(
            Mode::Write,
            "Fix divide()",
            "Another worker (x) edited calc.py",
        );
        assert!(p.contains("TASK:\nFix divide()"));
        assert!(p.contains("Never commit"));
        let task_at = p.find("TASK:").unwrap();
        let account_at = p.find("Another worker (x) edited calc.py").unwrap();
        assert!(account_at > task_at, "the account follows the task");
    }
}
