//! Fragments the CLIs' fake-server scripts share: the answers of their scenarios, and the steps
//! of a scenario given the CLI's own tool calls.

use serde_json::{json, Value};

/// The answer of the script's `default` scenario (the read run): two citations of `calc.py`.
pub const READ_ANSWER: &str = "SUMMARY: divide() has no zero check: calc.py:7\nDETAILS: see {{workdir}}/calc.py:5-7\nFILES CHANGED: none";
/// The answer of the script's `edit` scenario.
pub const EDIT_ANSWER: &str =
    "SUMMARY: added a zero check\nFILES CHANGED: calc.py, README.md, new file é.txt";
/// The end of `divide` in `calc.py` once the `edit` scenario has added its zero check.
pub const ZERO_CHECK: &str =
    "    if b == 0:\n        raise ZeroDivisionError(\"b is zero\")\n    return a / b";

/// The steps of the script's `edit` scenario, given its calls in the CLI's tools: `zero_check`
/// (`calc.py`'s `divide` ends in [`ZERO_CHECK`]) and `new_file` (`new file é.txt`) in one step,
/// then `readme` (`worker line` after the user's edit in `README.md`), then the answer.
pub fn edit_steps(zero_check: Value, new_file: Value, readme: Value) -> Vec<Value> {
    vec![
        json!({"tool_calls": [zero_check, new_file]}),
        json!({"tool_calls": [readme]}),
        json!({"text": EDIT_ANSWER}),
    ]
}

/// The steps of a script's `gitcommit` scenario (OpenCode's `gitdeny`), given the CLI's shell
/// call of `git commit -am sneaky`.
pub fn git_commit_steps(commit: Value) -> Value {
    json!([{"tool_calls": [commit]}, {"text": "SUMMARY: could not commit"}])
}

/// The steps of a script's `secret` scenario, given the CLI's read call of `{{workdir}}/.env`.
pub fn secret_steps(read_env: Value) -> Value {
    json!([{"tool_calls": [read_env]}, {"text": "SUMMARY: could not read it"}])
}
