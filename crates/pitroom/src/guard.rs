//! The git guard's entry points. Inside a worker, `git` on `PATH` is a link to this binary
//! (layer 1): it refuses history-, ref-, index- and work-discarding commands aimed at a
//! protected repository and hands everything else to the real git untouched. The same binary
//! is the `reference-transaction` hook that git's environment config installs (layer 2), which
//! refuses every ref update in a protected repository even when a worker runs `/usr/bin/git`
//! directly. Both start with no clap and no config: workers call git often.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the git shim and hook speak to the worker as git does, on stdout and stderr"
)]

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use pitroom_git::guard::shim::{self, DotGit, Target};
use pitroom_git::guard::{decide, env, floor, refusal_line, Context, Decision};

/// Which guard role `argv[0]` asks for, if any.
pub fn role(argv0: Option<&OsString>) -> Option<&'static str> {
    let name = Path::new(argv0?).file_name()?.to_str()?;
    match name {
        env::SHIM => Some("git"),
        env::HOOK => Some("reference-transaction"),
        _ if floor::GUARDED_PROGRAMS.contains(&name) => Some("floor"),
        _ => None,
    }
}

/// `sudo`, `npm`, `cargo`, `gh`, another agent CLI… inside a worker: refused when the floor
/// says so (one line, exit 1), else the real program, untouched.
pub fn floor_main(argv0: &OsString, args: &[OsString]) -> i32 {
    let name = Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let own = std::env::var(env::WORKER_CLI).ok();
    if let Err(why) = floor::decide(&name, &words, own.as_deref()) {
        eprintln!("pitroom: {why}");
        return 1;
    }
    let Some(real) = real_program(&name) else {
        eprintln!("pitroom: {name}: command not found");
        return 127;
    };
    let err = std::process::Command::new(&real)
        .arg0(argv0)
        .args(args)
        .exec();
    eprintln!("pitroom: could not run {}: {err}", real.display());
    127
}

/// Whether a candidate on `PATH` is a program other than this binary (the shim). Where this
/// binary is gets looked up once, at the first candidate.
fn not_the_shim() -> impl FnMut(&PathBuf) -> bool {
    let mut me: Option<Option<PathBuf>> = None;
    move |c: &PathBuf| {
        let me = me.get_or_insert_with(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| e.canonicalize().ok())
        });
        c.is_file() && c.canonicalize().ok() != *me
    }
}

/// The first `name` on `PATH` that is not this binary (the shim).
fn real_program(name: &str) -> Option<PathBuf> {
    shim::find_on_path(
        &std::env::var_os("PATH").unwrap_or_default(),
        name,
        not_the_shim(),
    )
}

/// `git ARGS` inside a worker.
pub fn shim_main(args: &[OsString]) -> i32 {
    let Some(real) = real_git() else {
        eprintln!("pitroom: the real git was not found on PATH");
        return 127;
    };
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if targets_protected_repo(&argv) {
        let env: Vec<(String, String)> = std::env::vars().collect();
        // Only a word that is not one of git's own commands can be a user alias, so only then
        // is the user's config read (it costs a git process).
        let aliases = if shim::needs_user_aliases(&argv) {
            user_aliases(&real)
        } else {
            Vec::new()
        };
        let verdict = decide(
            &argv,
            &Context {
                aliases: &aliases,
                env: &env,
            },
        );
        if let Decision::Block { reason } = verdict {
            eprintln!("{}", refusal_line(&argv, &reason));
            return 1;
        }
    }
    let err = std::process::Command::new(&real).args(args).exec();
    eprintln!("pitroom: could not run {}: {err}", real.display());
    127
}

/// `reference-transaction STATE` hook: refuses every ref update of a protected repository.
pub fn hook_main(args: &[OsString]) -> i32 {
    let mut updates = String::new();
    let _ = std::io::stdin().read_to_string(&mut updates);
    let state = args.first().and_then(|a| a.to_str()).unwrap_or("");
    if state != "prepared" || !current_repo_is_protected() {
        return 0;
    }
    let refs: Vec<&str> = updates
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .take(5)
        .collect();
    eprintln!(
        "pitroom: ref update refused inside a Pitroom worker ({}): workers never change refs. The primary agent reviews and commits.",
        refs.join(", ")
    );
    1
}

fn real_git() -> Option<PathBuf> {
    shim::real_git(
        std::env::var_os(env::REAL_GIT).as_deref(),
        &std::env::var_os("PATH").unwrap_or_default(),
        not_the_shim(),
    )
}

/// The protected git dirs, canonicalised; `None` when the list is unset.
fn protected_dirs() -> Option<Vec<PathBuf>> {
    let raw = std::env::var_os(env::PROTECTED)?;
    Some(
        env::split_protected(&raw)
            .into_iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect(),
    )
}

fn is_protected(protected: Option<&[PathBuf]>, git_dir: &Path) -> bool {
    shim::is_protected(protected, git_dir.canonicalize().ok().as_deref())
}

/// What `path` (a `.git` entry) is on disk.
fn dot_git(path: &Path) -> DotGit {
    if path.is_dir() {
        DotGit::Dir
    } else if let Ok(text) = std::fs::read_to_string(path) {
        DotGit::File(text)
    } else {
        DotGit::Missing
    }
}

/// Whether this git call would work on a protected repository: an explicit `--git-dir` or
/// `GIT_DIR`, else the repository found from the working directory (after `-C`).
fn targets_protected_repo(args: &[String]) -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let git_dir = std::env::var_os(env::GIT_DIR);
    let protected = protected_dirs();
    let dir = match shim::target(args, &cwd, git_dir.as_deref()) {
        Target::GitDir(dir) => dir,
        Target::Discover(start) => match shim::find_git_dir(&start, dot_git) {
            Some(dir) => dir,
            // Not in a repository: git itself will say so.
            None => return shim::is_protected(protected.as_deref(), None),
        },
    };
    is_protected(protected.as_deref(), &dir)
}

fn current_repo_is_protected() -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let git_dir = std::env::var_os(env::GIT_DIR);
    let dir = shim::hook_git_dir(&cwd, git_dir.as_deref(), dot_git);
    let protected = protected_dirs();
    // A linked worktree's ref updates go to the common dir too: protect by either.
    is_protected(protected.as_deref(), &dir)
        || std::fs::read_to_string(dir.join("commondir"))
            .ok()
            .is_some_and(|c| is_protected(protected.as_deref(), &dir.join(c.trim())))
}

/// The user's aliases, read through the real git.
fn user_aliases(real: &Path) -> Vec<(String, String)> {
    let out = std::process::Command::new(real)
        .args(shim::ALIAS_LISTING)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) => shim::parse_alias_listing(&String::from_utf8_lossy(&out.stdout)),
        Err(_) => Vec::new(),
    }
}
