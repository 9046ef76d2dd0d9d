//! Redaction of secrets in everything Pitroom stores or shows (PRODUCT.md §7): well-known key
//! formats, and the values found in the project's secret-looking files.

use std::path::Path;

use regex::Regex;

/// What a redacted secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Well-known credential formats: provider API keys, tokens, private-key blocks.
const PATTERNS: &[&str] = &[
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    r"\bsk-ant-[A-Za-z0-9_\-]{20,}",
    r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*",
];

/// Shortest value from a secret file that is worth redacting (shorter ones are words like
/// `true` or `3000` that would mangle unrelated text).
const MIN_VALUE_LEN: usize = 8;

/// A redactor: the patterns plus the literal values of the project's secrets.
pub struct Redactor {
    patterns: Vec<Regex>,
    values: Vec<String>,
}

impl Redactor {
    /// A redactor for the well-known formats and the given literal values.
    pub fn new(values: Vec<String>) -> Redactor {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.chars().count() >= MIN_VALUE_LEN)
            .collect();
        // Longest first, so a value that contains another is masked whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Redactor {
            patterns: PATTERNS.iter().filter_map(|p| Regex::new(p).ok()).collect(),
            values,
        }
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
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), MASK);
            }
        }
        for pattern in &self.patterns {
            if pattern.is_match(&out) {
                out = pattern.replace_all(&out, MASK).into_owned();
            }
        }
        out
    }
}

/// The values of a secret file: `KEY=VALUE` lines (quotes dropped, `export` allowed), or, for
/// files that are not in that form (keys, certificates), every substantial line.
fn secret_values(text: &str) -> Vec<String> {
    let mut values = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        match line.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() && !key.contains(' ') => {
                let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
                values.push(value.to_string());
            }
            _ if line.len() >= 16 && !line.starts_with("-----") => values.push(line.to_string()),
            _ => {}
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for p in PATTERNS {
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
    fn private_key_blocks_are_masked_whole() {
        let r = Redactor::new(Vec::new());
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter";
        assert_eq!(r.redact(text), format!("before\n{MASK}\nafter"));
    }

    #[test]
    fn values_from_env_files_are_masked_but_short_words_are_not() {
        let values = secret_values(
            "# comment\nexport API_TOKEN=\"hunter2-very-secret\"\nPORT=3000\nDEBUG=true\n",
        );
        let r = Redactor::new(values);
        assert_eq!(
            r.redact("using hunter2-very-secret on port 3000, DEBUG=true"),
            format!("using {MASK} on port 3000, DEBUG=true")
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
}
