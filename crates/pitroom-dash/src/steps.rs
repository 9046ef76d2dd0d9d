//! A run's step timeline: its raw `events.jsonl` normalised through the worker's adapter (the
//! same parse the engine did live), with a time relative to the run's start where the CLI
//! stamped its lines.

use std::io::Read;
use std::path::Path;

use pitroom_service::{RunRecord, ToolOutcome, WorkerEvent};
use serde::Serialize;
use serde_json::Value;

/// How much of events.jsonl is read.
const READ_LIMIT: u64 = 16 << 20;
/// How many entries the page gets.
const ENTRY_LIMIT: usize = 3000;

/// One entry of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// `tool`, `text`, `step` (a model call ended) or `error`.
    pub kind: &'static str,
    /// The tool's name, the step's finish reason.
    pub name: String,
    /// The call's input in one line, the text's opening, the error.
    pub text: String,
    /// `ok`, `failed` or `denied` (tools only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Milliseconds since the run started, when the CLI stamped the line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
    /// Tokens of a finished model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    pub entries: Vec<Entry>,
    /// The file was longer than what was read, or had more entries than are sent.
    pub truncated: bool,
}

/// The run's timeline; empty when it has no events (yet) or no adapter knows its CLI.
pub fn timeline(record: &RunRecord, events: &Path) -> Timeline {
    let Some(adapter) = record.adapter() else {
        return Timeline::default();
    };
    let Ok(file) = std::fs::File::open(events) else {
        return Timeline::default();
    };
    let mut raw = Vec::new();
    if file.take(READ_LIMIT + 1).read_to_end(&mut raw).is_err() {
        return Timeline::default();
    }
    let mut out = Timeline {
        truncated: raw.len() as u64 > READ_LIMIT,
        ..Timeline::default()
    };
    let start = record.started_at.map(|t| t.as_millisecond());
    let mut parser = adapter.parser();
    for line in String::from_utf8_lossy(&raw).lines() {
        let at = start
            .and_then(|s| stamp_ms(line).map(|t| t - s))
            .filter(|d| plausible(*d));
        for event in parser.parse_line(line) {
            if let Some(entry) = entry(event, at) {
                out.entries.push(entry);
            }
        }
        if out.entries.len() >= ENTRY_LIMIT {
            out.entries.truncate(ENTRY_LIMIT);
            out.truncated = true;
            break;
        }
    }
    out
}

/// A relative time that can belong to the run (a CLI that stamps 0, or another clock, gives
/// none rather than a nonsense one).
fn plausible(ms: i64) -> bool {
    (-60_000..=7 * 24 * 3_600_000).contains(&ms)
}

fn entry(event: WorkerEvent, at_ms: Option<i64>) -> Option<Entry> {
    let base = |kind, name: String, text: String| Entry {
        kind,
        name,
        text,
        outcome: None,
        error: None,
        at_ms,
        tokens: None,
    };
    match event {
        WorkerEvent::ToolCall {
            name,
            summary,
            outcome,
            error,
            ..
        } => Some(Entry {
            outcome: Some(match outcome {
                ToolOutcome::Ok => "ok",
                ToolOutcome::Failed => "failed",
                ToolOutcome::Denied => "denied",
            }),
            error,
            ..base("tool", name, summary)
        }),
        WorkerEvent::Text { text, .. } if !text.trim().is_empty() => {
            Some(base("text", String::new(), opening(&text, 240)))
        }
        WorkerEvent::StepFinished { reason, usage, .. } => Some(Entry {
            tokens: usage.map(|u| u.total()),
            ..base("step", reason.unwrap_or_default(), String::new())
        }),
        WorkerEvent::Error { message, .. } => Some(base("error", String::new(), message)),
        _ => None,
    }
}

/// The first `n` characters of a text, on one line.
fn opening(text: &str, n: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// The time a CLI stamped on a line, in Unix milliseconds: a top-level `timestamp` or `time`
/// (seconds, milliseconds or RFC 3339), or OpenCode's `part.time.start`.
fn stamp_ms(line: &str) -> Option<i64> {
    if !line.contains("time") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    [
        "/timestamp",
        "/time",
        "/part/time/start",
        "/part/state/time/start",
    ]
    .iter()
    .find_map(|p| v.pointer(p).and_then(as_ms))
}

fn as_ms(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64()?;
            // Seconds or milliseconds since the epoch, from 2001 on.
            if x > 1e12 {
                Some(x as i64)
            } else if x > 1e9 {
                Some((x * 1000.0) as i64)
            } else {
                None
            }
        }
        Value::String(s) => s
            .parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_millisecond()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_read_in_seconds_milliseconds_or_rfc3339() {
        assert_eq!(
            stamp_ms(r#"{"timestamp": 1764460800123}"#),
            Some(1764460800123)
        );
        assert_eq!(stamp_ms(r#"{"time": 1764460800.5}"#), Some(1764460800500));
        assert_eq!(
            stamp_ms(r#"{"timestamp": "2025-11-30T00:00:00Z"}"#),
            Some(1764460800000)
        );
        assert_eq!(stamp_ms(r#"{"timestamp": 0}"#), None);
        assert_eq!(
            stamp_ms(r#"{"part": {"time": {"start": 1764460800001}}}"#),
            Some(1764460800001)
        );
    }

    #[test]
    fn tool_calls_keep_their_outcome() {
        let e = entry(
            WorkerEvent::ToolCall {
                name: "bash".into(),
                summary: "rm -rf /".into(),
                outcome: ToolOutcome::Denied,
                error: Some("refused".into()),
                edited: None,
            },
            Some(1200),
        )
        .expect("an entry");
        assert_eq!(
            (e.kind, e.outcome, e.at_ms),
            ("tool", Some("denied"), Some(1200))
        );
    }
}
