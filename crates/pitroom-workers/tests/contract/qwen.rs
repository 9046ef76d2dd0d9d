//! Contract tests of the Qwen Code adapter on streams recorded from the real `qwen` 0.24.4
//! against the fake chat-completions server (`fixtures/qwen/`, written by the ignored test
//! `record_qwen_fixtures` in the `pitroom` crate; see the README there). Each fixture is also
//! checked torn (its last line cut in half) and with noise lines mixed in.

use super::recorded::Recorded;
use pitroom_workers::qwen::Qwen;
use pitroom_workers::{FailureKind, ToolOutcome, Usage};

pub const CLI: Recorded = Recorded {
    dir: "qwen",
    adapter: || Box::new(Qwen),
    banner: "Warning: Basic terminal detected",
    inert_event: r#"{"type":"stream_event","event":{}}"#,
};

#[test]
fn read_run_yields_session_usage_one_tool_call_and_the_cited_answer() {
    let s = CLI.summary("read");
    assert!(s.session.is_some());
    assert_eq!(
        s.model.as_deref(),
        Some("fake-model"),
        "the init event names it"
    );
    assert_eq!(s.steps, 2, "{s:?}");
    assert_eq!(s.tools, vec![("read_file".to_string(), ToolOutcome::Ok)]);
    assert_eq!(
        s.usage,
        Usage {
            input: 1300,
            output: 80,
            reasoning: 0,
            cache_read: 1200,
            cache_write: 0
        }
    );
    assert!(
        s.texts.last().is_some_and(|t| t.contains("calc.py:7")),
        "{s:?}"
    );
    assert!(s.errors.is_empty(), "{s:?}");
}

#[test]
fn write_run_reports_each_edit_with_its_file() {
    let s = CLI.summary("write-edit");
    s.assert_edited(3, &["/calc.py", "/README.md", "/new file é.txt"]);
    assert!(s.tools.iter().all(|(_, o)| *o == ToolOutcome::Ok), "{s:?}");
}

#[test]
fn edits_in_read_mode_are_denied_under_the_tool_they_asked_for() {
    let s = CLI.summary("read-edit-denied");
    s.assert_denied(&["edit", "write_file"]);
    assert!(s.edited.is_empty());
}

#[test]
fn api_failures_are_errors_with_their_status_never_answers() {
    let cases = [
        ("err429", 429, FailureKind::RateLimited),
        ("err404", 404, FailureKind::ModelUnavailable),
        ("err401", 401, FailureKind::Auth),
        ("err500", 500, FailureKind::Other),
    ];
    for (name, status, kind) in cases {
        let s = CLI.assert_failed_without_answer(name, kind);
        assert!(
            s.errors.iter().any(|(_, st)| *st == Some(status)),
            "{name}: {s:?}"
        );
    }
}

#[test]
fn a_malformed_model_stream_gives_no_answer() {
    CLI.assert_no_cited_answer("malformed-sse");
}

#[test]
fn retried_model_errors_are_seen_in_stderr_as_they_happen() {
    let stderr = CLI.stderr("err429");
    let signals = CLI.retry_signals("err429");
    assert!(!signals.is_empty(), "{stderr}");
    assert!(signals[0].contains("429"), "{signals:?}");
    assert!(
        CLI.retry_signals("err404").is_empty(),
        "an unknown model is not retried"
    );
}
