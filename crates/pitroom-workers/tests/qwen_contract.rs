//! Contract tests of the Qwen Code adapter on streams recorded from the real `qwen` 0.24.4
//! against the fake chat-completions server (`fixtures/qwen/`, written by the ignored test
//! `record_qwen_fixtures` in the `pitroom` crate; see the README there). Each fixture is also
//! checked torn (its last line cut in half) and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::qwen::Qwen;
use pitroom_workers::{Adapter, FailureEvidence, FailureKind, ToolOutcome, Usage, WorkerEvent};

fn fixture(name: &str) -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen");
    let events = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).expect("fixture");
    let stderr =
        std::fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default();
    (events, stderr)
}

/// Parses a whole stream with a fresh adapter, as one run does.
fn parse(stream: &str) -> Vec<WorkerEvent> {
    let qwen = Qwen::default();
    stream.lines().flat_map(|l| qwen.parse_line(l)).collect()
}

#[derive(Debug, Default)]
struct Summary {
    session: Option<String>,
    model: Option<String>,
    steps: usize,
    tools: Vec<(String, ToolOutcome)>,
    edited: Vec<String>,
    usage: Usage,
    texts: Vec<String>,
    errors: Vec<(String, Option<u16>)>,
}

fn summarize(events: &[WorkerEvent]) -> Summary {
    let mut s = Summary::default();
    for e in events {
        match e {
            WorkerEvent::Session { id } => s.session = Some(id.clone()),
            WorkerEvent::Model { name } => s.model = Some(name.clone()),
            WorkerEvent::StepFinished { usage, .. } => {
                s.steps += 1;
                if let Some(u) = usage {
                    s.usage.add(u);
                }
            }
            WorkerEvent::ToolCall {
                name,
                outcome,
                edited,
                ..
            } => {
                s.tools.push((name.clone(), *outcome));
                s.edited.extend(edited.clone());
            }
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
    Qwen::default().classify(&FailureEvidence {
        events: &parsed,
        stderr_tail: &stderr,
        exit_code: Some(1),
    })
}

const ALL: &[&str] = &[
    "read",
    "write-edit",
    "read-edit-denied",
    "err429",
    "err404",
    "err401",
    "err500",
    "malformed-sse",
];

#[test]
fn read_run_yields_session_usage_one_tool_call_and_the_cited_answer() {
    let s = summarize(&parse(&fixture("read").0));
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
    let s = summarize(&parse(&fixture("write-edit").0));
    assert_eq!(s.edited.len(), 3, "{s:?}");
    assert!(s.edited.iter().any(|p| p.ends_with("/calc.py")));
    assert!(s.edited.iter().any(|p| p.ends_with("/README.md")));
    assert!(s.edited.iter().any(|p| p.ends_with("/new file é.txt")));
    assert!(s.tools.iter().all(|(_, o)| *o == ToolOutcome::Ok), "{s:?}");
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
        denied.contains(&"edit") && denied.contains(&"write_file"),
        "{:?}",
        s.tools
    );
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
        let s = summarize(&parse(&fixture(name).0));
        assert!(
            s.texts.is_empty(),
            "{name}: an error is not an answer: {s:?}"
        );
        assert!(
            s.errors.iter().any(|(_, st)| *st == Some(status)),
            "{name}: {s:?}"
        );
        assert_eq!(classify(name), kind, "{name}");
    }
}

#[test]
fn a_malformed_model_stream_gives_no_answer() {
    let s = summarize(&parse(&fixture("malformed-sse").0));
    assert!(s.texts.iter().all(|t| !t.contains("SUMMARY")), "{s:?}");
}

#[test]
fn retried_model_errors_are_seen_in_stderr_as_they_happen() {
    let (_, stderr) = fixture("err429");
    let qwen = Qwen::default();
    let signals: Vec<String> = stderr
        .lines()
        .filter_map(|l| qwen.retry_signal(l))
        .collect();
    assert!(!signals.is_empty(), "{stderr}");
    assert!(signals[0].contains("429"), "{signals:?}");
    let (_, stderr) = fixture("err404");
    assert!(
        stderr.lines().all(|l| qwen.retry_signal(l).is_none()),
        "an unknown model is not retried"
    );
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
        let expected = parse(&before.join("\n"));
        assert_eq!(parse(&torn), expected, "{name}");
    }
}

#[test]
fn noise_lines_between_events_change_nothing() {
    for name in ALL {
        let (events, _) = fixture(name);
        let noisy: String = events
            .lines()
            .map(|l| format!("Warning: Basic terminal detected\n{l}\n\n{{\"type\":\"stream_event\",\"event\":{{}}}}\n"))
            .collect();
        assert_eq!(parse(&noisy), parse(&events), "{name}");
    }
}
