//! Odd and random argv, and the helpers that follow git's own code.

use super::*;
use crate::aliases::{levenshtein, split_cmdline};

#[test]
fn odd_argv_never_panics() {
    let odd: Vec<Vec<String>> = vec![
        vec!["-c".into()],
        vec!["-C".into()],
        vec!["--git-dir".into()],
        vec!["--config-env".into()],
        vec!["--config-env".into(), "novalue".into()],
        vec!["--config-env=alias.x=".into(), "x".into()],
        vec!["-c".into(), "=".into(), "x".into()],
        vec!["-c".into(), "alias.".into(), "x".into()],
        vec![
            "-c".into(),
            "alias..command=commit".into(),
            "command".into(),
        ],
        vec!["".into()],
        vec!["".into(), "".into()],
        vec!["-".into()],
        vec!["--".into()],
        vec!["--=".into()],
        vec!["ünïcödé".into(), "-ü".into()],
        vec!["branch".into(), "-ü".into(), "--ü=ü".into()],
        vec!["tag".into(), "-né".into()],
        vec!["fetch".into(), "-oé".into(), "-jé".into()],
        vec!["apply".into(), "-é3".into()],
        vec!["config".into(), "-f".into()],
        vec!["for-each-repo".into(), "--config".into()],
        vec!["notes".into(), "--ref".into()],
        vec!["\u{0}".into(), "\u{7f}".into()],
        vec!["-c".into(), "alias.x=\\".into(), "x".into()],
        vec!["-c".into(), "alias.x='".into(), "x".into()],
        vec!["-c".into(), "alias.x=".into(), "x".into()],
        vec!["-c".into(), "alias.x=  ".into(), "x".into()],
    ];
    let envs: Vec<Vec<(String, String)>> = vec![
        vec![],
        strings(&[("GIT_CONFIG_COUNT", "99999999999999999999")]),
        strings(&[("GIT_CONFIG_COUNT", "-1")]),
        strings(&[("GIT_CONFIG_COUNT", "4294967295")]),
        strings(&[("GIT_CONFIG_COUNT", "ü")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "'")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "'a'='")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "'a'\\")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "'alias.x'=x")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "'ü'='é' 'alias.é'='ü'")]),
        strings(&[("GIT_CONFIG_PARAMETERS", "   ")]),
    ];
    let aliases = strings(&[("", ""), ("alias.", "x"), ("x", "x"), ("é", "!")]);
    for args in &odd {
        for env in &envs {
            let ctx = Context {
                aliases: &aliases,
                env,
            };
            let decision = decide(args, &ctx);
            if let Decision::Block { reason } = &decision {
                let _ = refusal_line(args, reason);
            }
        }
    }
}

#[test]
fn random_argv_never_panics() {
    // The argv words: these, then the shared `SUBCOMMANDS`, then `AFTER`.
    const BEFORE: &[&str] = &[
        "-c",
        "-C",
        "--git-dir",
        "--git-dir=",
        "--config-env",
        "alias.a=commit",
        "alias.b=!x",
        "alias.c=a",
        "a",
        "b",
        "c",
    ];
    const AFTER: &[&str] = &[
        "-",
        "--",
        "-h",
        "--help",
        "-d",
        "-l",
        "--list",
        "=",
        "'",
        "\"",
        "\\",
        "é",
        "",
        "for-each-repo",
        "stash",
        "list",
        "--dry-run",
        "-3",
        "-n",
        "x y",
    ];
    let words = [BEFORE, SUBCOMMANDS, AFTER].concat();
    let aliases = strings(&[("a", "b"), ("b", "c -c alias.a=a a"), ("c", "a")]);
    let env = strings(&[("GIT_CONFIG_PARAMETERS", "'alias.z'='for-each-repo z'")]);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        let mut args = Vec::new();
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let len = (seed >> 59) as usize;
        for _ in 0..len {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            args.push(words[(seed >> 33) as usize % words.len()].to_string());
        }
        let ctx = Context {
            aliases: &aliases,
            env: &env,
        };
        let decision = decide(&args, &ctx);
        let _ = refusal_line(&args, reason_of(&decision).unwrap_or(""));
    }
}

#[test]
fn levenshtein_matches_gits_weights() {
    assert_eq!(levenshtein(b"comit", b"commit"), 1);
    assert_eq!(levenshtein(b"commitx", b"commit"), 3);
    assert_eq!(levenshtein(b"cmomit", b"commit"), 0);
    assert_eq!(levenshtein(b"", b"rm"), 2);
    assert_eq!(levenshtein(b"rm", b""), 6);
}

#[test]
fn split_cmdline_matches_git() {
    assert_eq!(
        split_cmdline("log  --format='%h %s' \"a b\" c\\ d"),
        Some(vec![
            "log".to_string(),
            "--format=%h %s".to_string(),
            "a b".to_string(),
            "c d".to_string(),
        ])
    );
    assert_eq!(
        split_cmdline(" x "),
        Some(vec![String::new(), "x".into(), String::new()])
    );
    assert_eq!(split_cmdline("a 'b"), None);
    assert_eq!(split_cmdline("a \\"), None);
}
