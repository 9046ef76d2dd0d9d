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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_prompt_carries_the_read_only_rule_and_the_format() {
        let p = worker_prompt(Mode::Read, "Where is X?");
        assert!(p.contains("READ-ONLY"));
        assert!(p.contains("SUMMARY:"));
        assert!(p.contains("OPEN ISSUES:"));
        assert!(p.ends_with("TASK:\nWhere is X?\n"));
    }

    #[test]
    fn write_prompt_allows_edits_and_forbids_history_changes() {
        let p = worker_prompt(Mode::Write, "fix it");
        assert!(!p.contains("READ-ONLY"));
        assert!(p.contains("Never commit, push"));
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
