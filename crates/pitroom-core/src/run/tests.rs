//! Unit tests of the run's stages that need no worker: the stream's reading of events, the
//! judge and the fallback decision, paths, the worker's environment, sandbox notes, verify.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use pitroom_workers::{Mode, ToolOutcome, WorkerEvent};

use super::launch::worker_env;
use super::paths::{project_relative, rewrite_paths};
use super::stream::{own_usage_of_follow_up, FileTail, Stream};
use crate::record::{RunRecord, RunSpec};

#[test]
fn a_step_in_a_read_copy_names_the_project_path() {
    let roots = vec![
        "/s/snapshots/d4ae/".to_string(),
        "/home/u/proj/".to_string(),
    ];
    assert_eq!(
        project_relative("read /s/snapshots/d4ae/src/calc.py", &roots),
        "read src/calc.py"
    );
    assert_eq!(
        project_relative("grep x /home/u/proj/src", &roots),
        "grep x src"
    );
    assert_eq!(project_relative("list /home/u/proj", &roots), "list .");
    assert_eq!(
        project_relative("read /etc/hosts", &roots),
        "read /etc/hosts"
    );
}

fn text(m: &str, t: &str) -> WorkerEvent {
    WorkerEvent::Text {
        message: Some(m.into()),
        text: t.into(),
    }
}

fn blank_record() -> RunRecord {
    let spec = RunSpec {
        timeout_secs: 1.0,
        watchdog_secs: 1.0,
        verify_timeout_secs: 60.0,
        ..RunSpec::new("t", Mode::Read, "opencode", "/")
    };
    RunRecord::new("x".into(), spec, "now".into())
}

#[test]
fn a_follow_up_of_a_cli_reporting_session_totals_counts_only_its_own_usage() {
    let mut parent = blank_record();
    parent.tally.usage.input = 2500;
    let mut second = blank_record();
    let mut stream = Stream::default();
    stream.tally.usage.input = 5000;
    stream.tally.usage.output = 30;
    own_usage_of_follow_up(&mut second, &mut stream, Some(&parent));
    assert_eq!(stream.tally.usage.input, 2500);
    assert_eq!(stream.tally.usage.output, 30);
    assert_eq!(second.session_usage.map(|u| u.input), Some(5000));
    // The next follow-up subtracts the session's total so far, not the parent's share.
    let mut third = blank_record();
    let mut stream = Stream::default();
    stream.tally.usage.input = 7000;
    own_usage_of_follow_up(&mut third, &mut stream, Some(&second));
    assert_eq!(stream.tally.usage.input, 2000);
}

#[test]
fn the_answer_is_the_last_message_that_said_anything() {
    let mut s = Stream::default();
    let mut r = blank_record();
    s.absorb(vec![text("m1", "Let me look.")], &mut r);
    s.absorb(
        vec![text("m2", "SUMMARY: a"), text("m2", "DETAILS: b")],
        &mut r,
    );
    s.absorb(vec![text("m3", "  ")], &mut r);
    assert_eq!(s.answer().as_deref(), Some("SUMMARY: a\nDETAILS: b"));
}

#[test]
fn empty_steps_in_a_row_trip_the_watchdog_only_after_the_limit() {
    let mut s = Stream::default();
    let mut r = blank_record();
    let empty = WorkerEvent::StepFinished {
        reason: Some("unknown".into()),
        usage: None,
        cost: Some(0.0),
    };
    s.absorb(vec![text("m", "partial")], &mut r);
    for _ in 0..5 {
        s.absorb(vec![WorkerEvent::StepStarted, empty.clone()], &mut r);
    }
    assert!(s.stalled(Duration::ZERO));
    assert!(!s.stalled(Duration::from_secs(3600)));
    s.absorb(vec![text("m", "partial again")], &mut r);
    assert!(s.stalled(Duration::ZERO), "repeated text is no progress");
    let done = WorkerEvent::StepFinished {
        reason: Some("stop".into()),
        usage: None,
        cost: None,
    };
    s.absorb(vec![done], &mut r);
    assert!(!s.stalled(Duration::ZERO));
}

#[test]
fn tally_counts_steps_tools_denials_and_cost() {
    let mut s = Stream::default();
    let mut r = blank_record();
    s.absorb(
        vec![
            WorkerEvent::Session { id: "ses_1".into() },
            WorkerEvent::ToolCall {
                name: "edit".into(),
                summary: "a".into(),
                outcome: ToolOutcome::Denied,
                error: None,
                edited: None,
            },
            WorkerEvent::ToolCall {
                name: "read".into(),
                summary: "b".into(),
                outcome: ToolOutcome::Ok,
                error: None,
                edited: None,
            },
            WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: Some(pitroom_workers::Usage {
                    input: 10,
                    output: 2,
                    ..Default::default()
                }),
                cost: Some(0.5),
            },
        ],
        &mut r,
    );
    assert_eq!(r.session.as_deref(), Some("ses_1"));
    assert_eq!(
        (s.tally.steps, s.tally.tool_calls, s.tally.denied_calls),
        (1, 2, 1)
    );
    assert_eq!(s.tally.cost, Some(0.5));
    assert_eq!(r.last.as_deref(), Some("read b"));
}

#[test]
fn file_tail_hands_over_complete_lines_as_they_are_appended() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stderr.log");
    let mut tail = FileTail::new(path.clone());
    let mut seen = Vec::new();
    tail.poll(|l| seen.push(l.to_string()));
    assert!(seen.is_empty(), "no file yet");
    let mut f = File::create(&path).unwrap();
    write!(f, "one\ntw").unwrap();
    tail.poll(|l| seen.push(l.to_string()));
    write!(f, "o\nthree\n").unwrap();
    tail.poll(|l| seen.push(l.to_string()));
    assert_eq!(seen, vec!["one", "two", "three"]);
}

#[test]
fn copy_paths_in_answers_become_project_paths() {
    let out = rewrite_paths(
        "see /h/snap/abc/src/a.rs:3",
        Path::new("/h/snap/abc"),
        Path::new("/p"),
    );
    assert_eq!(out, "see /p/src/a.rs:3");
}

#[test]
fn worker_env_applies_removals_settings_and_floor() {
    let base = vec![
        ("OPENCODE_CONFIG".to_string(), "x".to_string()),
        ("PATH".to_string(), "/bin".to_string()),
        ("PAGER".to_string(), "less".to_string()),
    ];
    let inv = pitroom_workers::Invocation {
        program: "opencode".into(),
        args: vec![],
        env: vec![("A".into(), "1".into())],
        env_remove: vec!["OPENCODE_CONFIG".into()],
        notes: vec![],
        links: vec![],
    };
    let env = worker_env(&base, &inv);
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    assert_eq!(get("OPENCODE_CONFIG"), None);
    assert_eq!(get("PATH").as_deref(), Some("/bin"));
    assert_eq!(get("A").as_deref(), Some("1"));
    assert_eq!(get("PAGER").as_deref(), Some("cat"));
    assert_eq!(get("PITROOM_ACTIVE").as_deref(), Some("1"));
}
