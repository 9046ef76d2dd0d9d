//! Contract tests of the Cursor CLI adapter on streams **written by hand** from Cursor's
//! documented `stream-json` format (`fixtures/cursor/`, see the README there for the source of
//! each shape). The adapter is unproven against the real CLI: these tests pin the documented
//! format, not a recorded one. Each fixture is also checked torn and with noise lines mixed in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::path::PathBuf;

use pitroom_workers::cursor::Cursor;
use pitroom_workers::{
    Adapter, FailureEvidence, FailureKind, InvocationRequest, Mode, StateDirs, ToolOutcome,
    WorkerEvent,
};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cursor")
}

fn fixture(name: &str) -> (String, String) {
    let events = std::fs::read_to_string(dir().join(format!("{name}.jsonl"))).expect("fixture");
    let stderr =
        std::fs::read_to_string(dir().join(format!("{name}.stderr.txt"))).unwrap_or_default();
    (events, stderr)
}

/// Parses a whole stream with a fresh adapter, as one run does.
fn parse(stream: &str) -> Vec<WorkerEvent> {
    let cursor = Cursor::default();
    stream.lines().flat_map(|l| cursor.parse_line(l)).collect()
}

fn classify(name: &str) -> FailureKind {
    let (events, stderr) = fixture(name);
    let parsed = parse(&events);
    Cursor::default().classify(&FailureEvidence {
        events: &parsed,
        stderr_tail: &stderr,
        exit_code: Some(1),
    })
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

fn texts(events: &[WorkerEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

const ALL: &[&str] = &[
    "read",
    "write-edit",
    "write-shell-denied",
    "unknown-model",
    "usage-limit",
    "not-logged-in",
    "error-result",
];

#[test]
fn read_run_yields_the_session_one_read_the_cited_answer_and_no_usage() {
    let events = parse(&fixture("read").0);
    assert!(matches!(&events[0], WorkerEvent::Session { id } if id.starts_with("2f6c9a8e")));
    assert_eq!(
        events[1],
        WorkerEvent::Model {
            name: "Auto".into()
        },
        "the init event names the model (Cursor's automatic choice)"
    );
    assert_eq!(
        tools(&events),
        vec![("read".to_string(), ToolOutcome::Ok, None)]
    );
    let answer = texts(&events).pop().expect("an answer");
    assert!(
        answer.starts_with("SUMMARY: divide() has no zero check: calc.py:2"),
        "{answer}"
    );
    let finished: Vec<&WorkerEvent> = events
        .iter()
        .filter(|e| matches!(e, WorkerEvent::StepFinished { .. }))
        .collect();
    assert_eq!(
        finished,
        vec![&WorkerEvent::StepFinished {
            reason: Some("stop".into()),
            usage: None,
            cost: None
        }],
        "the documented stream has no usage: n/a, never a made-up zero"
    );
}

#[test]
fn write_run_reports_each_edited_file_and_the_shell_call() {
    let events = parse(&fixture("write-edit").0);
    let edited: Vec<String> = tools(&events).into_iter().filter_map(|t| t.2).collect();
    assert_eq!(edited, vec!["/work/proj/calc.py", "/work/proj/NOTES.txt"]);
    assert!(tools(&events)
        .iter()
        .any(|(n, o, e)| n == "shell" && *o == ToolOutcome::Ok && e.is_none()));
}

#[test]
fn a_call_refused_by_a_deny_rule_is_denied_and_edits_nothing() {
    let events = parse(&fixture("write-shell-denied").0);
    assert_eq!(
        tools(&events),
        vec![("shell".to_string(), ToolOutcome::Denied, None)]
    );
}

#[test]
fn failures_reported_on_stderr_classify_and_are_never_answers() {
    for (name, kind) in [
        ("unknown-model", FailureKind::ModelUnavailable),
        ("usage-limit", FailureKind::RateLimited),
        ("not-logged-in", FailureKind::Auth),
    ] {
        assert!(texts(&parse(&fixture(name).0)).is_empty(), "{name}");
        assert_eq!(classify(name), kind, "{name}");
    }
}

#[test]
fn an_error_result_is_an_error_not_an_answer() {
    let events = parse(&fixture("error-result").0);
    assert!(texts(&events).is_empty());
    assert!(events
        .iter()
        .any(|e| matches!(e, WorkerEvent::Error { message, .. } if message.contains("500"))));
    assert_eq!(classify("error-result"), FailureKind::Other);
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
            .map(|l| format!("T: banner\n{l}\n\n{{\"type\":\"future_event\"}}\n"))
            .collect();
        assert_eq!(parse(&noisy), parse(&events), "{name}");
    }
}

fn request(mode: Mode, root: &std::path::Path) -> InvocationRequest {
    InvocationRequest {
        mode,
        model: None,
        effort: Some("high".into()),
        web: false,
        workdir: root.join("work"),
        dirs: StateDirs {
            shared: root.join("shared"),
            scratch: root.join("scratch"),
        },
        resume_session: Some("2f6c9a8e".into()),
        title: "t".into(),
        env: vec![("PITROOM_CURSOR_BIN".into(), "/bin/true".into())],
    }
}

#[test]
fn the_launch_resumes_the_session_drops_effort_and_never_forces() {
    let root = tempfile::tempdir().unwrap();
    for mode in [Mode::Read, Mode::Write, Mode::Isolate] {
        let inv = Cursor::default()
            .invocation(&request(mode, root.path()))
            .unwrap();
        let args: Vec<String> = inv
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let cli = &args[args.iter().position(|a| a == "--").unwrap() + 1..];
        assert!(
            cli.windows(2).any(|w| w == ["--resume", "2f6c9a8e"]),
            "{cli:?}"
        );
        assert!(cli
            .windows(2)
            .any(|w| w == ["--output-format", "stream-json"]));
        assert!(!cli
            .iter()
            .any(|a| a == "--force" || a == "-f" || a == "--yolo"));
        assert!(inv
            .notes
            .iter()
            .any(|n| n.contains("--effort high dropped")));
    }
}
