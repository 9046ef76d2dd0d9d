//! Contract tests of the Kilo Code adapter on streams recorded from the real `kilo` 7.7.7
//! against the fake chat-completions server (`fixtures/kilo/`, written by the ignored test
//! `record_kilo_fixtures` in the `pitroom` crate; see the README there). Kilo shares OpenCode's
//! format, so these check that the shared parser and classifier hold on Kilo's own output. Each
//! fixture is also checked torn (its last line cut in half) and with noise lines mixed in.

use super::recorded::{errors, tool_edits};
use pitroom_workers::{FailureKind, ToolOutcome, WorkerEvent};

use super::KILO as CLI;

#[test]
fn read_run_yields_session_usage_cost_and_the_cited_answer() {
    let events = CLI.parse(&CLI.fixture("read").0);
    assert!(events
        .iter()
        .any(|e| matches!(e, WorkerEvent::Session { id } if id.starts_with("ses_"))));
    assert_eq!(
        tool_edits(&events),
        vec![("read".into(), ToolOutcome::Ok, None)]
    );
    let cost: f64 = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::StepFinished { cost, .. } => *cost,
            _ => None,
        })
        .sum();
    assert!(cost > 0.0, "Kilo reports cost: {events:?}");
    let last_text = events.iter().rev().find_map(|e| match e {
        WorkerEvent::Text { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert!(last_text.is_some_and(|t| t.contains("calc.py:7")));
}

#[test]
fn write_run_reports_edits_with_their_files() {
    let edited: Vec<String> = tool_edits(&CLI.parse(&CLI.fixture("write-edit").0))
        .into_iter()
        .filter_map(|(_, _, e)| e)
        .collect();
    assert_eq!(edited.len(), 3, "{edited:?}");
    assert!(edited.iter().any(|p| p.ends_with("/new file é.txt")));
}

#[test]
fn edits_in_read_mode_and_a_git_commit_are_denied() {
    let denied: Vec<String> = tool_edits(&CLI.parse(&CLI.fixture("read-edit-denied").0))
        .into_iter()
        .filter(|(_, o, _)| *o == ToolOutcome::Denied)
        .map(|(n, _, _)| n)
        .collect();
    assert!(denied.iter().any(|n| n == "edit"), "{denied:?}");
    let git = tool_edits(&CLI.parse(&CLI.fixture("bash-git-denied").0));
    assert!(
        git.iter()
            .any(|(n, o, _)| n == "bash" && *o == ToolOutcome::Denied),
        "{git:?}"
    );
}

#[test]
fn an_unknown_model_is_an_error_with_its_status() {
    let errs = errors(&CLI.parse(&CLI.fixture("err404").0));
    assert!(errs.iter().any(|(_, s)| *s == Some(404)), "{errs:?}");
    assert_eq!(CLI.classify("err404"), FailureKind::ModelUnavailable);
}

/// Kilo retries a 429 or a 500 silently; the engine stopped it after three failed attempts (the
/// `stream error` lines of `--print-logs`), before Kilo wrote any error event, so the failure is
/// known from stderr alone.
#[test]
fn retried_failures_are_signalled_on_stderr_and_classified_from_it() {
    for (name, kind) in [
        ("err429", FailureKind::RateLimited),
        ("err500", FailureKind::Other),
    ] {
        let (events, stderr) = CLI.fixture(name);
        assert!(events.is_empty(), "{name}: stopped before any event");
        let signals = CLI.retry_signals(name);
        assert_eq!(signals.len(), 3, "{name}: {stderr}");
        assert_eq!(CLI.classify(name), kind, "{name}");
    }
    assert_eq!(
        CLI.retry_signals("err429").first().map(String::as_str),
        Some("Rate limit reached for requests")
    );
}

#[test]
fn a_malformed_model_stream_is_an_error_not_an_answer() {
    let events = CLI.parse(&CLI.fixture("malformed-sse").0);
    assert!(!errors(&events).is_empty(), "{events:?}");
    assert!(events
        .iter()
        .all(|e| !matches!(e, WorkerEvent::Text { text, .. } if text.contains("SUMMARY"))));
}
