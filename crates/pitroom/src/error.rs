//! The error a command ends with, and the one place that prints it and picks its exit code.
//!
//! A command returns `Result<Exit, CliError>`: a run's outcome (a timeout, a failed `--verify`,
//! runs still going) is an [`Exit`] the report already explained; a `CliError` is a failure
//! nothing has printed yet. [`CliError::report`] prints it (what happened, then what to do) and
//! maps it to its exit; `commands::dispatch` calls it, no command does.

use pitroom_core::exit::Exit;
use pitroom_service::{ErrorKind, ServiceError};

use crate::output;

/// A command's failure: its kind (which decides the exit code), what happened and what to do.
///
/// The kind is the run library's [`ErrorKind`], not a second enum of the CLI's own: the ways a
/// command can fail (a usage error, a refusal, a conflict, runs still going) are exactly the
/// library's, and [`ErrorKind::exit`] is the one mapping of a kind to its code, the one the MCP
/// server's "(exit code N)" uses too, so the CLI and the MCP server cannot disagree on a code.
/// The type is the CLI's own (not `ServiceError` itself) for what only a terminal needs: the
/// constructors for the CLI's own errors (an unreadable `--task-file`, a bad `--timeout`) and
/// the lines that follow the hint ([`CliError::then`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    pub(crate) kind: ErrorKind,
    /// What happened (one sentence; it may already say what to do).
    pub(crate) message: String,
    /// What to do next, when the message does not say it.
    pub(crate) hint: Option<String>,
    /// What the failure left behind, printed after the hint (a crew's runs that were started
    /// before it and go on).
    pub(crate) then: Option<String>,
}

impl CliError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            kind,
            message: message.into(),
            hint: None,
            then: None,
        }
    }

    /// The arguments are wrong (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Usage, message)
    }

    /// Refused, or a set-up problem (exit 3).
    pub(crate) fn refused(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Refused, message)
    }

    /// Adds what to do next.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    /// Adds a line to print after the message and the hint.
    pub(crate) fn then(mut self, line: impl Into<String>) -> CliError {
        self.then = Some(line.into());
        self
    }

    /// The exit this error ends the process with.
    pub(crate) fn exit(&self) -> Exit {
        self.kind.exit()
    }

    /// Prints the error through the printer (what happened, then what to do, then what it left
    /// behind) and returns its exit: the one place a failure reaches the terminal.
    pub(crate) fn report(&self) -> Exit {
        output::error(&self.message);
        if let Some(hint) = &self.hint {
            output::hint(hint);
        }
        if let Some(line) = &self.then {
            output::tell!("{line}");
        }
        self.exit()
    }
}

impl From<ServiceError> for CliError {
    fn from(e: ServiceError) -> CliError {
        CliError {
            kind: e.kind,
            message: e.message,
            hint: e.hint,
            then: None,
        }
    }
}

impl From<pitroom_core::EngineError> for CliError {
    fn from(e: pitroom_core::EngineError) -> CliError {
        ServiceError::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_ends_the_process_with_its_documented_code() {
        let kinds = [
            (ErrorKind::Usage, 2),
            (ErrorKind::Refused, 3),
            (ErrorKind::Failed, 1),
            (ErrorKind::StillRunning, 75),
        ];
        for (kind, code) in kinds {
            let e = CliError::from(ServiceError::new(kind, "x"));
            assert_eq!(e.exit().code(), code, "{kind:?}");
        }
        assert_eq!(CliError::usage("x").exit(), Exit::Usage);
        assert_eq!(CliError::refused("x").exit(), Exit::Refused);
    }

    #[test]
    fn a_service_error_keeps_its_message_and_hint() {
        let e = CliError::from(ServiceError::refused("busy").with_hint("wait"));
        assert_eq!(
            e,
            CliError {
                kind: ErrorKind::Refused,
                message: "busy".into(),
                hint: Some("wait".into()),
                then: None,
            }
        );
    }
}
