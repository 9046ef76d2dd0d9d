//! Failure classification from OpenCode's real error texts (see `docs/workers/opencode.md` §6).

use crate::adapter::FailureEvidence;
use crate::classify::FailureTexts;
use crate::events::FailureKind;

const MODEL_UNAVAILABLE: &[&str] = &[
    "model_not_found",
    "does not exist",
    "model not found",
    "providermodelnotfounderror",
    "providernotfounderror",
    "unknown model",
    "no such model",
    "is not supported",
    "not_found_error",
];
const RATE_LIMITED: &[&str] = &[
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "quota",
    "usage limit",
    "resource_exhausted",
    "endpoint is unavailable",
    "overloaded",
    // 503: the provider is out of capacity for now, like a rate limit.
    "service unavailable",
];
const AUTH: &[&str] = &[
    "incorrect api key",
    "invalid api key",
    "invalid_api_key",
    "unauthorized",
    "authentication",
    "freetiererror",
    "not logged in",
    "api key",
    "forbidden",
];

const TEXTS: FailureTexts = FailureTexts {
    model_unavailable: MODEL_UNAVAILABLE,
    rate_limited: RATE_LIMITED,
    auth: AUTH,
    rate_limit_statuses: &[429, 503, 529],
};

pub fn classify(evidence: &FailureEvidence<'_>) -> FailureKind {
    TEXTS.classify(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::WorkerEvent;

    fn kind(message: &str, status: Option<u16>, stderr: &str) -> FailureKind {
        let events = [WorkerEvent::Error {
            message: message.into(),
            status,
            retry_after: None,
        }];
        classify(&FailureEvidence {
            events: &events,
            stderr_tail: stderr,
            exit_code: Some(1),
        })
    }

    #[test]
    fn real_opencode_texts_are_classified() {
        let cases = [
            (
                "The model `fake-model` does not exist or you do not have access to it. (model_not_found)",
                Some(404),
                FailureKind::ModelUnavailable,
            ),
            ("Rate limit reached for requests", Some(429), FailureKind::RateLimited),
            ("Incorrect API key provided", Some(401), FailureKind::Auth),
            (
                "The engine is currently overloaded, please try again later",
                Some(503),
                FailureKind::RateLimited,
            ),
            (
                "The server had an error while processing your request.",
                Some(500),
                FailureKind::Other,
            ),
            ("You exceeded your current quota (insufficient_quota)", Some(429), FailureKind::RateLimited),
            ("FreeTierError: upgrade required", Some(403), FailureKind::Auth),
            ("Endpoint is unavailable", Some(400), FailureKind::RateLimited),
            ("[API Error: 503 Service Unavailable] (Qwen Code's attempt 3)", None, FailureKind::RateLimited),
            ("[API Error: 429 Too Many Requests] (Qwen Code's attempt 3)", None, FailureKind::RateLimited),
            ("[API Error: 500 Internal Server Error] (Qwen Code's attempt 3)", None, FailureKind::Other),
            ("The operation timed out.", None, FailureKind::Other),
        ];
        for (message, status, expected) in cases {
            assert_eq!(kind(message, status, ""), expected, "{message}");
        }
    }

    #[test]
    fn generic_server_error_is_explained_by_the_logs() {
        let stderr = "ERROR service=session error=ProviderModelNotFoundError: Model not found: fake/nonexistent.";
        assert_eq!(
            kind(
                "Unexpected server error. Check server logs for details.",
                None,
                stderr
            ),
            FailureKind::ModelUnavailable
        );
    }
}
