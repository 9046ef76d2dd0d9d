//! The config loader over any file, environment and flags: a file that is not TOML is the one
//! error (`ConfigError`, naming the file); everything else — unknown keys, wrong types, values
//! out of range — is a warning, and every key with a default still reads as its kind.

use proptest::prelude::*;

use crate::config::{Config, FlagValues};

const KNOWN: &[&str] = &[
    "worker",
    "model",
    "fallback",
    "models",
    "tiers",
    "costs",
    "worker_prices",
    "budget",
    "workers",
    "timeout",
    "watchdog",
    "primary",
    "price",
    "link",
    "sandbox_writable",
    "verify_timeout",
    "max_hold",
    "attempts",
    "web",
    "notify",
    "review_gate",
    "review_gate_max_rounds",
    "max_parallel",
    "max_parallel_per",
];

const ENV: &[&str] = &[
    pitroom_env::PITROOM_WORKER,
    pitroom_env::PITROOM_MODEL,
    pitroom_env::PITROOM_FALLBACK,
    pitroom_env::PITROOM_TIMEOUT,
    pitroom_env::PITROOM_WATCHDOG,
    pitroom_env::PITROOM_PRIMARY,
    pitroom_env::PITROOM_PRICE,
    pitroom_env::PITROOM_SANDBOX_WRITABLE,
    pitroom_env::PITROOM_MAX_PARALLEL,
];

/// Raw text a person (or a typo) might give as a value, for the environment and flags.
fn raw_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "30m", "90", "1.5s", "7d", "0", "-5s", "1e400", "nan", "inf", "99999999999999999999d",
            "18446744073709551616", "18446744073709551615", "1e300", "9".repeat(400).leak(), ".",
            "..5", "5..", "1h2m", "true", "on", "yes", "", " ", "a, b,, c", "opencode:a/b",
            "ms", "0.0000000001ms", "4e9h", "5 m", "é",
        ])
        .prop_map(str::to_string),
        1 => ".{0,20}",
    ]
}

/// A TOML value of any type.
fn toml_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        raw_value().prop_map(|s| toml::Value::String(s).to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "1e300",
            "-1e300",
            "1.7976931348623157e308",
            "-0.0",
            "nan",
            "inf",
            "-inf",
            "+inf",
            "0.5",
            "9223372036854775807",
            "-9223372036854775808",
            "true",
            "false",
            "1979-05-27",
            "07:32:00",
            "1979-05-27T07:32:00Z",
            "0x10",
            "0o7",
            "1_000",
            "'literal'",
            "'''multi\nline'''",
        ])
        .prop_map(str::to_string),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::btree_map(key(), inner, 0..4).prop_map(|kv| {
                let pairs: Vec<String> = kv.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ {} }}", pairs.join(", "))
            }),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KNOWN.to_vec()).prop_map(str::to_string),
        1 => "[a-z_]{1,8}",
        1 => Just("\"quoted key é\"".to_string()),
        1 => Just("workers.mycli.command".to_string()),
    ]
}

/// A config file: mostly TOML (each key once, any value), else lines that may not be.
fn toml_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::btree_map(key(), toml_value(), 0..8).prop_map(|kv| {
            kv.iter().map(|(k, v)| format!("{k} = {v}\n")).collect::<String>()
        }),
        1 => toml_lines(),
    ]
}

/// `key = value` lines, tables, and the odd broken line.
fn toml_lines() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        6 => (key(), toml_value()).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => prop::sample::select(vec![
            "[workers.mycli]", "[costs]", "[models]", "[[workers]]", "[timeout]", "# comment",
            "worker =", "= 1", "[", "\"unterminated", "key = \"\\u{110000}\"",
        ])
        .prop_map(str::to_string),
        1 => ".{0,30}",
    ];
    prop::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(super::config(256))]

    #[test]
    fn fuzz_any_config_file_env_and_flags_load_or_fail_typed(
        text in toml_text(),
        env in prop::collection::vec((prop::sample::select(ENV.to_vec()), raw_value()), 0..5),
        flags in prop::collection::vec(
            (prop::sample::select(KNOWN.to_vec()), raw_value()), 0..4
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, &text).unwrap();
        let file = path.display().to_string();
        let lookup = |name: &str| {
            if name == pitroom_env::PITROOM_CONFIG {
                return Some(file.clone());
            }
            env.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
        };
        let mut given = FlagValues::default();
        for (key, raw) in &flags {
            given.set(key, "--flag", raw.clone());
        }
        let is_toml = text.parse::<toml::Table>().is_ok();
        match Config::load(&lookup, &given) {
            Err(e) => {
                prop_assert!(!is_toml, "a TOML file loads: {}", e);
                prop_assert_eq!(&e.path, &file);
                prop_assert!(e.to_string().contains(&file));
            }
            Ok(c) => {
                prop_assert!(is_toml, "only TOML loads: {:?}", text);
                prop_assert_eq!(c.entries().len(), KNOWN.len());
                // Every key with a default still reads as its kind, whatever was given.
                prop_assert!(c.text("worker").is_some());
                prop_assert!(c.text("primary").is_some());
                for key in ["timeout", "watchdog", "verify_timeout", "max_hold"] {
                    prop_assert!(c.duration(key).is_some(), "{} of {:?}", key, text);
                }
                prop_assert!(c.count("max_parallel").is_some());
                prop_assert!(c.count("attempts").is_some());
                prop_assert!(c.count("review_gate_max_rounds").is_some());
                let _ = c.flag("web");
                for key in KNOWN {
                    let _ = (c.text(key), c.list(key), c.table(key), c.source(key));
                    let _ = c.map_value(key, "x");
                }
                prop_assert!(c.warnings.iter().all(|w| !w.trim().is_empty()));
            }
        }
    }
}
