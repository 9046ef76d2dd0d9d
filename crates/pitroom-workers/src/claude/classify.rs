//! Failure classification from Claude Code's real error texts (2.1.332, see
//! `docs/workers/claude.md`).

use crate::classify::FailureTexts;

pub(crate) const TEXTS: FailureTexts = FailureTexts {
    model_unavailable: &[
        "issue with the selected model",
        "may not exist or you may not have access",
        "not_found_error",
        "model_not_found",
    ],
    rate_limited: &[
        "request rejected (429)",
        "rate limit",
        "usage limit",
        "credit balance is too low",
        "overloaded",
        // 503: the provider is out of capacity for now, like a rate limit.
        "service unavailable",
    ],
    auth: &[
        "invalid api key",
        "authentication",
        "not logged in",
        "please run /login",
        "oauth token",
        "forbidden",
    ],
    transient: &[],
    rate_limit_statuses: &[429, 529],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::FailureKind;

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
        TEXTS.assert_kinds(&cases);
        for (message, _, expected) in cases {
            assert_eq!(
                TEXTS.kind_of(message, None, ""),
                expected,
                "{message} (text alone)"
            );
        }
    }
}
