//! Contract tests of the Cursor CLI adapter on streams **written by hand** from Cursor's
//! documented `stream-json` format (`fixtures/cursor/`, see the README there for the source of
//! each shape). The adapter is unproven against the real CLI: these tests pin the documented
//! format, not a recorded one. Each fixture is also checked torn and with noise lines mixed in.

use super::recorded::{strings, texts, tool_edits};
use pitroom_workers::cursor::Cursor;
use pitroom_workers::{Adapter, FailureKind, InvocationRequest, Mode, ToolOutcome, WorkerEvent};

use super::CURSOR as CLI;

#[test]
fn read_run_yields_the_session_one_read_the_cited_answer_and_no_usage() {
    let events = CLI.parse(&CLI.fixture("read").0);
    assert!(matches!(&events[0], WorkerEvent::Session { id } if id.starts_with("2f6c9a8e")));
    assert_eq!(
        events[1],
        WorkerEvent::Model {
            name: "Auto".into()
        },
        "the init event names the model (Cursor's automatic choice)"
    );
    assert_eq!(
        tool_edits(&events),
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
    let events = CLI.parse(&CLI.fixture("write-edit").0);
    let edited: Vec<String> = tool_edits(&events)
        .into_iter()
        .filter_map(|t| t.2)
        .collect();
    assert_eq!(edited, vec!["/work/proj/calc.py", "/work/proj/NOTES.txt"]);
    assert!(tool_edits(&events)
        .iter()
        .any(|(n, o, e)| n == "shell" && *o == ToolOutcome::Ok && e.is_none()));
}

#[test]
fn a_call_refused_by_a_deny_rule_is_denied_and_edits_nothing() {
    let events = CLI.parse(&CLI.fixture("write-shell-denied").0);
    assert_eq!(
        tool_edits(&events),
        vec![("shell".to_string(), ToolOutcome::Denied, None)]
    );
}

#[test]
fn an_error_result_is_an_error_not_an_answer() {
    let events = CLI.parse(&CLI.fixture("error-result").0);
    assert!(texts(&events).is_empty());
    assert!(events
        .iter()
        .any(|e| matches!(e, WorkerEvent::Error { message, .. } if message.contains("500"))));
    assert_eq!(CLI.classify("error-result"), FailureKind::Other);
}

fn request(mode: Mode, root: &std::path::Path) -> InvocationRequest {
    InvocationRequest {
        model: None,
        effort: Some("high".into()),
        resume_session: Some("2f6c9a8e".into()),
        ..CLI.request(mode, root)
    }
}

#[test]
fn the_launch_resumes_the_session_drops_effort_and_never_forces() {
    let root = tempfile::tempdir().unwrap();
    for mode in [Mode::Read, Mode::Write, Mode::Isolate] {
        let inv = Cursor.invocation(&request(mode, root.path())).unwrap();
        let cli = strings(&inv.args);
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
