//! The error texts of the model providers most CLIs reach, and of the CLIs that pass them on as
//! they come: collected from OpenCode's real errors (see `docs/workers/opencode.md` §6) and
//! Qwen Code's retried attempts, and read by every adapter whose CLI reports provider errors
//! in these words (OpenCode, Kilo, Qwen Code, Gemini CLI, Cursor, Antigravity).

use crate::classify::FailureTexts;

pub(crate) const TEXTS: FailureTexts = FailureTexts {
    model_unavailable: &[
        "model_not_found",
        "does not exist",
        "model not found",
        "providermodelnotfounderror",
        "providernotfounderror",
        "unknown model",
        "no such model",
        "is not supported",
        "not_found_error",
    ],
    rate_limited: &[
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
    ],
    auth: &[
        "incorrect api key",
        "invalid api key",
        "invalid_api_key",
        "unauthorized",
        "authentication",
        "freetiererror",
        "not logged in",
        "api key",
        "forbidden",
    ],
    // Its session database (SQLite, shared by every run of the CLI) refuses a write while
    // another run holds the lock past its busy timeout (anomalyco/opencode#47566, #48416).
    transient: &[
        "database is locked",
        "sqlite_busy",
        "locktimeouterror",
        "failed to execute statement",
    ],
    rate_limit_statuses: &[429, 503, 529],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::FailureKind;

    #[test]
    fn real_opencode_texts_are_classified() {
        TEXTS.assert_kinds(&[
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
            ("SQLiteError: database is locked", None, FailureKind::Transient),
            ("Failed to execute statement", None, FailureKind::Transient),
            ("SqlError/LockTimeoutError: database is locked", None, FailureKind::Transient),
        ]);
    }

    #[test]
    fn generic_server_error_is_explained_by_the_logs() {
        let stderr = "ERROR service=session error=ProviderModelNotFoundError: Model not found: fake/nonexistent.";
        assert_eq!(
            TEXTS.kind_of(
                "Unexpected server error. Check server logs for details.",
                None,
                stderr
            ),
            FailureKind::ModelUnavailable
        );
    }
}
