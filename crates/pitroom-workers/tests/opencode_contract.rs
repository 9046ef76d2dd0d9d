//! Contract tests of the OpenCode adapter on streams recorded from the real `opencode` 1.18.33
//! against the fake model server (`fixtures/opencode/`, written by the ignored test
//! `record_opencode_fixtures` in the `pitroom` crate). Each fixture is also checked torn (its
//! last line cut in half, as when the stream is read live) and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::opencode::OpenCode;
use pitroom_workers::{Adapter, FailureEvidence, FailureKind, ToolOutcome, Usage, WorkerEvent};

fn fixture(name: &str) -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode");
    let events = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).expect("fixture");
    let stderr =
        std::fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default();
    (events, stderr)
}

fn parse(stream: &str) -> Vec<WorkerEvent> {
    stream
        .lines()
        .flat_map(|l| OpenCode.parse_line(l))
        .collect()
}

/// What a run's events add up to.
#[derive(Debug, Default)]
struct Summary {
    session: Option<String>,
    model: Option<String>,
    steps: usize,
    tools: Vec<(String, ToolOutcome)>,
    usage: Usage,
    texts: Vec<String>,
    errors: Vec<(String, Option<u16>)>,
    empty_steps: usize,
}

fn summarize(events: &[WorkerEvent]) -> Summary {
    let mut s = Summary::default();
    for e in events {
        match e {
            WorkerEvent::Session { id } => s.session = Some(id.clone()),
            WorkerEvent::Model { name } => s.model = Some(name.clone()),
            WorkerEvent::StepFinished { usage, .. } => {
                s.steps += 1;
                if e.is_empty_step() {
                    s.empty_steps += 1;
                }
                if let Some(u) = usage {
                    s.usage.add(u);
                }
            }
            WorkerEvent::ToolCall { name, outcome, .. } => s.tools.push((name.clone(), *outcome)),
            WorkerEvent::Text { text, .. } => s.texts.push(text.clone()),
            WorkerEvent::Error {
                message, status, ..
            } => s.errors.push((message.clone(), *status)),
            WorkerEvent::StepStarted => {}
        }
    }
    s
}

fn classify(name: &str) -> FailureKind {
    let (events, stderr) = fixture(name);
    let parsed = parse(&events);
    OpenCode.classify(&FailureEvidence {
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
    "bash-write",
    "err404",
    "err429",
    "err500",
    "malformed-sse",
    "unknown-model",
    "no-finish-reason",
];

#[test]
fn read_run_yields_session_steps_usage_and_the_cited_answer() {
    let s = summarize(&parse(&fixture("read").0));
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
fn write_run_reports_edits_with_their_files() {
    let events = parse(&fixture("write-edit").0);
    let edited: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::ToolCall {
                edited: Some(path), ..
            } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(edited.len(), 3, "{edited:?}");
    assert!(edited.iter().any(|p| p.ends_with("/calc.py")));
    assert!(edited.iter().any(|p| p.ends_with("/new file é.txt")));
}

#[test]
fn edits_in_read_mode_are_denied_under_the_tool_they_asked_for() {
    let s = summarize(&parse(&fixture("read-edit-denied").0));
    let denied: Vec<&str> = s
        .tools
        .iter()
        .filter(|(_, o)| *o == ToolOutcome::Denied)
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(
        denied.contains(&"edit") && denied.contains(&"write"),
        "{:?}",
        s.tools
    );
}

#[test]
fn a_denied_git_commit_is_counted_as_denied() {
    let s = summarize(&parse(&fixture("bash-git-denied").0));
    assert!(
        s.tools.contains(&("bash".to_string(), ToolOutcome::Denied)),
        "{:?}",
        s.tools
    );
}

#[test]
fn http_errors_keep_their_status_and_classify() {
    let cases = [
        ("err404", Some(404), FailureKind::ModelUnavailable),
        ("err429", Some(429), FailureKind::RateLimited),
        ("err500", Some(500), FailureKind::Other),
    ];
    for (name, status, kind) in cases {
        let s = summarize(&parse(&fixture(name).0));
        assert_eq!(s.errors.len(), 1, "{name}");
        assert_eq!(s.errors[0].1, status, "{name}");
        assert_eq!(classify(name), kind, "{name}");
    }
}

#[test]
fn unknown_model_is_explained_only_by_the_logs() {
    let s = summarize(&parse(&fixture("unknown-model").0));
    assert!(s.errors[0].0.contains("Unexpected server error"));
    assert_eq!(classify("unknown-model"), FailureKind::ModelUnavailable);
}

#[test]
fn malformed_stream_is_an_error_not_an_answer() {
    let s = summarize(&parse(&fixture("malformed-sse").0));
    assert!(s.errors[0].0.contains("JSON parsing failed"));
    assert!(s.texts.is_empty());
    assert_eq!(classify("malformed-sse"), FailureKind::Other);
}

#[test]
fn the_endless_loop_shows_as_empty_steps() {
    let s = summarize(&parse(&fixture("no-finish-reason").0));
    assert!(s.steps >= 3, "{s:?}");
    assert_eq!(s.empty_steps, s.steps, "every step lacks a finish reason");
}

#[test]
fn a_torn_last_line_loses_only_that_line() {
    for name in ALL {
        let (events, _) = fixture(name);
        let lines: Vec<&str> = events.lines().collect();
        let Some((last, before)) = lines.split_last() else {
            continue;
        };
        let torn = format!("{}\n{}", before.join("\n"), &last[..last.len() / 2]);
        let expected: Vec<WorkerEvent> =
            before.iter().flat_map(|l| OpenCode.parse_line(l)).collect();
        assert_eq!(parse(&torn), expected, "{name}");
    }
}

#[test]
fn noise_lines_between_events_change_nothing() {
    for name in ALL {
        let (events, _) = fixture(name);
        let noisy: String = events
            .lines()
            .map(|l| format!("Warning: something on stdout\n{l}\n\n{{\"type\":\"done\",\"reason\":\"idle\"}}\n"))
            .collect();
        assert_eq!(parse(&noisy), parse(&events), "{name}");
    }
}

#[test]
fn retried_model_errors_are_seen_in_stderr_as_they_happen() {
    let (_, stderr) = fixture("err429");
    let signals: Vec<String> = stderr
        .lines()
        .filter_map(|l| OpenCode.retry_signal(l))
        .collect();
    assert!(signals.len() >= 3, "{stderr}");
    assert_eq!(signals[0], "Rate limit reached for requests");
    let (_, stderr) = fixture("unknown-model");
    assert!(
        stderr.lines().all(|l| OpenCode.retry_signal(l).is_none()),
        "not a retry"
    );
}
