//! The guard's unit tests, one file per topic, sharing the table helpers here.

mod aliases;
mod commands;
mod fuzz;
mod globals;
mod robustness;
mod shim;

use super::*;

pub(super) const ALLOW: bool = true;
pub(super) const BLOCK: bool = false;

/// A blocked subcommand and conditional ones, in both fuzzers' argv words.
pub(super) const SUBCOMMANDS: &[&str] = &["commit", "branch", "tag", "config", "fetch", "apply"];

pub(super) fn strings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(super) fn argv(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

pub(super) fn decide_with(
    args: &[String],
    aliases: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Decision {
    let aliases = strings(aliases);
    let env = strings(env);
    decide(
        args,
        &Context {
            aliases: &aliases,
            env: &env,
        },
    )
}

pub(super) fn reason_of(decision: &Decision) -> Option<&str> {
    match decision {
        Decision::Allow => None,
        Decision::Block { reason } => Some(reason),
    }
}

/// Runs a table of whitespace-split command lines with no aliases and no environment.
pub(super) fn check(cases: &[(&str, bool)]) {
    check_with(cases, &[], &[]);
}

pub(super) fn check_with(cases: &[(&str, bool)], aliases: &[(&str, &str)], env: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (line, allow) in cases {
        let got = decide_with(&argv(line), aliases, env);
        if (got == Decision::Allow) != *allow {
            let want = if *allow { "Allow" } else { "Block" };
            failures.push(format!("git {line}: wanted {want}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
