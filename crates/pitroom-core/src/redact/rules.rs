//! The secret formats redaction masks, as data: one rule per credential family.
//!
//! The families and their shapes follow the high-confidence rules of gitleaks' default
//! configuration (`config/gitleaks.toml` in github.com/gitleaks/gitleaks, MIT licence,
//! Copyright (c) 2019 Zachary Rice), adapted for masking rather than finding:
//!
//! - Lengths are minimums (`{36,}` where gitleaks says `{36}`): a longer token of a known prefix
//!   is no less a secret, and masking only its first part would leak the rest.
//! - There is no look-around in Rust's `regex`, so gitleaks' trailing delimiters are dropped, and
//!   its leading `\b` becomes a check in code ([`starts_token`]) that also accepts the `\n` of a
//!   JSON-escaped string, since event lines hold file contents escaped that way.
//! - gitleaks' generic `key = value` rule is left out: it is noisy by design, and a false
//!   positive here destroys the text a person reads. The values of the project's own secret
//!   files are masked by value instead (`redact.rs`).
//!
//! Every rule carries the keywords gitleaks uses to skip it cheaply, and an entropy floor: a
//! match whose secret is too regular (`sk_live_xxxxxxxx…`, a placeholder) or only lower-case
//! words (`sk-learn-compatible-estimator`) is left readable. Commit hashes and UUIDs match no
//! rule at all. The floors sit at or below gitleaks' and clear of what real keys reach: in a
//! simulation of 100,000 random keys of each rule's shortest form, none fell below its floor
//! (gitleaks' 3.0 on a 20-character AWS key id lets about 1 in 5,000 through). Private keys and
//! URL passwords have no floor: a weak password is still a password.

use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;

/// One credential family.
pub(crate) struct Rule {
    /// The gitleaks rule id this follows (or a name in its style for the few it lacks). Only
    /// the tests read it, to name the rule a case covers; it also documents the table.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) id: &'static str,
    /// Words (in lower case) of which one appears, in any case, in every match: the cheap
    /// first test, shared by a family where it can be (`xox` for Slack's `xoxb-`, `xoxp-`, …).
    pub(crate) keywords: &'static [&'static str],
    /// The shape. When it has a capture group, only the group is masked (`Bearer [REDACTED]`).
    pub(crate) pattern: &'static str,
    /// Shannon entropy (bits per byte) the secret must reach.
    pub(crate) entropy: f32,
    /// Whether the secret must start a token (not right after a letter or digit).
    pub(crate) bounded: bool,
    /// Substrings that mark documentation examples (`AKIAIOSFODNN7EXAMPLE`).
    pub(crate) examples: &'static [&'static str],
    /// A private-key block: the match is where to look, and only its lines of key material
    /// are masked ([`key_material`]), never the lines between that are not.
    pub(crate) key_block: bool,
}

impl Rule {
    const fn new(
        id: &'static str,
        keywords: &'static [&'static str],
        pattern: &'static str,
    ) -> Rule {
        Rule {
            id,
            keywords,
            pattern,
            entropy: 0.0,
            bounded: true,
            examples: &[],
            key_block: false,
        }
    }

    const fn entropy(mut self, bits: f32) -> Rule {
        self.entropy = bits;
        self
    }

    /// For shapes that begin with punctuation (`-----BEGIN`, `://`) or carry their own `\b`.
    const fn anywhere(mut self) -> Rule {
        self.bounded = false;
        self
    }

    const fn examples(mut self, markers: &'static [&'static str]) -> Rule {
        self.examples = markers;
        self
    }

    const fn key_block(mut self) -> Rule {
        self.key_block = true;
        self
    }
}

/// Every rule, most specific first (the order only matters for reading).
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    // Private keys: the key lines of PEM/OpenSSH/PGP blocks, and of the head of one cut short.
    // Only lines of key material are masked: a line of code a worker put between the BEGIN
    // and END lines stays in view.
    Rule::new("private-key", &["-----begin"],
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
        .anywhere().key_block(),
    Rule::new("private-key-partial", &["-----begin"],
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:(?:\s|\\[rn])+[A-Za-z0-9+/=]{16,})+")
        .anywhere().key_block(),
    // Cloud providers.
    Rule::new("aws-access-token", &["a3t", "akia", "asia", "abia", "acca"],
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}")
        .entropy(2.5).examples(&["EXAMPLE"]),
    Rule::new("aws-secret-access-key", &["secret_access_key", "secretaccesskey"],
        r#"(?i)aws_?secret_?access_?key\\?["']?\s*[:=]\s*\\?["']?([A-Za-z0-9/+]{40})"#)
        .entropy(3.5).anywhere(),
    Rule::new("gcp-api-key", &["aiza"], r"AIza[\w-]{35}").entropy(3.5),
    Rule::new("gcp-service-account-key-id", &["private_key_id"],
        r#"private_key_id\\?"\s*:\s*\\?"([0-9a-f]{40})"#)
        .entropy(2.5).anywhere(),
    Rule::new("azure-ad-client-secret", &["q~"], r"[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}")
        .entropy(3.0),
    Rule::new("azure-storage-account-key", &["accountkey"], r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)")
        .entropy(4.0).anywhere(),
    Rule::new("azure-sas-signature", &["sig="], r"[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})")
        .entropy(3.5).anywhere(),
    Rule::new("digitalocean-token", &["_v1_"], r"do[opr]_v1_[a-f0-9]{64}")
        .entropy(3.0),
    // Code hosting and package registries.
    Rule::new("github-token", &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"gh[pousr]_[0-9A-Za-z]{30,}")
        .entropy(3.0),
    Rule::new("github-fine-grained-pat", &["github_pat_"], r"github_pat_[0-9A-Za-z_]{22,}")
        .entropy(3.0),
    Rule::new("gitlab-pat", &["glpat-"], r"glpat-[\w-]{20,}").entropy(3.0),
    Rule::new("gitlab-token",
        &["glcbt-", "gldt-", "glffct-", "glft-", "glimt-", "glagent-", "gloas-", "glptt-", "glrt-", "glsoat-"],
        r"gl(?:cbt|dt|ffct|ft|imt|agent|oas|ptt|rt|soat)-[0-9A-Za-z_-]{20,}")
        .entropy(3.0),
    Rule::new("gitlab-runner-registration-token", &["gr1348941"], r"GR1348941[\w-]{20,}")
        .entropy(3.0),
    Rule::new("npm-access-token", &["npm_"], r"npm_[A-Za-z0-9]{36,}").entropy(2.0),
    Rule::new("pypi-upload-token", &["pypi-age"],
        r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{50,}")
        .entropy(3.0),
    Rule::new("rubygems-api-token", &["rubygems_"], r"rubygems_[a-f0-9]{48}").entropy(2.0),
    // Payments, messaging, e-mail.
    Rule::new("stripe-access-token", &["sk_", "rk_"],
        r"(?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,}")
        .entropy(2.0),
    Rule::new("slack-token", &["xox"],
        r"xox[abeoprs]-[0-9A-Za-z-]{10,}")
        .entropy(2.3),
    Rule::new("slack-app-token", &["xapp-"], r"(?i)xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+").entropy(1.5),
    Rule::new("slack-config-access-token", &["xoxe.xox"],
        r"(?i)xoxe\.xox[bp]-\d-[A-Z0-9]{163,}")
        .entropy(2.0),
    Rule::new("slack-webhook-url", &["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/]{43,56})")
        .entropy(3.0).anywhere(),
    Rule::new("twilio-api-key", &["sk"], r"SK[0-9a-fA-F]{32}").entropy(2.5),
    Rule::new("sendgrid-api-token", &["sg."], r"SG\.[A-Za-z0-9=_.-]{66,}").entropy(2.0),
    // AI providers.
    Rule::new("anthropic-api-key", &["sk-ant-"], r"sk-ant-[A-Za-z0-9_-]{20,}").entropy(3.0),
    Rule::new("openai-api-key", &["sk-"], r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")
        .entropy(3.0),
    Rule::new("huggingface-access-token", &["hf_"], r"hf_[A-Za-z]{34,}").entropy(2.0),
    Rule::new("huggingface-organization-api-token", &["api_org_"], r"api_org_[A-Za-z]{34,}")
        .entropy(2.0),
    Rule::new("perplexity-api-key", &["pplx-"], r"pplx-[A-Za-z0-9]{48,}").entropy(4.0),
    // Platforms and developer services.
    Rule::new("shopify-token", &["shp"],
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")
        .entropy(2.0),
    Rule::new("databricks-api-token", &["dapi"], r"dapi[a-f0-9]{32}(?:-\d)?").entropy(2.5),
    Rule::new("vault-token", &["hvs.", "hvb."], r"hv[sb]\.[\w-]{90,}").entropy(3.5),
    Rule::new("grafana-token", &["glc_", "glsa_", "eyjrijoi"],
        r"glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}={0,3}")
        .entropy(3.0),
    Rule::new("postman-api-token", &["pmak-"], r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}").entropy(3.0),
    Rule::new("linear-api-key", &["lin_api_"], r"lin_api_[A-Za-z0-9]{40,}").entropy(2.0),
    Rule::new("pulumi-api-token", &["pul-"], r"pul-[a-f0-9]{40}").entropy(2.0),
    Rule::new("age-secret-key", &["age-secret-key-1"],
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")
        .entropy(3.0),
    Rule::new("heroku-api-key-v2", &["hrku-aa"], r"HRKU-AA[0-9a-zA-Z_-]{58}").entropy(4.0),
    Rule::new("sentry-token", &["sntry"],
        r"sntryu_[a-f0-9]{64}|sntrys_eyJpYXQiO[A-Za-z0-9+/=_]{40,}")
        .entropy(3.0),
    Rule::new("doppler-api-token", &["dp.pt."], r"dp\.pt\.[A-Za-z0-9]{43,}").entropy(2.0),
    Rule::new("planetscale-token", &["pscale_"],
        r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}")
        .entropy(3.0),
    // Shapes any service uses.
    // The second part need not be JSON (`eyJ`): a JWE's is its encrypted key, and a JWE has
    // five parts. The signature may be empty (`alg: none`).
    Rule::new("jwt", &["eyj"],
        r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_/\\-]{10,}\.(?:[A-Za-z0-9_/\\-]{10,}={0,2})?(?:\.[A-Za-z0-9_-]{10,}){0,2}")
        .entropy(3.0),
    Rule::new("url-password", &["://"], r#"://[^\s:/?#@"'<>\\]+:([^\s/?#@"'<>\\]+)@"#).anywhere(),
    Rule::new("bearer-token", &["bearer"], r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)")
        .entropy(2.5).anywhere(),
    Rule::new("basic-auth-header", &["basic"],
        r"(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/]{8,}={0,2})")
        .entropy(1.0).anywhere(),
];

/// The rules, compiled once per process.
struct Compiled {
    /// Every rule's keywords, matched ASCII-case-insensitively in one pass. `None` only if the
    /// automaton failed to build, and then every rule runs.
    keywords: Option<AhoCorasick>,
    /// For each keyword (by pattern id), the index of its rule.
    keyword_rule: Vec<usize>,
    /// One regex per rule, compiled the first time a text holds one of its keywords (`None`
    /// for a pattern that failed to compile; a test forbids it). Compiling all 46 up front
    /// cost a long-lived process (the dashboard) about 30 MiB for rules most texts never need.
    regexes: Vec<OnceLock<Option<Regex>>>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let (words, keyword_rule): (Vec<&str>, Vec<usize>) = RULES
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| rule.keywords.iter().map(move |&k| (k, i)))
        .unzip();
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&words)
        .ok();
    Compiled {
        keywords,
        keyword_rule,
        regexes: RULES.iter().map(|_| OnceLock::new()).collect(),
    }
});

/// Rule `i`'s regex, compiled on first use.
fn regex_of(compiled: &Compiled, i: usize) -> Option<&Regex> {
    compiled.regexes[i]
        .get_or_init(|| Regex::new(RULES[i].pattern).ok())
        .as_ref()
}

/// Byte ranges of every secret a rule finds in `text` (unsorted, possibly overlapping).
pub(crate) fn secret_spans(text: &str) -> Vec<Range<usize>> {
    let compiled = &*COMPILED;
    let candidates = candidates_of(compiled, text);
    let mut spans = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if !candidates[i] {
            continue;
        }
        if let Some(regex) = regex_of(compiled, i) {
            rule_spans(rule, regex, text, &mut spans);
        }
    }
    spans
}

/// Which rules have a keyword in `text`: one automaton pass, the cheap test that lets the many
/// lines without a secret skip every rule. Overlapping matches count, since one keyword may sit
/// inside another (`sk` in `sk-ant-`).
fn candidates_of(compiled: &Compiled, text: &str) -> Vec<bool> {
    let Some(keywords) = &compiled.keywords else {
        return vec![true; RULES.len()];
    };
    let mut found = vec![false; RULES.len()];
    for m in keywords.find_overlapping_iter(text) {
        if let Some(&rule) = compiled.keyword_rule.get(m.pattern().as_usize()) {
            found[rule] = true;
        }
    }
    found
}

/// The secrets one rule finds, appended to `spans`.
fn rule_spans(rule: &Rule, regex: &Regex, text: &str, spans: &mut Vec<Range<usize>>) {
    let mut at = 0;
    while at <= text.len() {
        let Some(caps) = regex.captures_at(text, at) else {
            return;
        };
        let Some(whole) = caps.get(0) else {
            return;
        };
        let secret = caps.get(1).unwrap_or(whole);
        if rule.bounded && !starts_token(text, secret.start()) {
            // Maybe a later start inside the same stretch begins a token.
            at = next_char(text, whole.start());
            continue;
        }
        if rule.key_block {
            key_material(text, secret.range(), spans);
        } else if looks_secret(rule, secret.as_str()) {
            spans.push(secret.range());
        }
        // Past the secret, not the match, so a delimiter the pattern consumed after it can
        // still lead the next match.
        at = secret.end().max(next_char(text, whole.start()));
    }
}

/// The lines of key material in the private-key block at `block` (from its BEGIN line),
/// appended to `spans`, one span a line: a line that is not key material (a line of code a
/// worker hid between BEGIN and END, the END line, a PEM header) is never masked. Lines end at
/// a newline, a CR, or their JSON escapes (`\n`, `\r`: event lines hold files that way). In a
/// diff (the BEGIN line starts with `+`, `-` or a blank) each line's prefix stays too.
fn key_material(text: &str, block: Range<usize>, spans: &mut Vec<Range<usize>>) {
    let in_diff = diff_prefixed(text, block.start);
    // The partial rule stops inside a line that is not key material: judge it whole.
    let end = line_end(text, block.end);
    let mut lines = line_ranges(text, block.start..end);
    lines.next(); // The BEGIN line.
    for mut line in lines {
        if in_diff && text[line.clone()].starts_with(['+', '-', ' ']) {
            line.start += 1;
        }
        let piece = &text[line.clone()];
        let trimmed = piece.trim_matches([' ', '\t']);
        let start = line.start + (piece.len() - piece.trim_start_matches([' ', '\t']).len());
        if is_key_line(trimmed) {
            spans.push(start..start + trimmed.len());
        }
    }
}

/// Whether the char before byte `at` is a diff line's prefix (`+`, `-`, a blank) at the start
/// of a line.
fn diff_prefixed(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let Some(head) = before.strip_suffix(['+', '-', ' ']) else {
        return false;
    };
    head.is_empty() || head.ends_with(['\n', '\r']) || head.ends_with("\\n")
}

/// Where the line holding byte `at` ends (at its line break, or the end of `text`).
fn line_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    let breaks = [
        rest.find('\n'),
        rest.find('\r'),
        rest.find("\\n"),
        rest.find("\\r"),
    ];
    at + breaks.into_iter().flatten().min().unwrap_or(rest.len())
}

/// The lines of `text[range]`, without their line breaks.
fn line_ranges(text: &str, range: Range<usize>) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = range.start;
    std::iter::from_fn(move || {
        if at > range.end {
            return None;
        }
        let end = line_end(text, at).min(range.end);
        let line = at..end;
        let rest = &text[end..range.end];
        // Past the break: two bytes for an escape, one for a newline or CR, and none at the end.
        at = end + if rest.starts_with('\\') { 2 } else { 1 };
        Some(line)
    })
}

/// Whether a line of a key block is key material: base64 (a PEM or OpenSSH body line, with
/// its `=` padding) or an armoured key's `=XXXX` checksum. A short line of letters of one case
/// (`exit`, `EOF`) is taken for a word, not key: a real key line that short is its last few
/// characters, and such words are what a worker could hide between the markers.
fn is_key_line(line: &str) -> bool {
    let body = line
        .strip_prefix('=')
        .filter(|b| b.len() == 4)
        .unwrap_or(line);
    let data = body.trim_end_matches('=');
    let base64 = !data.is_empty()
        && body.len() - data.len() <= 2
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    let one_case_word = data.bytes().all(|b| b.is_ascii_lowercase())
        || data.bytes().all(|b| b.is_ascii_uppercase());
    base64 && (line.len() >= 16 || !one_case_word)
}

/// The byte index of the char after the one at `i`.
fn next_char(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(i + 1, |c| i + c.len_utf8())
}

/// Whether a token may start at byte `at`: at the start, after anything but an ASCII letter or
/// digit, or after a JSON escape (`\n`, `\r`, `\t`) that ends the previous line.
fn starts_token(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    let Some(&prev) = at.checked_sub(1).and_then(|i| bytes.get(i)) else {
        return true;
    };
    if !prev.is_ascii_alphanumeric() {
        return true;
    }
    matches!(prev, b'n' | b'r' | b't') && at >= 2 && bytes[at - 2] == b'\\'
}

/// The entropy floor and the placeholder checks: whether a match is a secret worth masking.
fn looks_secret(rule: &Rule, secret: &str) -> bool {
    if is_placeholder(secret) || rule.examples.iter().any(|m| secret.contains(m)) {
        return false;
    }
    if rule.entropy > 0.0 && (is_wordlike(secret) || shannon_entropy(secret) < rule.entropy) {
        return false;
    }
    true
}

/// Template syntax standing for a secret rather than being one (`${DB_PASSWORD}`, `%s`).
fn is_placeholder(secret: &str) -> bool {
    secret.starts_with(['$', '%', '{', '<']) || secret.ends_with('}')
}

/// Only lower-case letters and separators: an identifier or words, not random characters.
fn is_wordlike(secret: &str) -> bool {
    secret
        .bytes()
        .all(|b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_' | b'.'))
}

/// Shannon entropy of `s` in bits per byte: 0 for `aaaa`, 4 for 16 distinct bytes equally often.
fn shannon_entropy(s: &str) -> f32 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f32;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f32 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests;
