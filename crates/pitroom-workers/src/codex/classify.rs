//! Failure classification from Codex's real error texts (0.171.0, see `docs/workers/codex.md`).

use crate::classify::FailureTexts;

pub(crate) const TEXTS: FailureTexts = FailureTexts {
    model_unavailable: &[
        "does not exist or you do not have access",
        "model_not_found",
        "model not found",
        "unsupported model",
        "is not supported when using codex",
    ],
    rate_limited: &[
        "too many requests",
        "rate limit",
        "quota exceeded",
        "usage limit",
        "insufficient_quota",
        "service unavailable",
    ],
    auth: &[
        "unauthorized",
        "incorrect api key",
        "invalid api key",
        "missing environment variable",
        "not logged in",
        "please log in",
        "forbidden",
        "token has expired",
        "refresh token",
    ],
    transient: &[],
    rate_limit_statuses: &[429, 503, 529],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::FailureKind;

    #[test]
    fn real_codex_texts_are_classified() {
        let cases = [
            ("exceeded retry limit, last status: 429 Too Many Requests", FailureKind::RateLimited),
            ("Quota exceeded. Check your plan and billing details.", FailureKind::RateLimited),
            ("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again later.", FailureKind::RateLimited),
            ("rate limit exceeded: Rate limit reached for gpt-5.5. Please try again in 2s.", FailureKind::RateLimited),
            ("The model `gpt-5.5` does not exist or you do not have access to it.", FailureKind::ModelUnavailable),
            ("unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake., url: http://127.0.0.1:1/v1/responses", FailureKind::Auth),
            ("Missing environment variable: `FAKE_API_KEY`.", FailureKind::Auth),
            ("We’re currently experiencing high demand, which may cause temporary errors.", FailureKind::Other),
            ("unexpected status 503 Service Unavailable: upstream unavailable, url: http://127.0.0.1:1/v1/responses", FailureKind::RateLimited),
            ("stream disconnected before completion: stream closed before response.completed", FailureKind::Other),
        ];
        // The status is the one the parser reads from the message, as in a real run.
        TEXTS.assert_kinds(&cases.map(|(message, expected)| {
            (message, crate::codex::parse::status_in(message), expected)
        }));
    }
}
