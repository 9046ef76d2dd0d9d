//! Contract tests of the Gemini CLI adapter on streams recorded from the real `gemini` 0.61.0
//! against the test kit's fake Gemini API (`fixtures/gemini/`, written by the ignored test
//! `record_gemini_fixtures` in the `pitroom` crate; see the README there). Each fixture is also
//! checked torn (its last line cut in half) and with noise lines mixed in.

use super::recorded::FAKE_READ_USAGE;
use pitroom_workers::FailureKind;

use super::GEMINI as CLI;

#[test]
fn read_run_yields_session_usage_one_tool_call_and_one_joined_answer() {
    let s = CLI.summary("read");
    s.assert_read_run("gemini-2.5-pro", "read_file", FAKE_READ_USAGE);
    let answer = s.texts.last().expect("an answer");
    assert!(
        answer.starts_with("SUMMARY: divide() has no zero check: calc.py:7\nDETAILS"),
        "the chunks are joined without separators: {answer:?}"
    );
}

#[test]
fn api_failures_are_errors_never_answers_and_classify_from_text_or_exit_code() {
    let cases = [
        ("err429", FailureKind::RateLimited, Some(173)),
        ("quota-daily", FailureKind::RateLimited, Some(173)),
        ("err404", FailureKind::ModelUnavailable, Some(1)),
        ("err400-key", FailureKind::Auth, Some(144)),
        ("err403", FailureKind::Auth, Some(147)),
        ("err500", FailureKind::Other, Some(244)),
    ];
    for (name, kind, exit) in cases {
        let s = CLI.assert_failed_without_answer(name, kind);
        assert_eq!(s.errors.len(), 1, "{name}: {s:?}");
        assert_eq!(
            CLI.exit_code(name),
            exit,
            "{name}: exit = HTTP status mod 256"
        );
    }
}

#[test]
fn retried_model_errors_are_seen_in_stderr_as_they_happen() {
    let stderr = CLI.stderr("err429");
    let signals = CLI.retry_signals("err429");
    assert_eq!(signals.len(), 2, "maxAttempts 2: {stderr}");
    assert!(
        signals[0].contains("Resource has been exhausted"),
        "{signals:?}"
    );
    for name in ["err404", "quota-daily", "err400-key"] {
        assert!(CLI.retry_signals(name).is_empty(), "{name} is not retried");
    }
}
