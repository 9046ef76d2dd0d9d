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
        let statuses: Vec<u16> = evidence
            .events
            .iter()
            .filter_map(|event| match event {
                WorkerEvent::Error { status, .. } => *status,
                _ => None,
            })
            .collect();
        let haystack = evidence.texts_lowercase();
        let mentions = |needles: &[&str]| contains_any(&haystack, needles);
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

impl FailureEvidence<'_> {
    /// The run's error messages and its stderr tail, lower-cased, one a line: where a CLI's
    /// failure texts are looked for.
    pub(crate) fn texts_lowercase(&self) -> String {
        let mut haystack = String::new();
        for event in self.events {
            if let WorkerEvent::Error { message, .. } = event {
                haystack.push_str(&message.to_lowercase());
                haystack.push('\n');
            }
        }
        haystack.push_str(&self.stderr_tail.to_lowercase());
        haystack
    }
}

/// Whether `haystack` contains one of `needles`.
pub(crate) fn contains_any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| haystack.contains(n))
}

/// Whether `text`, lower-cased, contains one of `fragments` (lower-case fragments of a CLI's
/// real texts: a tool result that a rule refused, an error that names a failure).
pub(crate) fn mentions(text: &str, fragments: &[&str]) -> bool {
    contains_any(&text.to_lowercase(), fragments)
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

    /// Asserts that each of `cases`, a message, its HTTP status and the kind expected, is
    /// classified as that kind (through [`FailureTexts::kind_of`], with nothing on stderr).
    pub(crate) fn assert_kinds(&self, cases: &[(&str, Option<u16>, FailureKind)]) {
        for &(message, status, expected) in cases {
            assert_eq!(self.kind_of(message, status, ""), expected, "{message}");
        }
    }
}
