//! Contract tests of the Claude Code adapter on streams recorded from the real `claude` 2.1.332
//! against the fake Anthropic Messages API server (`fixtures/claude/`, written by the ignored
//! test `record_claude_fixtures` in the `pitroom` crate; see the README there), and on the
//! invocations it builds.

use std::path::PathBuf;

use super::recorded::{env_strings, errors, strings, summarize, texts, tools, user_login};
use pitroom_workers::claude::Claude;
use pitroom_workers::{Adapter, Mode, ToolOutcome, Usage, WorkerEvent};

use super::CLAUDE as CLI;

#[test]
fn read_run_yields_the_session_a_read_usage_cost_and_the_cited_answer() {
    let events = CLI.parse(&CLI.fixture("read").0);
    assert!(matches!(&events[0], WorkerEvent::Session { id } if id.len() == 36));
    assert_eq!(
        events[1],
        WorkerEvent::Model {
            name: "claude-opus-5-5".into()
        },
        "the init event names the model"
    );
    assert_eq!(tools(&events), vec![("Read".to_string(), ToolOutcome::Ok)]);
    let finished: Vec<(Option<Usage>, Option<f64>)> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::StepFinished { usage, cost, .. } => Some((*usage, *cost)),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(
        finished[0].0,
        Some(Usage {
            input: 2500,
            output: 80,
            reasoning: 0,
            cache_read: 1200,
            cache_write: 0
        })
    );
    assert!(finished[0].1.is_some_and(|c| c > 0.0));
    let last_text = texts(&events).pop();
    assert!(
        last_text.is_some_and(|t| t.contains("calc.py:7")),
        "{events:?}"
    );
}

#[test]
fn refused_calls_are_denied_under_the_tool_they_asked_for() {
    let cases = [
        ("read-edit-denied", vec!["Edit", "Write", "Edit"]),
        ("read-bash-denied", vec!["Bash"]),
        ("write-secret-denied", vec!["Read"]),
        ("write-git-commit-denied", vec!["Bash"]),
    ];
    for (name, expected) in cases {
        let events = CLI.parse(&CLI.fixture(name).0);
        let denied: Vec<String> = tools(&events)
            .into_iter()
            .filter(|(_, o)| *o == ToolOutcome::Denied)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(denied, expected, "{name}");
        assert!(summarize(&events).edited.is_empty(), "{name}");
    }
}

#[test]
fn a_dropped_stream_ends_as_an_error_not_an_answer() {
    let events = CLI.parse(&CLI.fixture("dropped-stream").0);
    let errs = errors(&events);
    assert_eq!(errs.len(), 1, "{events:?}");
    assert!(errs[0].0.contains("ede_diagnostic"), "{errs:?}");
}

/// The model the invocation tests pin (with effort `high`).
const MODEL: &str = "sonnet";

fn value_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

#[test]
fn no_mode_bypasses_permissions_and_read_and_write_differ() {
    let [read, write] =
        CLI.distinct_args_without(MODEL, "--dangerously bypassPermissions --yolo acceptEdits");
    for a in [&read, &write] {
        let line = a.join(" ");
        assert_eq!(value_after(a, "--permission-mode"), Some("dontAsk"));
        assert!(a.contains(&"--strict-mcp-config".to_string()));
        assert!(!line.contains("\"ask\""), "{line}");
    }
    assert_eq!(value_after(&read, "--tools"), Some("Read,Grep,Glob"));
    assert!(
        value_after(&write, "--tools").is_some_and(|t| t.contains("Edit") && t.contains("Bash"))
    );
}

#[test]
fn the_prompt_comes_on_stdin_after_a_final_double_dash() {
    let read = CLI.pinned_args(Mode::Read, MODEL);
    assert_eq!(read.last().map(String::as_str), Some("--"), "{read:?}");
    assert!(read.contains(&"-p".to_string()));
    let dir = tempfile::tempdir().unwrap();
    let mut req = CLI.pinned_request(Mode::Read, dir.path(), MODEL);
    req.resume_session = Some("2d295e58-2c0f-45e7-a7b5-8325a6dfbc8f".into());
    let inv = Claude.invocation(&req).expect("invocation");
    let a = strings(&inv.args);
    assert_eq!(
        value_after(&a, "--resume"),
        Some("2d295e58-2c0f-45e7-a7b5-8325a6dfbc8f")
    );
    assert_eq!(a.last().map(String::as_str), Some("--"));
}

#[test]
fn each_run_has_a_private_config_dir_with_the_users_login_linked_in_and_retries_off() {
    let dir = tempfile::tempdir().unwrap();
    let user = user_login(dir.path(), ".claude", ".credentials.json");
    let inv = Claude
        .invocation(&CLI.pinned_request(Mode::Write, dir.path(), MODEL))
        .expect("invocation");
    let env = env_strings(&inv.env);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let config = PathBuf::from(get("CLAUDE_CONFIG_DIR").expect("config dir"));
    assert!(config.starts_with(dir.path().join("shared")));
    assert_eq!(get("CLAUDE_CODE_MAX_RETRIES").as_deref(), Some("0"));
    assert_eq!(
        get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC").as_deref(),
        Some("1")
    );
    assert_eq!(
        inv.links,
        vec![(
            config.join(".credentials.json"),
            user.join(".credentials.json")
        )]
    );
}
