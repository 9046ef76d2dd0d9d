//! Contract tests of the Kilo Code adapter on streams recorded from the real `kilo` 7.7.7
//! against the fake chat-completions server (`fixtures/kilo/`, written by the ignored test
//! `record_kilo_fixtures` in the `pitroom` crate; see the README there). Kilo shares OpenCode's
//! format, so these check that the shared parser and classifier hold on Kilo's own output. Each
//! fixture is also checked torn (its last line cut in half) and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::kilo::Kilo;
use pitroom_workers::{Adapter, FailureEvidence, FailureKind, ToolOutcome, WorkerEvent};

fn fixture(name: &str) -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kilo");
    // A run the engine stopped before the CLI wrote any event has only its stderr.
    let events = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).unwrap_or_default();
    let stderr =
        std::fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default();
    (events, stderr)
}

fn parse(stream: &str) -> Vec<WorkerEvent> {
    stream.lines().flat_map(|l| Kilo.parse_line(l)).collect()
}

fn tools(events: &[WorkerEvent]) -> Vec<(String, ToolOutcome, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::ToolCall {
                name,
                outcome,
                edited,
                ..
            } => Some((name.clone(), *outcome, edited.clone())),
            _ => None,
        })
        .collect()
}

fn errors(events: &[WorkerEvent]) -> Vec<(String, Option<u16>)> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Error {
                message, status, ..
            } => Some((message.clone(), *status)),
            _ => None,
        })
        .collect()
}

fn classify(name: &str) -> FailureKind {
    let (events, stderr) = fixture(name);
    let parsed = parse(&events);
    Kilo.classify(&FailureEvidence {
        events: &parsed,
        stderr_tail: &stderr,
        exit_code: Some(1),
    })
}

const ALL: &[&str] = &[
    "read",
    "write-edit",
    "read-edit-denied",
    "bash-git-denied",
    "err404",
    "malformed-sse",
];

#[test]
fn read_run_yields_session_usage_cost_and_the_cited_answer() {
    let events = parse(&fixture("read").0);
    assert!(events
        .iter()
        .any(|e| matches!(e, WorkerEvent::Session { id } if id.starts_with("ses_"))));
    assert_eq!(tools(&events), vec![("read".into(), ToolOutcome::Ok, None)]);
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
    let edited: Vec<String> = tools(&parse(&fixture("write-edit").0))
        .into_iter()
        .filter_map(|(_, _, e)| e)
        .collect();
    assert_eq!(edited.len(), 3, "{edited:?}");
    assert!(edited.iter().any(|p| p.ends_with("/new file é.txt")));
}

#[test]
fn edits_in_read_mode_and_a_git_commit_are_denied() {
    let denied: Vec<String> = tools(&parse(&fixture("read-edit-denied").0))
        .into_iter()
        .filter(|(_, o, _)| *o == ToolOutcome::Denied)
        .map(|(n, _, _)| n)
        .collect();
    assert!(denied.iter().any(|n| n == "edit"), "{denied:?}");
    let git = tools(&parse(&fixture("bash-git-denied").0));
    assert!(
        git.iter()
            .any(|(n, o, _)| n == "bash" && *o == ToolOutcome::Denied),
        "{git:?}"
    );
}

#[test]
fn an_unknown_model_is_an_error_with_its_status() {
    let errs = errors(&parse(&fixture("err404").0));
    assert!(errs.iter().any(|(_, s)| *s == Some(404)), "{errs:?}");
    assert_eq!(classify("err404"), FailureKind::ModelUnavailable);
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
        let (events, stderr) = fixture(name);
        assert!(events.is_empty(), "{name}: stopped before any event");
        let signals: Vec<String> = stderr
            .lines()
            .filter_map(|l| Kilo.retry_signal(l))
            .collect();
        assert_eq!(signals.len(), 3, "{name}: {stderr}");
        assert_eq!(classify(name), kind, "{name}");
    }
    let (_, stderr) = fixture("err429");
    let first = stderr.lines().find_map(|l| Kilo.retry_signal(l));
    assert_eq!(first.as_deref(), Some("Rate limit reached for requests"));
}

#[test]
fn a_malformed_model_stream_is_an_error_not_an_answer() {
    let events = parse(&fixture("malformed-sse").0);
    assert!(!errors(&events).is_empty(), "{events:?}");
    assert!(events
        .iter()
        .all(|e| !matches!(e, WorkerEvent::Text { text, .. } if text.contains("SUMMARY"))));
}

#[test]
fn a_torn_last_line_loses_only_that_line() {
    for name in ALL {
        let (events, _) = fixture(name);
        let lines: Vec<&str> = events.lines().collect();
        let Some((last, before)) = lines.split_last() else {
            continue;
        };
        let cut = last
            .char_indices()
            .nth(last.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        let torn = format!("{}\n{}", before.join("\n"), &last[..cut]);
        assert_eq!(parse(&torn), parse(&before.join("\n")), "{name}");
    }
}

#[test]
fn noise_lines_between_events_change_nothing() {
    for name in ALL {
        let (events, _) = fixture(name);
        let noisy: String = events
            .lines()
            .map(|l| format!("Warning: noise\n{l}\n\n{{\"type\":\"done\"}}\n"))
            .collect();
        assert_eq!(parse(&noisy), parse(&events), "{name}");
    }
}
