//! Contract tests of the Codex adapter on streams recorded from the real `codex` 0.171.0
//! against the fake Responses API server (`fixtures/codex/`, written by the ignored test
//! `record_codex_fixtures` in the `pitroom` crate; see the README there), and on the
//! invocations it builds.

use std::path::PathBuf;

use super::recorded::{env_strings, errors, summarize, texts, tool_calls, usages, user_login};
use pitroom_workers::codex::Codex;
use pitroom_workers::{Adapter, Mode, ToolOutcome, Usage, WorkerEvent};

use super::CODEX as CLI;

#[test]
fn read_run_yields_the_thread_a_shell_call_usage_and_the_cited_answer() {
    let events = CLI.parse(&CLI.fixture("read").0);
    assert!(matches!(&events[0], WorkerEvent::Session { id } if id.len() == 36));
    let tools: Vec<(&str, ToolOutcome, &str)> = tool_calls(&events)
        .into_iter()
        .map(|(name, outcome, summary, _)| (name, outcome, summary))
        .collect();
    assert_eq!(
        tools,
        vec![("shell", ToolOutcome::Ok, "grep -n 'def divide' calc.py")]
    );
    let usage = usages(&events);
    assert_eq!(
        usage,
        vec![Usage {
            input: 1300,
            output: 73,
            reasoning: 7,
            cache_read: 1200,
            cache_write: 0
        }]
    );
    let last_text = texts(&events).pop();
    assert!(
        last_text.is_some_and(|t| t.contains("calc.py:7")),
        "{events:?}"
    );
    assert!(errors(&events).is_empty());
}

#[test]
fn writes_refused_by_the_sandbox_show_only_on_stderr_and_become_denied_calls() {
    for name in ["read-shell-write-refused", "read-patch-refused"] {
        let (events, stderr) = CLI.fixture(name);
        let from_stdout = CLI.parse(&events);
        assert!(
            summarize(&from_stdout).edited.is_empty(),
            "{name}: no edit reported"
        );
        let denied: Vec<WorkerEvent> = stderr
            .lines()
            .flat_map(|l| Codex.stderr_events(l))
            .collect();
        assert!(
            matches!(
                &denied[..],
                [WorkerEvent::ToolCall {
                    outcome: ToolOutcome::Denied,
                    ..
                }]
            ),
            "{name}: {denied:?}"
        );
    }
}

/// The model the invocation tests pin (with effort `high`).
const MODEL: &str = "gpt-5.5";

#[test]
fn no_mode_bypasses_the_sandbox_and_read_and_write_differ() {
    let [read, write] = CLI.distinct_args_without(
        MODEL,
        "--dangerously danger-full-access --yolo bypass --full-auto",
    );
    for a in [&read, &write] {
        let line = a.join(" ");
        assert!(line.contains("approval_policy=\"never\""), "{line}");
        assert!(line.contains("--ignore-user-config"), "{line}");
        assert!(
            line.contains("features.plugins=false") && line.contains("analytics.enabled=false")
        );
    }
    assert!(read.join(" ").contains("sandbox_mode=\"read-only\""));
    assert!(write.join(" ").contains("sandbox_mode=\"workspace-write\""));
}

#[test]
fn the_prompt_is_read_whole_from_stdin_and_a_resume_names_the_thread() {
    let read = CLI.pinned_args(Mode::Read, MODEL);
    assert_eq!(read.last().map(String::as_str), Some("-"), "{read:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut req = CLI.pinned_request(Mode::Read, dir.path(), MODEL);
    req.resume_session = Some("01a229d6-9661-7662-80bc-3014460b086c".into());
    let inv = Codex.invocation(&req).expect("invocation");
    let tail: Vec<String> = inv.args[inv.args.len() - 3..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        tail,
        vec!["resume", "01a229d6-9661-7662-80bc-3014460b086c", "-"]
    );
}

#[test]
fn each_run_has_a_private_codex_home_with_the_users_login_linked_in() {
    let dir = tempfile::tempdir().unwrap();
    let user_home = user_login(dir.path(), ".codex", "auth.json");
    let req = CLI.pinned_request(Mode::Write, dir.path(), MODEL);
    let inv = Codex.invocation(&req).expect("invocation");
    let env = env_strings(&inv.env);
    let home = env
        .iter()
        .find(|(k, _)| k == "CODEX_HOME")
        .map(|(_, v)| PathBuf::from(v));
    assert!(
        home.as_ref()
            .is_some_and(|h| h.starts_with(dir.path().join("shared"))),
        "{env:?}"
    );
    assert_eq!(
        inv.links,
        vec![(home.unwrap().join("auth.json"), user_home.join("auth.json"))]
    );
}
