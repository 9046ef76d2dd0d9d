//! Global options (git.c's `handle_options`).

use crate::scan::split_eq;

pub(super) enum Walk {
    /// The subcommand is at this index.
    Command(usize),
    /// Options only (or an option missing its value): git runs no subcommand.
    NoCommand,
    /// An option that makes git print something and exit.
    Exits,
    /// An option git's handle_options does not know, at this index.
    Unknown(usize),
}

/// Global options whose value is the next word (besides `-c` and `--config-env`, whose values
/// are config).
pub(super) const VALUED: &[&str] = &[
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--attr-source",
    "--super-prefix",
    "--shallow-file",
    "--list-cmds",
];

/// Walks git's global options. Config given with `-c` and `--config-env` goes to `config`.
pub(super) fn walk_globals(
    words: &[String],
    env: &[(String, String)],
    config: &mut dyn FnMut(&str, Option<&str>),
) -> Walk {
    const FLAGS: &[&str] = &[
        "-p",
        "--paginate",
        "-P",
        "--no-pager",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--bare",
        "--literal-pathspecs",
        "--no-literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-advice",
    ];
    const ATTACHED: &[&str] = &[
        "--git-dir=",
        "--work-tree=",
        "--namespace=",
        "--attr-source=",
        "--super-prefix=",
        "--shallow-file=",
    ];
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let word = word.as_str();
        if !word.starts_with('-') {
            return Walk::Command(i);
        }
        match word {
            // Legacy spellings of `git help` and `git version`.
            "--help" | "-h" | "--version" | "-v" => return Walk::Command(i),
            "--html-path" | "--man-path" | "--info-path" => return Walk::Exits,
            w if FLAGS.contains(&w) => {}
            "-c" => {
                let Some(text) = words.get(i + 1) else {
                    return Walk::NoCommand;
                };
                push_parameter(text, config);
                i += 1;
            }
            "--config-env" => {
                let Some(spec) = words.get(i + 1) else {
                    return Walk::NoCommand;
                };
                push_config_env(spec, env, config);
                i += 1;
            }
            w if VALUED.contains(&w) => {
                if words.get(i + 1).is_none() {
                    return Walk::NoCommand;
                }
                i += 1;
            }
            w => {
                if let Some(tail) = w.strip_prefix("--exec-path") {
                    // `--exec-path` without `=` prints the path and exits.
                    if !tail.starts_with('=') {
                        return Walk::Exits;
                    }
                } else if let Some(spec) = w.strip_prefix("--config-env=") {
                    push_config_env(spec, env, config);
                } else if w.starts_with("--list-cmds=") {
                    return Walk::Exits;
                } else if !ATTACHED.iter().any(|prefix| w.starts_with(prefix)) {
                    return Walk::Unknown(i);
                }
            }
        }
        i += 1;
    }
    Walk::NoCommand
}

/// `-c name=value` (the first `=` splits; without one the value is missing).
pub(super) fn push_parameter(text: &str, config: &mut dyn FnMut(&str, Option<&str>)) {
    let (key, value) = split_eq(text);
    config(key, value);
}

/// `--config-env name=ENVVAR` (the last `=` splits).
pub(super) fn push_config_env(
    spec: &str,
    env: &[(String, String)],
    config: &mut dyn FnMut(&str, Option<&str>),
) {
    if let Some((key, var)) = spec.rsplit_once('=') {
        if let Some(value) = env_get(env, var) {
            config(key, Some(value));
        }
    }
}

pub(super) fn env_get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}
