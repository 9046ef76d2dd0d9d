//! Worker adapters.
//!
//! A worker is an agent CLI run headless. Each CLI gets one [`Adapter`]: it builds the command
//! line and environment for a [`Mode`], turns one line of the CLI's event stream into
//! normalised [`WorkerEvent`]s, and classifies a failure from the CLI's real error texts.
//! Adapters are pure: they never spawn processes or touch the run's state directory, so the
//! run engine owns every side effect and adapters are tested on recorded streams.

mod adapter;
pub mod antigravity;
mod binary;
mod classify;
pub mod claude;
pub mod codex;
mod common;
pub mod cursor;
pub mod custom;
mod denied;
mod events;
mod facts;
#[cfg(test)]
mod fuzz;
pub mod gemini;
mod json;
pub mod kilo;
pub mod opencode;
pub mod qwen;
pub mod secret_files;
mod stream_json;
mod summary;

pub use adapter::{
    parse_stream, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest,
    LineByLine, ModelInfo, PromptInput, SettingsFile, StateDirs, StreamParser,
};
pub use binary::{find_binary, override_var, BinaryNotFound};
pub use custom::{Custom, WorkerDef};
pub use events::{tool_line, FailureKind, Mode, ToolOutcome, Usage, WorkerEvent};
pub use facts::{facts, is_state_dir_var, program_of, CliFacts, CLIS, KNOWN_BACKENDS};
pub use json::content_text;

/// The adapter of a known backend (a row of [`CLIS`]), or `None` for an id Pitroom does not
/// know.
pub fn adapter_for(backend: &str) -> Option<Box<dyn Adapter>> {
    facts(backend).map(|cli| (cli.adapter)())
}

/// Helpers of the unit tests.
#[cfg(test)]
mod testing {
    use crate::StreamParser;

    /// Asserts that none of `lines` (garbage, torn JSON, events the parser ignores) yields an
    /// event from `parser`.
    pub(crate) fn assert_no_events(parser: &mut dyn StreamParser, lines: &[&str]) {
        for line in lines {
            assert!(parser.parse_line(line).is_empty(), "{line}");
        }
    }

    /// Feeds `parser` the `pending` lines, each of which must yield nothing yet (a delta, a
    /// started call: the parser only accumulates), then `last`, and returns what `last` yields.
    pub(crate) fn events_after(
        parser: &mut dyn StreamParser,
        pending: &[&str],
        last: &str,
    ) -> Vec<crate::WorkerEvent> {
        for line in pending {
            assert!(parser.parse_line(line).is_empty(), "yielded early: {line}");
        }
        parser.parse_line(last)
    }

    /// Writes `content` to `path`, creating its directories first (a user's config file under a
    /// temporary home).
    pub(crate) fn write_file(path: &std::path::Path, content: &str) {
        std::fs::create_dir_all(path.parent().expect("a file in a directory")).unwrap();
        std::fs::write(path, content).unwrap();
    }
}
