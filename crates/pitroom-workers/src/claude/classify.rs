//! Failure classification from Claude Code's real error texts (2.1.332, see
//! `docs/workers/claude.md`).

use crate::adapter::FailureEvidence;
use crate::events::{FailureKind, WorkerEvent};

const MODEL_UNAVAILABLE: &[&str] = &[
    "issue with the selected model",
    "may not exist or you may not have access",
    "not_found_error",
    "model_not_found",
];
const RATE_LIMITED: &[&str] = &[
    "request rejected (429)",
    "rate limit",
    "usage limit",
    "credit balance is too low",
    "overloaded",
    // 503: the provider is out of capacity for now, like a rate limit.
    "service unavailable",
];
const AUTH: &[&str] = &[
    "invalid api key",
    "authentication",
    "not logged in",
    "please run /login",
    "oauth token",
    "forbidden",
];

pub fn classify(evidence: &FailureEvidence<'_>) -> FailureKind {
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

    if statuses.contains(&404) || mentions(MODEL_UNAVAILABLE) {
        FailureKind::ModelUnavailable
    } else if statuses.iter().any(|s| matches!(s, 429 | 529)) || mentions(RATE_LIMITED) {
        FailureKind::RateLimited
    } else if statuses.iter().any(|s| matches!(s, 401 | 403)) || mentions(AUTH) {
        FailureKind::Auth
    } else {
        FailureKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(message: &str, status: Option<u16>) -> FailureKind {
        let events = [WorkerEvent::Error {
            message: message.into(),
            status,
            retry_after: None,
        }];
        classify(&FailureEvidence {
            events: &events,
            stderr_tail: "",
            exit_code: Some(1),
        })
    }

    #[test]
    fn real_claude_texts_are_classified() {
        let cases = [
            ("API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.", Some(429), FailureKind::RateLimited),
            ("API Error: Request rejected (429) · Usage limit reached for this organization.", Some(429), FailureKind::RateLimited),
            ("Credit balance is too low", Some(400), FailureKind::RateLimited),
            ("There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it. Run --model to pick a different model.", Some(404), FailureKind::ModelUnavailable),
            ("API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:1).", Some(500), FailureKind::Other),
            ("API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:1).", Some(529), FailureKind::RateLimited),
            // Measured with the real CLI (docs/workers/README.md, failure matrix): no status.
            ("API Error: 503 Service Unavailable. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:1).", None, FailureKind::RateLimited),
            ("Invalid API key · Fix external API key", Some(401), FailureKind::Auth),
            ("Not logged in · Please run /login", None, FailureKind::Auth),
        ];
        for (message, status, expected) in cases {
            assert_eq!(kind(message, status), expected, "{message}");
            assert_eq!(kind(message, None), expected, "{message} (text alone)");
        }
    }
}
