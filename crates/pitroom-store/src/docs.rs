//! The texts a row carries besides the record: the steps (from the raw event stream, through
//! the worker's adapter) and the patch.

use std::io::Read;

use pitroom_core::{Home, RunRecord};
use pitroom_workers::{tool_line, Adapter, WorkerEvent};

/// How much of events.jsonl is read to list the steps.
const EVENTS_READ_LIMIT: u64 = 8 << 20;
/// The steps text kept for search.
const STEPS_LIMIT: usize = 64 << 10;
/// The patch kept in the database; `show --patch` reads the whole file.
const PATCH_LIMIT: usize = 1 << 20;

/// A run's searchable texts that are not in its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDocs {
    /// One line per tool call: `name summary`, with `(failed)`/`(denied)` marks.
    pub steps: String,
    pub patch: Option<String>,
}

/// Reads a run's steps and patch from its directory. Missing or unreadable files give empty
/// texts: the row is still worth having.
pub fn load_docs(home: &Home, record: &RunRecord) -> RunDocs {
    let dir = home.run_dir(&record.id);
    let patch = std::fs::read(dir.join("changes.patch"))
        .ok()
        .filter(|p| !p.is_empty())
        .map(|p| cap(&String::from_utf8_lossy(&p), PATCH_LIMIT));
    RunDocs {
        // The run's own adapter: a config-described (custom) worker's steps are searchable too.
        steps: steps_text(record.adapter(), &dir.join("events.jsonl")),
        patch,
    }
}

fn steps_text(adapter: Option<Box<dyn Adapter>>, events: &std::path::Path) -> String {
    let Some(adapter) = adapter else {
        return String::new();
    };
    let Ok(file) = std::fs::File::open(events) else {
        return String::new();
    };
    let mut raw = Vec::new();
    if file.take(EVENTS_READ_LIMIT).read_to_end(&mut raw).is_err() {
        return String::new();
    }
    let mut out = String::new();
    let mut parser = adapter.parser();
    for line in String::from_utf8_lossy(&raw).lines() {
        for event in parser.parse_line(line) {
            if let WorkerEvent::ToolCall {
                name,
                summary,
                outcome,
                ..
            } = event
            {
                out.push_str(&tool_line(&name, &summary, outcome));
                out.push('\n');
            }
        }
        if out.len() > STEPS_LIMIT {
            return cap(&out, STEPS_LIMIT);
        }
    }
    out
}

/// `text` cut to at most `limit` bytes, on a character boundary.
pub(crate) fn cap(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
