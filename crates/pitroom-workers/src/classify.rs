//! The one failure classifier: a failed run's error events and stderr tail, matched against a
//! CLI's own tables of error texts and HTTP statuses (each CLI words its failures differently;
//! the algorithm is the same).

use crate::adapter::FailureEvidence;
use crate::events::{FailureKind, WorkerEvent};

/// How one CLI reports each kind of failure: lower-case fragments of its real error texts, and
/// the HTTP statuses that mean a rate limit (404 always means a missing model, 401 and 403 a
/// login problem).
pub struct FailureTexts {
    pub model_unavailable: &'static [&'static str],
    pub rate_limited: &'static [&'static str],
    pub auth: &'static [&'static str],
    /// Faults of the CLI's own that pass (a busy local database): worth one more run.
    pub transient: &'static [&'static str],
    pub rate_limit_statuses: &'static [u16],
}

impl FailureTexts {
    /// The kind of failure `evidence` shows: a missing model first (falling back to another
    /// model helps), then a rate limit, then a login problem, then a passing fault of the
    /// CLI's own, else `Other`.
    pub fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        let mut haystack = String::new();
        let mut statuses = Vec::new();
        for event in evidence.events {
            if let WorkerEvent::Error {
                message, status, ..
            } = event
            {
                haystack.push_str(&message.to_lowercase());
                haystack.push('\n');
                statuses.extend(*status);
            }
        }
        haystack.push_str(&evidence.stderr_tail.to_lowercase());
        let mentions = |needles: &[&str]| needles.iter().any(|n| haystack.contains(n));
        let has_status = |wanted: &[u16]| statuses.iter().any(|s| wanted.contains(s));

        if has_status(&[404]) || mentions(self.model_unavailable) {
            FailureKind::ModelUnavailable
        } else if has_status(self.rate_limit_statuses) || mentions(self.rate_limited) {
            FailureKind::RateLimited
        } else if has_status(&[401, 403]) || mentions(self.auth) {
            FailureKind::Auth
        } else if mentions(self.transient) {
            FailureKind::Transient
        } else {
            FailureKind::Other
        }
    }
}

#[cfg(test)]
impl FailureTexts {
    /// The kind of a run that failed with one error event, `message` with HTTP `status`, and
    /// `stderr_tail` on stderr: how the tables are tested on a CLI's real texts.
    pub(crate) fn kind_of(
        &self,
        message: &str,
        status: Option<u16>,
        stderr_tail: &str,
    ) -> FailureKind {
        let events = [WorkerEvent::Error {
            message: message.into(),
            status,
            retry_after: None,
        }];
        self.classify(&FailureEvidence {
            events: &events,
            stderr_tail,
            exit_code: Some(1),
        })
    }
}
