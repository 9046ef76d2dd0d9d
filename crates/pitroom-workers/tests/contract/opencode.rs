//! Contract tests of the OpenCode adapter on streams recorded from the real `opencode` 1.18.33
//! against the fake model server (`fixtures/opencode/`, written by the ignored test
//! `record_opencode_fixtures` in the `pitroom` crate). Each fixture is also checked torn (its
//! last line cut in half, as when the stream is read live) and with noise lines mixed in.

use pitroom_workers::{FailureKind, ToolOutcome, Usage};

use super::OPENCODE as CLI;

/// What a run's events add up to.
#[test]
fn read_run_yields_session_steps_usage_and_the_cited_answer() {
    let s = CLI.summary("read");
    assert!(s.session.is_some_and(|id| id.starts_with("ses_")));
    assert_eq!(s.steps, 2);
    assert_eq!(s.tools, vec![("read".to_string(), ToolOutcome::Ok)]);
    assert_eq!(
        s.usage,
        Usage {
            input: 1300,
            output: 73,
            reasoning: 7,
            cache_read: 1200,
            cache_write: 0
        }
    );
    assert!(s.texts.last().is_some_and(|t| t.contains("calc.py:7")));
    assert!(s.errors.is_empty());
}

#[test]
fn a_denied_git_commit_is_counted_as_denied() {
    let s = CLI.summary("bash-git-denied");
    assert!(
        s.tools.contains(&("bash".to_string(), ToolOutcome::Denied)),
        "{:?}",
        s.tools
    );
}

#[test]
fn unknown_model_is_explained_only_by_the_logs() {
    let s = CLI.summary("unknown-model");
    assert!(s.errors[0].0.contains("Unexpected server error"));
    assert_eq!(CLI.classify("unknown-model"), FailureKind::ModelUnavailable);
}

#[test]
fn malformed_stream_is_an_error_not_an_answer() {
    let s = CLI.summary("malformed-sse");
    assert!(s.errors[0].0.contains("JSON parsing failed"));
    assert!(s.texts.is_empty());
    assert_eq!(CLI.classify("malformed-sse"), FailureKind::Other);
}

#[test]
fn the_endless_loop_shows_as_empty_steps() {
    let s = CLI.summary("no-finish-reason");
    assert!(s.steps >= 3, "{s:?}");
    assert_eq!(s.empty_steps, s.steps, "every step lacks a finish reason");
}

#[test]
fn retried_model_errors_are_seen_in_stderr_as_they_happen() {
    let stderr = CLI.stderr("err429");
    let signals = CLI.retry_signals("err429");
    assert!(signals.len() >= 3, "{stderr}");
    assert_eq!(signals[0], "Rate limit reached for requests");
    assert!(CLI.retry_signals("unknown-model").is_empty(), "not a retry");
}
