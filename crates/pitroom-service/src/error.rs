//! One error type for every front end: a kind (which decides the CLI's exit code and the MCP
//! server's `isError`), the message (what happened) and, where there is one, the hint (what to do).

use pitroom_core::exit::Exit;

/// What kind of failure an operation met; each maps to one exit (`pitroom_core::exit::Exit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is wrong (exit 2).
    Usage,
    /// Refused, or a set-up problem (exit 3).
    Refused,
    /// The operation ran and failed: an apply or revert conflict (exit 1).
    Failed,
    /// Runs are still going (exit 75): ask again.
    StillRunning,
}

impl ErrorKind {
    /// The one mapping of a failure's kind to the exit it ends with: the CLI exits with it and
    /// the MCP server names its code, so the two cannot disagree.
    pub fn exit(self) -> Exit {
        match self {
            ErrorKind::Usage => Exit::Usage,
            ErrorKind::Refused => Exit::Refused,
            ErrorKind::Failed => Exit::Failed,
            ErrorKind::StillRunning => Exit::StillRunning,
        }
    }
}

/// A failed operation of the run library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    pub kind: ErrorKind,
    /// What happened (one sentence; it may already say what to do).
    pub message: String,
    /// What to do next, when the message does not say it.
    pub hint: Option<String>,
}

impl ServiceError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ServiceError {
        ServiceError {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub fn usage(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorKind::Usage, message)
    }

    pub fn refused(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorKind::Refused, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> ServiceError {
        self.hint = Some(hint.into());
        self
    }

    pub fn exit(&self) -> Exit {
        self.kind.exit()
    }
}

impl ErrorKind {
    /// The kind of a failure the engine or the state directory met, from the exit it names.
    fn of(exit: Exit) -> ErrorKind {
        match exit {
            Exit::Usage => ErrorKind::Usage,
            _ => ErrorKind::Refused,
        }
    }
}

impl From<pitroom_core::EngineError> for ServiceError {
    fn from(e: pitroom_core::EngineError) -> ServiceError {
        ServiceError::new(ErrorKind::of(e.exit()), e.to_string())
    }
}

impl From<pitroom_core::HomeError> for ServiceError {
    fn from(e: pitroom_core::HomeError) -> ServiceError {
        ServiceError::new(ErrorKind::of(e.exit()), e.to_string())
    }
}

impl From<pitroom_core::patches::PatchError> for ServiceError {
    fn from(e: pitroom_core::patches::PatchError) -> ServiceError {
        use pitroom_core::patches::PatchError;
        let kind = match e {
            PatchError::Conflict(_) => ErrorKind::Failed,
            PatchError::Unsafe { message, hint } => {
                return ServiceError::refused(message).with_hint(hint)
            }
            _ => ErrorKind::Refused,
        };
        ServiceError::new(kind, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_its_documented_exit_code() {
        assert_eq!(ServiceError::usage("x").exit().code(), 2);
        assert_eq!(ServiceError::refused("x").exit().code(), 3);
        assert_eq!(ServiceError::new(ErrorKind::Failed, "x").exit().code(), 1);
        assert_eq!(
            ServiceError::new(ErrorKind::StillRunning, "x")
                .exit()
                .code(),
            75
        );
    }

    #[test]
    fn a_run_that_matches_nothing_is_a_usage_error() {
        let e: ServiceError = pitroom_core::HomeError::NoRuns.into();
        assert_eq!(e.kind, ErrorKind::Usage);
    }
}
