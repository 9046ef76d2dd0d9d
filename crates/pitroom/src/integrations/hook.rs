//! Host hooks: `pitroom hook session-start` (SessionStart: the using-pitroom text as context),
//! `pitroom hook-card` (PostToolUse / AfterTool: a short card per run the agent started) and
//! `pitroom hook review-gate` (Stop: the stop-time review gate, docs/review-gate.md).
//!
//! A hook must never break the host's session: bad input, an unreadable state dir or a run that
//! cannot be loaded print nothing on stdout and exit 0 (a note goes to stderr, which hosts keep
//! in their debug log). Output strings stay under the hosts' 10,000-character cap.

use std::io::{IsTerminal, Read};

use pitroom_service::{GateOutcome, GateRequest, Pass, RunRecord};
use serde_json::{json, Value};

use super::card;
use super::skills;
use crate::output::{say, tell};

/// Claude Code, Codex and Gemini CLI cut hook output strings beyond this many characters.
pub(crate) const HOST_CAP: usize = 10_000;

/// Hook payloads are small; a bounded read keeps a runaway writer from costing memory.
const MAX_INPUT: u64 = 8 << 20;

/// The host's JSON payload on stdin, or an empty object when stdin is a terminal (someone
/// trying the command by hand) or holds no JSON.
pub(crate) fn read_payload() -> Value {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Value::Object(Default::default());
    }
    let mut raw = String::new();
    if let Err(e) = stdin.lock().take(MAX_INPUT).read_to_string(&mut raw) {
        tell!("pitroom: hook: could not read the host's payload on stdin: {e}");
    }
    serde_json::from_str(&raw).unwrap_or_else(|_| Value::Object(Default::default()))
}

/// Whether this process runs inside a Pitroom worker (which must not be told to delegate).
fn inside_worker() -> bool {
    std::env::var(pitroom_env::PITROOM_ACTIVE).as_deref() == Ok("1")
}

/// `pitroom hook session-start`.
pub(crate) fn session_start() -> i32 {
    let payload = read_payload();
    if inside_worker() {
        return 0;
    }
    say!("{}", session_start_output(&payload));
    0
}

/// The SessionStart answer: `hookSpecificOutput.additionalContext` (a top-level
/// `additionalContext` is ignored by Claude Code).
pub(crate) fn session_start_output(payload: &Value) -> Value {
    let event = payload["hook_event_name"]
        .as_str()
        .unwrap_or("SessionStart");
    json!({"hookSpecificOutput": {
        "hookEventName": event,
        "additionalContext": session_context(),
    }})
}

/// What the agent learns at session start: written as facts about the environment (context
/// phrased as orders reads like an injection and may be shown to the user instead).
pub(crate) fn session_context() -> String {
    let intro = skills::find(skills::INTRODUCTION)
        .map(skills::body)
        .unwrap_or("");
    let text = format!(
        "Pitroom is installed in this environment: the `pitroom` command delegates bounded work to \
         cheap worker agents. Its skills (pitroom-research, pitroom-crew, pitroom-isolated-change, \
         pitroom-review, pitroom-workflow and the rest) describe each use. The using-pitroom skill \
         follows.\n\n{}",
        intro.trim()
    );
    card::truncate_chars(&text, HOST_CAP - 200)
}

/// `pitroom hook-card`.
pub(crate) fn hook_card() -> i32 {
    let payload = read_payload();
    if inside_worker() {
        return 0;
    }
    let Some(call) = ShellCall::from_payload(&payload) else {
        return 0;
    };
    let service = match pitroom_service::Service::from_process() {
        Ok(s) => s,
        Err(e) => {
            tell!("pitroom: hook-card: {}", e.message);
            return 0;
        }
    };
    let cards = card::cards_for(&service, &call.command, &call.output);
    if let Some(out) = card_output(&payload, &cards) {
        say!("{out}");
    }
    0
}

/// `pitroom hook review-gate`: prints the block decision when the review found issues, and
/// nothing otherwise (the agent stops). A failed review never holds the agent.
pub(crate) fn review_gate(only_if_enabled: bool) -> i32 {
    let payload = read_payload();
    if inside_worker() {
        return 0;
    }
    let Some(request) = gate_request(&payload, only_if_enabled) else {
        return 0;
    };
    let service = match pitroom_service::Service::from_process() {
        Ok(s) => s,
        Err(e) => {
            tell!("pitroom: review gate: {}", e.message);
            return 0;
        }
    };
    match service.review_gate(&request) {
        GateOutcome::Passed(Pass::CapReached { rounds, cap }) => tell!(
            "pitroom: review gate: this session had its {rounds} of {cap} review(s) (review_gate_max_rounds); no more"
        ),
        GateOutcome::Passed(_) => {}
        GateOutcome::Clean { record, verdict } => tell!(
            "pitroom: review gate: run {} found the change fit to land: {}",
            record.id,
            verdict.line()
        ),
        GateOutcome::Findings { record, verdict } => {
            say!("{}", block_output(&record, &verdict.line()));
        }
        GateOutcome::Failed { run, why } => {
            let run = run.map(|r| format!(" (run {r})")).unwrap_or_default();
            tell!("pitroom: review gate: the review did not happen{run}; letting the agent stop: {why}");
        }
    }
    0
}

/// The gate's request from a Stop payload (Claude Code's and Codex's share these fields);
/// `None` when it lacks the session or the directory.
pub(crate) fn gate_request(payload: &Value, only_if_enabled: bool) -> Option<GateRequest> {
    let session = payload["session_id"].as_str().filter(|s| !s.is_empty())?;
    let dir = payload["cwd"].as_str().filter(|s| !s.is_empty())?;
    Some(GateRequest {
        session: session.to_string(),
        dir: dir.into(),
        stop_hook_active: payload["stop_hook_active"].as_bool().unwrap_or(false),
        only_if_enabled,
    })
}

/// The Stop hook's answer that makes the agent continue: the findings as the reason, which the
/// host hands to the model.
pub(crate) fn block_output(record: &RunRecord, verdict: &str) -> Value {
    let head = format!(
        "Pitroom's review gate had a second model review your uncommitted change (run {id}, by {worker}). Verdict: {verdict}.\n\n",
        id = record.id,
        worker = record.worker_target(),
    );
    let tail = format!(
        "\n\nAddress each finding that holds (or say why it does not), then end your turn. The gate does not review this same change again; `pitroom show {}` has the review.",
        record.id
    );
    let room = (HOST_CAP - 200).saturating_sub(head.chars().count() + tail.chars().count());
    let findings = record
        .answer
        .as_deref()
        .unwrap_or("(the reviewer wrote no findings)");
    let reason = format!(
        "{head}{}{tail}",
        card::truncate_chars(findings.trim(), room)
    );
    json!({"decision": "block", "reason": reason})
}

/// A shell tool call from a PostToolUse (Claude Code, Codex) or AfterTool (Gemini CLI) payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellCall {
    pub command: String,
    /// Every string in the tool's response (stdout, stderr, llmContent…), joined.
    pub output: String,
}

impl ShellCall {
    /// The call, if it is a shell command that invokes `pitroom`.
    pub(crate) fn from_payload(payload: &Value) -> Option<ShellCall> {
        let tool = payload["tool_name"].as_str()?;
        if !matches!(tool, "Bash" | "run_shell_command" | "shell" | "local_shell") {
            return None;
        }
        let command = match &payload["tool_input"]["command"] {
            Value::String(s) => s.clone(),
            Value::Array(words) => words
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            _ => return None,
        };
        if !card::invokes_pitroom(&command) {
            return None;
        }
        let mut output = String::new();
        collect_strings(&payload["tool_response"], &mut output);
        Some(ShellCall { command, output })
    }
}

/// Appends every string inside `value` (bounded, so a huge output costs little).
fn collect_strings(value: &Value, out: &mut String) {
    const LIMIT: usize = 1 << 20;
    if out.len() > LIMIT {
        return;
    }
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The hook's answer: the cards for the person (`systemMessage`) and for the agent
/// (`additionalContext`), or nothing when there is no new card.
pub(crate) fn card_output(payload: &Value, cards: &[card::Card]) -> Option<Value> {
    if cards.is_empty() {
        return None;
    }
    let event = payload["hook_event_name"].as_str().unwrap_or("PostToolUse");
    let person = cards
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let agent = cards
        .iter()
        .map(|c| format!("{}\n{}", c.text, c.next))
        .collect::<Vec<_>>()
        .join("\n");
    let agent = format!(
        "Pitroom recorded these runs (state as of now; `pitroom show RUN` has the full report):\n{agent}"
    );
    Some(json!({
        "systemMessage": card::truncate_chars(&person, HOST_CAP / 2 - 100),
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": card::truncate_chars(&agent, HOST_CAP / 2 - 100),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_context_is_the_using_pitroom_text_under_the_host_cap() {
        let text = session_context();
        assert!(text.chars().count() < HOST_CAP);
        assert!(text.contains("## Three modes"), "{text}");
        assert!(
            !text.contains("\nname: using-pitroom"),
            "front matter left in"
        );
    }

    #[test]
    fn session_start_puts_the_context_inside_hook_specific_output() {
        let out = session_start_output(&json!({"hook_event_name": "SessionStart"}));
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert!(out["hookSpecificOutput"]["additionalContext"].is_string());
        assert!(out.get("additionalContext").is_none());
    }

    #[test]
    fn only_shell_calls_that_invoke_pitroom_are_cards() {
        let call = |tool: &str, command: &str| {
            ShellCall::from_payload(&json!({
                "tool_name": tool,
                "tool_input": {"command": command},
                "tool_response": {"stdout": "run 20261201-101500-123a", "stderr": ""}
            }))
        };
        assert!(call("Bash", "pitroom ls").is_some());
        assert!(call("run_shell_command", "cd x && pitroom wait").is_some());
        assert!(call("Bash", "ls -la").is_none());
        assert!(call("Bash", "echo pitroomish").is_none());
        assert!(call("Read", "pitroom ls").is_none());
        let c = call("Bash", "pitroom wait").expect("a card call");
        assert!(c.output.contains("20261201-101500-123a"));
    }

    #[test]
    fn a_stop_payload_without_a_session_or_a_directory_asks_for_nothing() {
        let full = json!({"session_id": "s1", "cwd": "/w", "stop_hook_active": true,
            "hook_event_name": "Stop", "transcript_path": "/t.jsonl"});
        let request = gate_request(&full, true).expect("a request");
        assert_eq!(request.session, "s1");
        assert_eq!(request.dir, std::path::PathBuf::from("/w"));
        assert!(request.stop_hook_active);
        assert!(request.only_if_enabled);
        let first = gate_request(&json!({"session_id": "s1", "cwd": "/w"}), false).expect("ok");
        assert!(!first.stop_hook_active, "absent means the first stop");
        assert!(gate_request(&json!({"cwd": "/w"}), false).is_none());
        assert!(gate_request(&json!({"session_id": "s1"}), false).is_none());
        assert!(gate_request(&json!({"session_id": "", "cwd": "/w"}), false).is_none());
        assert!(gate_request(&json!([1, 2]), false).is_none());
    }

    #[test]
    fn the_block_reason_carries_the_findings_under_the_host_cap() {
        let spec =
            pitroom_service::RunSpec::new("review", pitroom_service::Mode::Read, "opencode", "/w");
        let mut record = RunRecord::new(
            "r1".into(),
            spec,
            "2026-01-01T00:00:00Z".parse().expect("a stamp"),
        );
        record.answer = Some("SUMMARY: no test\nDETAILS: important: calc.py:6 has no test".into());
        let out = block_output(&record, "SPEC PASS · QUALITY NEEDS_FIXES");
        assert_eq!(out["decision"], "block");
        let reason = out["reason"].as_str().expect("reason");
        assert!(reason.contains("calc.py:6 has no test"), "{reason}");
        assert!(reason.contains("run r1"), "{reason}");
        assert!(
            reason.contains("SPEC PASS · QUALITY NEEDS_FIXES"),
            "{reason}"
        );

        record.answer = Some("x".repeat(50_000));
        let out = block_output(&record, "SPEC FAIL");
        let reason = out["reason"].as_str().expect("reason");
        assert!(reason.chars().count() < HOST_CAP, "{}", reason.len());
        assert!(
            reason.ends_with("has the review."),
            "the tail survives the cut"
        );
    }
}
