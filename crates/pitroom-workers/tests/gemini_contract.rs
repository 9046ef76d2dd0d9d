//! Contract tests of the Gemini CLI adapter on streams recorded from the real `gemini` 0.61.0
//! against the test kit's fake Gemini API (`fixtures/gemini/`, written by the ignored test
//! `record_gemini_fixtures` in the `pitroom` crate; see the README there). Each fixture is also
//! checked torn (its last line cut in half) and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::gemini::Gemini;
use pitroom_workers::{Adapter, FailureEvidence, FailureKind, ToolOutcome, Usage, WorkerEvent};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini")
}

fn fixture(name: &str) -> (String, String) {
    let events = std::fs::read_to_string(dir().join(format!("{name}.jsonl"))).expect("fixture");
    let stderr =
        std::fs::read_to_string(dir().join(format!("{name}.stderr.txt"))).unwrap_or_default();
    (events, stderr)
}

/// The exit code the real CLI ended with (the HTTP status mod 256 on API errors).
fn exit_code(name: &str) -> Option<i32> {
    std::fs::read_to_string(dir().join(format!("{name}.exit")))
        .ok()
        .and_then(|c| c.trim().parse().ok())
}

/// Parses a whole stream with a fresh adapter, as one run does.
fn parse(stream: &str) -> Vec<WorkerEvent> {
    let gemini = Gemini::default();
    stream.lines().flat_map(|l| gemini.parse_line(l)).collect()
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
    Gemini::default().classify(&FailureEvidence {
        events: &parsed,
        stderr_tail: &stderr,
        exit_code: exit_code(name),
    })
}

const ALL: &[&str] = &[
    "read",
    "write-edit",
    "read-edit-denied",
    "err429",
    "quota-daily",
    "err404",
    "err400-key",
    "err403",
    "err500",
    "malformed-sse",
];

#[test]
fn read_run_yields_session_usage_one_tool_call_and_one_joined_answer() {
    let s = summarize(&parse(&fixture("read").0));
    assert!(s.session.is_some());
    assert_eq!(
        s.model.as_deref(),
        Some("gemini-2.5-pro"),
        "the init event names it"
    );
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
    let answer = s.texts.last().expect("an answer");
    assert!(
        answer.starts_with("SUMMARY: divide() has no zero check: calc.py:7\nDETAILS"),
        "the chunks are joined without separators: {answer:?}"
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
        denied.contains(&"replace") && denied.contains(&"write_file"),
        "{:?}",
        s.tools
    );
    assert!(s.edited.is_empty());
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
        let s = summarize(&parse(&fixture(name).0));
        assert!(
            s.texts.is_empty(),
            "{name}: an error is not an answer: {s:?}"
        );
        assert_eq!(s.errors.len(), 1, "{name}: {s:?}");
        assert_eq!(exit_code(name), exit, "{name}: exit = HTTP status mod 256");
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
    let gemini = Gemini::default();
    let signals: Vec<String> = stderr
        .lines()
        .filter_map(|l| gemini.retry_signal(l))
        .collect();
    assert_eq!(signals.len(), 2, "maxAttempts 2: {stderr}");
    assert!(
        signals[0].contains("Resource has been exhausted"),
        "{signals:?}"
    );
    for name in ["err404", "quota-daily", "err400-key"] {
        let (_, stderr) = fixture(name);
        assert!(
            stderr.lines().all(|l| gemini.retry_signal(l).is_none()),
            "{name} is not retried"
        );
    }
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
            .map(|l| {
                format!("Warning: Basic terminal detected\n{l}\n\n{{\"type\":\"future_event\"}}\n")
            })
            .collect();
        assert_eq!(parse(&noisy), parse(&events), "{name}");
    }
}
