//! The normalised vocabulary every adapter parses into.

use serde::{Deserialize, Serialize};

/// What a run may do to the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Research: the tree must be unchanged afterwards.
    Read,
    /// Quick in-place edits; `revert` undoes exactly the worker's edits.
    Write,
    /// Edits in a private copy; a patch comes back.
    Isolate,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::Isolate => "isolate",
        }
    }

    /// Whether the worker may change files in its work directory.
    pub fn may_edit(self) -> bool {
        !matches!(self, Mode::Read)
    }
}

/// Token usage, normalised across CLIs. `input` excludes cache reads; `output` excludes reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    /// All tokens; saturates, since the counts are whatever a CLI's stream said.
    pub fn total(&self) -> u64 {
        [
            self.output,
            self.reasoning,
            self.cache_read,
            self.cache_write,
        ]
        .iter()
        .fold(self.input, |sum, n| sum.saturating_add(*n))
    }

    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }

    /// Adds `other`'s counts, saturating.
    pub fn add(&mut self, other: &Usage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOutcome {
    Ok,
    Failed,
    /// Refused by the permission profile (or a sandbox), not by the tool itself.
    Denied,
}

/// A tool call as one line of a run's steps: `name summary`, marked ` (failed)` or
/// ` (denied)`. The live status, the record and the history's search index all write it so.
pub fn tool_line(name: &str, summary: &str, outcome: ToolOutcome) -> String {
    let mark = match outcome {
        ToolOutcome::Ok => "",
        ToolOutcome::Failed => " (failed)",
        ToolOutcome::Denied => " (denied)",
    };
    format!("{name} {summary}{mark}")
}

/// One normalised event from a worker's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerEvent {
    /// The CLI's session id, needed to resume the conversation.
    Session {
        id: String,
    },
    /// The model the CLI says it runs (its start-up event): what a run with no pinned model
    /// really used, for receipts and per-model statistics.
    Model {
        name: String,
    },
    StepStarted,
    /// A model call ended. `reason` is the CLI's finish reason; `None` or `unknown` means the
    /// model's reply carried none.
    StepFinished {
        reason: Option<String>,
        usage: Option<Usage>,
        cost: Option<f64>,
    },
    ToolCall {
        name: String,
        /// A short, single-line account of the call's input (a path, a command, a pattern).
        summary: String,
        outcome: ToolOutcome,
        error: Option<String>,
        /// The file this call edited, when it is an edit tool that succeeded.
        edited: Option<String>,
    },
    /// A complete text part. `message` groups parts of one assistant message.
    Text {
        message: Option<String>,
        text: String,
    },
    Error {
        message: String,
        status: Option<u16>,
        /// Seconds the provider asked to wait, when it said so.
        retry_after: Option<u64>,
    },
}

/// The [`WorkerEvent::Model`] for the model name a CLI's start-up event carries, if any.
pub fn reported_model(name: Option<&str>) -> Option<WorkerEvent> {
    let name = name?.trim();
    (!name.is_empty()).then(|| WorkerEvent::Model {
        name: name.to_string(),
    })
}

/// The events of a CLI's start-up event: its session, the model it reports (if any), and the
/// first step started.
pub(crate) fn session_started(id: &str, model: Option<&str>) -> Vec<WorkerEvent> {
    let mut events = vec![WorkerEvent::Session { id: id.to_string() }];
    events.extend(reported_model(model));
    events.push(WorkerEvent::StepStarted);
    events
}

impl WorkerEvent {
    /// A finished step without a finish reason: the shape of OpenCode's endless retry loop on
    /// replies that carry none (it calls the model again, forever, whatever the usage).
    pub fn is_empty_step(&self) -> bool {
        match self {
            WorkerEvent::StepFinished { reason, .. } => reason
                .as_deref()
                .is_none_or(|r| r.is_empty() || r == "unknown"),
            _ => false,
        }
    }
}

/// Why a worker failed, as far as the fallback chain cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    ModelUnavailable,
    RateLimited,
    Auth,
    /// A passing fault of the CLI's own, not of the model (OpenCode's session database busy
    /// under concurrent runs): the same target is run once more.
    Transient,
    Other,
}

impl FailureKind {
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::ModelUnavailable => "model unavailable",
            FailureKind::RateLimited => "rate limited or out of quota",
            FailureKind::Auth => "authentication failed",
            FailureKind::Transient => "passing fault of the worker CLI",
            FailureKind::Other => "worker error",
        }
    }

    /// A one-line hint for the person or agent reading the report.
    pub fn hint(self) -> &'static str {
        match self {
            FailureKind::ModelUnavailable => {
                "pick another model with -m or -W backend:model (pitroom models lists them)"
            }
            FailureKind::RateLimited => "wait and retry, or pick another model with -m",
            FailureKind::Auth => "check the worker CLI's login or API key for this provider",
            FailureKind::Transient => {
                "pitroom ran it once more already; run it again, or lower max_parallel"
            }
            FailureKind::Other => "see the worker's stderr with: pitroom show --full",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_line_is_name_and_summary_marked_only_when_the_call_did_not_succeed() {
        assert_eq!(
            tool_line("read", "calc.py", ToolOutcome::Ok),
            "read calc.py"
        );
        assert_eq!(
            tool_line("bash", "make test", ToolOutcome::Failed),
            "bash make test (failed)"
        );
        assert_eq!(
            tool_line("edit", ".git/hooks/pre-commit", ToolOutcome::Denied),
            "edit .git/hooks/pre-commit (denied)"
        );
    }

    /// Found by fuzzing: a stream reporting `"input": 18446744073709551615` made `is_zero`
    /// overflow (a panic in debug builds, a wrong total in release).
    #[test]
    fn usage_from_huge_reported_counts_saturates_instead_of_overflowing() {
        let mut usage = Usage {
            input: u64::MAX,
            output: 43,
            ..Usage::default()
        };
        assert_eq!(usage.total(), u64::MAX);
        assert!(!usage.is_zero());
        usage.add(&Usage {
            input: 1,
            cache_read: u64::MAX,
            ..Usage::default()
        });
        assert_eq!((usage.input, usage.cache_read), (u64::MAX, u64::MAX));
    }
}
