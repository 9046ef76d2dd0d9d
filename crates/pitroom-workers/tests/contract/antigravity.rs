//! Contract tests of the Antigravity CLI adapter on streams **written by hand** from the CLI's
//! documented `stream-json` events and public captures (`fixtures/antigravity/`, see the README
//! there for the source of each shape). The adapter is unproven against the real CLI. Each
//! fixture is also checked torn and with noise lines mixed in.

use super::recorded::{texts, tools, usages};
use pitroom_workers::{ToolOutcome, Usage, WorkerEvent};

use super::ANTIGRAVITY as CLI;

#[test]
fn read_run_yields_the_conversation_one_tool_call_one_joined_answer_and_the_turns_usage() {
    let events = CLI.parse(&CLI.events("read"));
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
    let usage = usages(&events);
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
    let events = CLI.parse(&CLI.events("read-edit-denied"));
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
fn the_tokens_spent_before_a_failure_are_still_reported() {
    let events = CLI.parse(&CLI.events("quota"));
    assert!(events.iter().any(|e| matches!(
        e,
        WorkerEvent::StepFinished { usage: Some(u), .. } if u.input == 1200
    )));
}
