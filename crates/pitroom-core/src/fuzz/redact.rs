//! The redactor over anything a worker may print: it never panics, masking twice changes
//! nothing more, and no planted secret — a value of the project's secret files, or a key of a
//! well-known format — survives, bare or inside a JSON event line.

use proptest::prelude::*;

use crate::redact::{Redactor, MASK};

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// `n` distinct characters of `alphabet` in random order: as irregular as a real key.
fn shuffled(alphabet: &'static str, n: usize) -> impl Strategy<Value = String> {
    Just(alphabet.chars().collect::<Vec<char>>())
        .prop_shuffle()
        .prop_map(move |chars| chars.into_iter().take(n).collect())
}

/// A key of a well-known format, and the part of it that must not survive.
fn known_key() -> impl Strategy<Value = (String, String)> {
    let plain = |prefix: &'static str, alphabet: &'static str, n: usize| {
        shuffled(alphabet, n).prop_map(move |s| {
            let key = format!("{prefix}{s}");
            (key.clone(), key)
        })
    };
    prop_oneof![
        plain("ghp_", ALNUM, 36),
        plain("github_pat_", ALNUM, 40),
        plain("AKIA", UPPER_DIGITS, 16),
        plain("sk-ant-api03-", ALNUM, 40),
        plain("sk-proj-", ALNUM, 40),
        plain("sk_live_", ALNUM, 30),
        plain("xoxb-", ALNUM, 30),
        plain("glpat-", ALNUM, 24),
        plain("npm_", ALNUM, 36),
        shuffled(ALNUM, 32).prop_map(|t| (format!("Authorization: Bearer {t}"), t)),
        (
            shuffled(ALNUM, 20),
            shuffled(ALNUM, 20),
            shuffled(ALNUM, 20)
        )
            .prop_map(|(a, b, c)| {
                let jwt = format!("eyJ{a}.eyJ{b}.{c}");
                (jwt.clone(), jwt)
            }),
        (shuffled(ALNUM, 40), shuffled(ALNUM, 40)).prop_map(|(a, b)| {
            let body = format!("{a}\n{b}");
            (
                format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"),
                body,
            )
        }),
        shuffled(ALNUM, 12).prop_map(|pw| (format!("postgres://admin:{pw}@db.internal/x"), pw)),
    ]
}

/// Text around secrets: key-format prefixes, JSON punctuation, escapes, non-ASCII, masks.
fn noise() -> impl Strategy<Value = String> {
    let bits = prop::sample::select(vec![
        "ghp_",
        "sk-",
        "sk_live_",
        "AKIA",
        "eyJ",
        "Bearer ",
        "bearer\t",
        "://",
        ":",
        "@",
        "\\n",
        "\\\"",
        "\"",
        "{",
        "}",
        "=",
        "-----BEGIN ",
        "PRIVATE KEY-----",
        "-----END ",
        MASK,
        "[",
        "]",
        "REDACTED",
        " ",
        "\n",
        "é",
        "🦀",
        "\u{0}",
        "x",
        "Z9",
    ]);
    prop_oneof![
        3 => prop::collection::vec(bits, 0..12).prop_map(|b| b.concat()),
        2 => ".{0,40}",
        1 => "[A-Za-z0-9_\\-]{0,60}",
    ]
}

/// A literal value of a secret file: no surrounding blanks, at least 8 characters, no mask in it.
fn secret_value() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.:/@\"\\\\ -]{6,24}[A-Za-z0-9]{2}"
        .prop_map(|v| v.trim().to_string())
        .prop_filter("worth redacting, not a piece of the mask", |v| {
            v.chars().count() >= 8 && !MASK.contains(v.as_str())
        })
}

proptest! {
    #![proptest_config(super::config(512))]

    #[test]
    fn fuzz_redacting_any_text_twice_changes_nothing_more(
        parts in prop::collection::vec(prop_oneof![noise(), known_key().prop_map(|k| k.0)], 0..6),
        values in prop::collection::vec(secret_value(), 0..3),
        bytes in prop::collection::vec(any::<u8>(), 0..120),
    ) {
        let redactor = Redactor::new(values);
        let text = format!("{}{}", parts.concat(), String::from_utf8_lossy(&bytes));
        let once = redactor.redact(&text);
        prop_assert_eq!(redactor.redact(&once), once.clone(), "from {:?}", text);
        let line = serde_json::json!({ "text": text }).to_string();
        let once = redactor.redact(&line);
        prop_assert_eq!(redactor.redact(&once), once);
    }

    #[test]
    fn fuzz_no_planted_secret_file_value_survives(
        value in secret_value(),
        others in prop::collection::vec(secret_value(), 0..3),
        before in noise(),
        after in noise(),
    ) {
        let mut values = others;
        values.push(value.clone());
        let redactor = Redactor::new(values);
        let text = format!("{before}{value}{after}");
        let out = redactor.redact(&text);
        prop_assert!(!out.contains(&value), "{:?} -> {:?}", text, out);
        // Inside an event line, where the value is JSON-escaped.
        let line = serde_json::json!({ "part": { "text": text } }).to_string();
        let escaped = serde_json::to_string(&value).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        let out = redactor.redact(&line);
        prop_assert!(!out.contains(escaped), "{:?} -> {:?}", line, out);
    }

    #[test]
    fn fuzz_no_planted_key_of_a_known_format_survives(
        (key, secret) in known_key(),
        before in noise(),
        after in noise(),
    ) {
        let redactor = Redactor::new(Vec::new());
        // A key starts a token (the rules' boundary), so a blank sets it off from the noise.
        let text = format!("{before} {key} {after}");
        let out = redactor.redact(&text);
        prop_assert!(!out.contains(&secret), "{:?} -> {:?}", text, out);
        let line = serde_json::json!({ "text": text }).to_string();
        let escaped = serde_json::to_string(&secret).unwrap();
        let out = redactor.redact(&line);
        prop_assert!(!out.contains(&escaped[1..escaped.len() - 1]), "{:?} -> {:?}", line, out);
    }
}

/// A line of a `.env`-style secret file that is not a `KEY=VALUE` assignment.
fn other_env_line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            "# a comment = with equals",
            "export SHORT=abc",
            "name: not-a-secret-key",
            "machine example.org login me",
            "-----BEGIN CERTIFICATE-----",
            "{ not json",
            "password",
            "=",
        ])
        .prop_map(str::to_string),
        ".{0,24}",
    ]
}

proptest! {
    #![proptest_config(super::config(256))]

    #[test]
    fn fuzz_every_value_of_a_projects_env_file_is_masked(
        assignments in prop::collection::vec(
            ("[A-Z_]{1,10}", "[A-Za-z0-9_./:@+-]{8,30}", any::<bool>(), any::<bool>()),
            1..5,
        ),
        others in prop::collection::vec(other_env_line(), 0..5),
        pick in any::<prop::sample::Index>(),
        before in noise(),
        after in noise(),
    ) {
        // One directory for every case (they run one after another), its `.env` rewritten.
        static DIR: std::sync::LazyLock<tempfile::TempDir> =
            std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());
        let mut lines: Vec<String> = assignments
            .iter()
            .map(|(key, value, export, quoted)| {
                let value = if *quoted { format!("\"{value}\"") } else { value.clone() };
                format!("{}{key}={value}", if *export { "export " } else { "" })
            })
            .collect();
        // Other lines after the first assignment, so the file never reads as JSON.
        lines.extend(others);
        std::fs::write(DIR.path().join(".env"), lines.join("\n")).unwrap();
        let redactor = Redactor::for_dirs(&[DIR.path()]);
        let value = &assignments[pick.index(assignments.len())].1;
        prop_assume!(!MASK.contains(value.as_str()));
        let text = format!("{before}{value}{after}");
        let out = redactor.redact(&text);
        prop_assert!(!out.contains(value.as_str()), "{:?} -> {:?}", text, out);
    }
}
