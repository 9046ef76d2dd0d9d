//! Claims checked (issue 28, item 7): the report flags an answer that claims more than the
//! record shows — a read run that answered without a tool call, a citation of a file no tool
//! call read, a `FILES CHANGED:` line the diff disagrees with — and stays quiet when they agree.

use pitroom_testkit::repo::dirty_repo;
use serde_json::{json, Value};

use super::common::{fake_env, record, stdout};

const NO_CALL: &str = "warning: answered without reading: no tool call in a read run";

fn read_calc() -> Value {
    json!({"tool": "read", "input": {"filePath": "calc.py"}, "status": "completed"})
}

/// Runs `script` as `pitroom ARGS` in a dirty repository, which succeeds: the report and the
/// record.
fn run(script: Value, args: &[&str]) -> (String, Value) {
    let env = fake_env(script);
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, args, 0);
    (stdout(&out), record(&env, &repo))
}

fn warnings(record: &Value) -> Vec<&str> {
    record["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn a_read_run_that_answers_with_no_tool_call_is_flagged_answered_without_reading() {
    let (report, r) = run(
        json!([{"text": "SUMMARY: divide has no zero check (calc.py:7)"}]),
        &["where is divide broken?"],
    );
    assert_stdout_has_line(&report, NO_CALL);
    assert_eq!(r["claims"], json!({"no_tool_call": true}));
    assert!(warnings(&r).contains(&&NO_CALL["warning: ".len()..]));
}

#[test]
fn a_read_run_that_reads_the_file_it_cites_is_not_flagged() {
    let (report, r) = run(
        json!([read_calc(), {"text": "SUMMARY: add is at calc.py:1"}]),
        &["where is add?"],
    );
    assert!(!report.contains("warning:"), "{report}");
    assert!(r.get("claims").is_none(), "{r}");
    assert_eq!(r["refs"]["verified"], 1);
}

#[test]
fn a_read_run_citing_a_file_no_tool_call_read_is_flagged_naming_the_file() {
    let (report, r) = run(
        json!([read_calc(), {"text": "SUMMARY: add is at calc.py:1; the docs say so in README.md:1"}]),
        &["where is add?"],
    );
    assert_stdout_has_line(&report, "warning: cites README.md, which no tool call read");
    assert!(!report.contains("calc.py, which"), "{report}");
    assert_eq!(r["claims"], json!({"unread_citations": ["README.md"]}));
}

#[test]
fn an_isolated_run_whose_files_changed_disagrees_with_its_diff_is_flagged_both_ways() {
    let (report, r) = run(
        json!([
            {"write": {"path": "b.py", "content": "print('b')\n"}},
            {"text": "SUMMARY: wrote the helper\nFILES CHANGED: a.py"}
        ]),
        &["-i", "add a helper"],
    );
    assert_stdout_has_line(
        &report,
        "warning: FILES CHANGED names a.py, which the diff does not change; the diff changes b.py, which it does not name",
    );
    assert_eq!(
        r["claims"],
        json!({"claimed_not_changed": ["a.py"], "changed_not_claimed": ["b.py"]})
    );
}

#[test]
fn an_isolated_run_whose_files_changed_matches_its_diff_is_not_flagged() {
    let (report, r) = run(
        json!([
            {"write": {"path": "b.py", "content": "print('b')\n"}},
            {"text": "SUMMARY: wrote the helper\nFILES CHANGED: b.py"}
        ]),
        &["-i", "add a helper"],
    );
    assert!(!report.contains("FILES CHANGED names"), "{report}");
    assert!(!report.contains("the diff changes"), "{report}");
    assert!(r.get("claims").is_none(), "{r}");
    assert!(report.contains("b.py"), "the change is listed: {report}");
}

/// Asserts `report` has `line` as one whole line.
#[track_caller]
fn assert_stdout_has_line(report: &str, line: &str) {
    assert!(
        report.lines().any(|l| l == line),
        "no line {line:?} in:\n{report}"
    );
}
