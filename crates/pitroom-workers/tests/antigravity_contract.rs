//! Contract tests of the Antigravity CLI adapter on streams **written by hand** from the CLI's
//! documented `stream-json` events and public captures (`fixtures/antigravity/`, see the README
//! there for the source of each shape). The adapter is unproven against the real CLI. Each
//! fixture is also checked torn and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::antigravity::Antigravity;
use pitroom_workers::{Adapter, FailureEvidence, FailureKind, ToolOutcome, Usage, WorkerEvent};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/antigravity")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(dir().join(format!("{name}.jsonl"))).expect("fixture")
}

fn parse(stream: &str) -> Vec<WorkerEvent> {
    let agy = Antigravity::default();
    stream.lines().flat_map(|l| agy.parse_line(l)).collect()
}

fn classify(name: &str) -> FailureKind {
    let parsed = parse(&fixture(name));
    Antigravity::default().classify(&FailureEvidence {
        events: &parsed,
        stderr_tail: "",
        exit_code: Some(1),
    })
}

fn texts(events: &[WorkerEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn tools(events: &[WorkerEvent]) -> Vec<(String, ToolOutcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::ToolCall { name, outcome, .. } => Some((name.clone(), *outcome)),
            _ => None,
        })
        .collect()
}

const ALL: &[&str] = &[
    "read",
    "read-edit-denied",
    "quota",
    "not-signed-in",
    "unknown-model",
];

#[test]
fn read_run_yields_the_conversation_one_tool_call_one_joined_answer_and_the_turns_usage() {
    let events = parse(&fixture("read"));
    assert!(
        matches!(&events[0], WorkerEvent::Session { id } if id == "3b4a1d20-3968-4ed2-90b3-00eea3060b02")
    );
    assert_eq!(
        tools(&events),
        vec![("view_file".to_string(), ToolOutcome::Ok)]
    );
    assert_eq!(
        texts(&events),
        vec!["SUMMARY: divide() has no zero check: calc.py:2\nDETAILS: b == 0 raises ZeroDivisionError."]
    );
    let usage: Vec<Usage> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::StepFinished { usage, .. } => *usage,
            _ => None,
        })
        .collect();
    assert_eq!(
        usage,
        vec![Usage {
            input: 9400,
            output: 40,
            reasoning: 12,
            cache_read: 8800,
            cache_write: 0
        }]
    );
}

#[test]
fn non_read_tools_in_a_read_run_are_denied() {
    let events = parse(&fixture("read-edit-denied"));
    assert_eq!(
        tools(&events),
        vec![
            ("run_command".to_string(), ToolOutcome::Denied),
            ("write_to_file".to_string(), ToolOutcome::Denied)
        ]
    );
    assert!(events.iter().all(|e| !matches!(
        e,
        WorkerEvent::ToolCall {
            edited: Some(_),
            ..
        }
    )));
}

#[test]
fn error_results_are_errors_never_answers_and_classify() {
    for (name, kind) in [
        ("quota", FailureKind::RateLimited),
        ("not-signed-in", FailureKind::Auth),
        ("unknown-model", FailureKind::ModelUnavailable),
    ] {
        let events = parse(&fixture(name));
        assert!(texts(&events).is_empty(), "{name}");
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, WorkerEvent::Error { .. }))
                .count(),
            1,
            "{name}: {events:?}"
        );
        assert_eq!(classify(name), kind, "{name}");
    }
}

#[test]
fn the_tokens_spent_before_a_failure_are_still_reported() {
    let events = parse(&fixture("quota"));
    assert!(events.iter().any(|e| matches!(
        e,
        WorkerEvent::StepFinished { usage: Some(u), .. } if u.input == 1200
    )));
}

#[test]
fn a_torn_last_line_loses_only_that_line() {
    for name in ALL {
        let text = fixture(name);
        let lines: Vec<&str> = text.lines().collect();
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
        let text = fixture(name);
        let noisy: String = text
            .lines()
            .map(|l| format!("Loading…\n{l}\n\n{{\"event\":\"future_event\"}}\n"))
            .collect();
        assert_eq!(parse(&noisy), parse(&text), "{name}");
    }
}
