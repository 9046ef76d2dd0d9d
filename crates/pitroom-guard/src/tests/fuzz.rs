//! Property tests: arbitrary argv, environment and aliases never make the guard panic, and
//! its answers keep their shape. The case count comes from `PROPTEST_CASES` (256 by default).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::floor;
use crate::shim::{self, DotGit, Target};
use crate::tables::{BLOCKED, CONDITIONAL};

/// The argv words the unit tests use, and the shapes the guard's parsers care about: these,
/// [`SUBCOMMANDS`], then [`SEED_WORDS_AFTER`].
const SEED_WORDS_BEFORE: &[&str] = &[
    "-c",
    "-C",
    "--git-dir",
    "--git-dir=",
    "--git-dir=/r/.git",
    "--work-tree",
    "--work-tree=/w",
    "--namespace",
    "--config-env",
    "--config-env=alias.x=",
    "--config-env=alias.x=V",
    "--exec-path",
    "--exec-path=/x",
    "--html-path",
    "--list-cmds=main",
    "--no-pager",
    "-p",
    "--bare",
    "alias.a=commit",
    "alias.b=!x",
    "alias.c=a",
    "alias..command=commit",
    "alias.",
    "alias.x=\\",
    "alias.x='",
    "alias.x=  ",
    "alias.ci.command=commit",
    "include.path=/tmp/x",
    "includeIf.onbranch:main.path=x",
    "help.autocorrect=1",
    "core.pager=less",
    "a",
    "b",
    "c",
    "x",
    "ci",
    "comit",
];

const SEED_WORDS_AFTER: &[&str] = &[
    "reset",
    "push",
    "stash",
    "notes",
    "remote",
    "reflog",
    "submodule",
    "worktree",
    "symbolic-ref",
    "hash-object",
    "lfs",
    "init",
    "status",
    "log",
    "help",
    "for-each-repo",
    "list",
    "show",
    "add",
    "--hard",
    "--dry-run",
    "--list",
    "--config",
    "--ref",
    "--index",
    "-3",
    "-n",
    "-d",
    "-D",
    "-l",
    "-f",
    "-m",
    "-h",
    "--help",
    "-",
    "--",
    "--=",
    "=",
    "'",
    "\"",
    "\\",
    "",
    " ",
    "x y",
    "é",
    "ünïcödé",
    "-ü",
    "--ü=ü",
    "-né",
    "-oé",
    "-jé",
    "-é3",
    "\u{0}",
    "\u{7f}",
    "re\nset",
    "HEAD",
    "HEAD~1",
    "refs/heads/x",
    "origin",
];

const ENV_NAMES: &[&str] = &[
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_0",
    "GIT_CONFIG_VALUE_0",
    "GIT_CONFIG_KEY_1",
    "GIT_CONFIG_VALUE_1",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_DIR",
    "V",
];

const ENV_VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "4294967295",
    "99999999999999999999",
    " 1",
    "0x2",
    "ü",
    "alias.a",
    "alias.x",
    "include.path",
    "help.autocorrect",
    "commit",
    "reset --hard",
    "!sh",
    "'alias.x'='reset --hard'",
    "'alias.z'='for-each-repo z'",
    "'alias.x=commit'",
    "'ü'='é' 'alias.é'='ü'",
    "'",
    "'a'='",
    "'a'\\",
    "'alias.x'=x",
    "   ",
    "",
];

const ALIAS_NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "x",
    "ci",
    "st",
    "comit",
    "log",
    "commit",
    "",
    "alias.",
    "alias.x",
    "alias.x.command",
    "alias.CI",
    "é",
];

/// The seed list, in order.
fn seed_words() -> Vec<&'static str> {
    [SEED_WORDS_BEFORE, SUBCOMMANDS, SEED_WORDS_AFTER].concat()
}

/// A word of the seed list, an arbitrary string, an arbitrary byte string as the shim sees
/// it (`to_string_lossy`), or a `key=value` shape built from seeds.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(seed_words()).prop_map(String::from),
        1 => any::<String>(),
        1 => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(|b| OsString::from_vec(b).to_string_lossy().into_owned()),
        1 => (
            prop::sample::select(&["alias.", "include.", "includeIf.x.", "help.", "--config-env=", "--", ""][..]),
            prop::sample::select(ALIAS_NAMES),
            prop::sample::select(&["=", "", "==", ".command="][..]),
            prop::sample::select(seed_words()),
        )
            .prop_map(|(a, b, c, d)| format!("{a}{b}{c}{d}")),
    ]
}

fn args() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(word(), 0..10)
}

/// Global options with their values, none of which moves the subcommand.
const GLOBALS: &[&[&str]] = &[
    &["-C", "sub"],
    &["-c", "core.x=1"],
    &["-c", "alias.x=reset"],
    &["--config-env", "alias.x=V"],
    &["--git-dir", "/r/.git"],
    &["--git-dir=/r/.git"],
    &["--work-tree=/w"],
    &["--no-pager"],
    &["-p"],
    &["--bare"],
];

/// Global options (with their values), one of git's own commands the guard refuses in some
/// form, then anything.
fn own_command_args() -> impl Strategy<Value = Vec<String>> {
    let globals = prop::collection::vec(prop::sample::select(GLOBALS), 0..4);
    let commands: Vec<&str> = BLOCKED
        .iter()
        .map(|(name, _)| *name)
        .chain(CONDITIONAL.iter().copied())
        .collect();
    (globals, prop::sample::select(commands), args()).prop_map(|(globals, command, rest)| {
        let mut args: Vec<String> = globals.concat().into_iter().map(String::from).collect();
        args.push(command.to_string());
        args.extend(rest);
        args
    })
}

fn env() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop_oneof![
        4 => prop::sample::select(ENV_NAMES).prop_map(String::from),
        1 => any::<String>(),
    ];
    let value = prop_oneof![
        3 => prop::sample::select(ENV_VALUES).prop_map(String::from),
        1 => word(),
    ];
    prop::collection::vec((name, value), 0..6)
}

fn aliases() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop_oneof![
        4 => prop::sample::select(ALIAS_NAMES).prop_map(String::from),
        1 => any::<String>(),
    ];
    let expansion = prop_oneof![
        3 => prop::collection::vec(word(), 0..5).prop_map(|w| w.join(" ")),
        1 => word().prop_map(|w| format!("!{w}")),
        1 => any::<String>(),
    ];
    prop::collection::vec((name, expansion), 0..5)
}

/// A path made of argv-like words, absolute or not.
fn path() -> impl Strategy<Value = PathBuf> {
    (any::<bool>(), prop::collection::vec(word(), 0..4)).prop_map(|(absolute, parts)| {
        let joined = parts.join("/");
        PathBuf::from(if absolute {
            format!("/{joined}")
        } else {
            joined
        })
    })
}

/// `.git` entries: directories at some paths, files with some text at others.
fn tree() -> impl Strategy<Value = Vec<(PathBuf, Option<String>)>> {
    let text = prop_oneof![
        Just("gitdir: /r/.git".to_string()),
        Just("gitdir: ../.git/modules/x\n".to_string()),
        Just("gitdir:".to_string()),
        any::<String>(),
    ];
    prop::collection::vec((path(), prop::option::of(text)), 0..5)
}

fn probe(tree: &[(PathBuf, Option<String>)]) -> impl FnMut(&Path) -> DotGit + '_ {
    move |dot: &Path| match tree
        .iter()
        .find(|(dir, _)| Some(dir.as_path()) == dot.parent())
    {
        Some((_, None)) => DotGit::Dir,
        Some((_, Some(text))) => DotGit::File(text.clone()),
        None => DotGit::Missing,
    }
}

fn git_dir_env() -> impl Strategy<Value = Option<OsString>> {
    prop::option::of(prop_oneof![
        word().prop_map(OsString::from),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(OsString::from_vec),
    ])
}

proptest! {
    #[test]
    fn decide_never_panics_and_refuses_in_one_line(
        args in args(),
        env in env(),
        aliases in aliases(),
    ) {
        let ctx = Context { aliases: &aliases, env: &env };
        let decision = decide(&args, &ctx);
        prop_assert_eq!(&decision, &decide(&args, &ctx), "the same call, the same verdict");
        if let Decision::Block { reason } = &decision {
            prop_assert!(!reason.is_empty());
            let line = refusal_line(&args, reason);
            prop_assert!(line.starts_with("pitroom: git"), "{}", line);
            prop_assert!(!line.contains('\n') && !line.contains('\r'), "{}", line);
        }
        let _ = refusal_line(&args, reason_of(&decision).unwrap_or(""));
    }

    /// The caller's aliases only add ways to refuse: a call to one of git's own commands that
    /// is refused without them is refused with them (git ignores an alias shadowing its own
    /// command; the guard blocks if either would write). Seeded with every command the guard
    /// refuses in some form.
    #[test]
    fn aliases_never_unblock_gits_own_commands(
        args in own_command_args(),
        env in env(),
        aliases in aliases(),
    ) {
        let bare = decide(&args, &Context { aliases: &[], env: &env });
        // An unknown word is the exception: git autocorrects to the best-scoring candidate,
        // and an alias may outscore the blocked command the guard saw without it.
        let by_autocorrection = reason_of(&bare).is_some_and(|r| r.starts_with("may autocorrect"));
        if bare != Decision::Allow && !by_autocorrection {
            let with = decide(&args, &Context { aliases: &aliases, env: &env });
            prop_assert_ne!(with, Decision::Allow, "refused without aliases as {:?}", bare);
        }
    }

    #[test]
    fn repo_targeting_never_panics_and_stays_absolute(
        args in args(),
        cwd in path(),
        git_dir in git_dir_env(),
        tree in tree(),
    ) {
        let cwd = Path::new("/").join(cwd);
        let target = shim::target(&args, &cwd, git_dir.as_deref());
        let explicit = git_dir.is_some() || args.iter().any(|a| a.starts_with("--git-dir"));
        match &target {
            Target::GitDir(dir) => {
                prop_assert!(dir.is_absolute(), "{:?}", target);
                prop_assert!(explicit, "{:?}", target);
            }
            Target::Discover(dir) => prop_assert!(dir.is_absolute(), "{:?}", target),
        }
        if let Target::Discover(start) = &target {
            let _ = shim::find_git_dir(start, probe(&tree));
        }
        let hook = shim::hook_git_dir(&cwd, git_dir.as_deref(), probe(&tree));
        prop_assert!(hook.is_absolute(), "{:?}", hook);
        let protected: Vec<PathBuf> = tree.iter().map(|(d, _)| d.join(".git")).collect();
        let _ = shim::is_protected(Some(&protected), Some(&hook));
    }

    #[test]
    fn the_floor_never_panics_and_refuses_in_one_line(
        program in prop::sample::select(floor::guarded_programs().collect::<Vec<_>>()),
        args in args(),
        own in prop::option::of(prop::sample::select(floor::guarded_programs().collect::<Vec<_>>())),
    ) {
        if let Err(why) = floor::decide(program, &args, own) {
            prop_assert!(why.contains(program), "{}", why);
            prop_assert!(!why.contains('\n') && !why.contains('\r'), "{}", why);
        }
        // The worker's own agent CLI may always run itself again.
        const NOT_AGENTS: &[&str] = &[
            "sudo", "su", "doas", "pkexec", "gh", "npm", "pnpm", "yarn", "cargo", "twine", "gem",
            "poetry", "uv", "docker", "podman",
        ];
        if !NOT_AGENTS.contains(&program) {
            prop_assert!(floor::decide(program, &args, Some(program)).is_ok());
        }
    }

    #[test]
    fn the_subcommand_is_a_word_of_argv(args in args()) {
        if let Some(sub) = shim::subcommand(&args) {
            prop_assert!(!sub.starts_with('-'), "{}", sub);
            prop_assert!(args.iter().any(|a| a == sub) || ["help", "version"].contains(&sub));
        }
        let _ = shim::needs_user_aliases(&args);
    }

    #[test]
    fn alias_listings_never_panic(text in any::<String>(), lines in aliases()) {
        let _ = shim::parse_alias_listing(&text);
        let listing: String = lines
            .iter()
            .map(|(k, v)| format!("alias.{k} {v}\n"))
            .collect();
        let parsed = shim::parse_alias_listing(&listing);
        prop_assert!(parsed.iter().all(|(name, _)| !name.contains('\n')));
        let _ = shim::real_git(None, OsStr::new(&text), |_| false);
    }
}
