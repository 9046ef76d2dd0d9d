//! Contract tests of the Qwen Code adapter on streams recorded from the real `qwen` 0.24.4
//! against the fake chat-completions server (`fixtures/qwen/`, written by the ignored test
//! `record_qwen_fixtures` in the `pitroom` crate; see the README there). Each fixture is also
//! checked torn (its last line cut in half) and with noise lines mixed in.

use super::recorded::FAKE_READ_USAGE;
use pitroom_workers::{FailureKind, ToolOutcome};

use super::QWEN as CLI;

#[test]
fn read_run_yields_session_usage_one_tool_call_and_the_cited_answer() {
    let s = CLI.summary("read");
    s.assert_read_run("fake-model", "read_file", FAKE_READ_USAGE);
    assert_eq!(s.steps, 2, "{s:?}");
    assert!(
        s.texts.last().is_some_and(|t| t.contains("calc.py:7")),
        "{s:?}"
    );
}

#[test]
fn every_tool_call_of_the_write_run_succeeds() {
    let s = CLI.summary("write-edit");
    assert!(s.tools.iter().all(|(_, o)| *o == ToolOutcome::Ok), "{s:?}");
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
