//! The guard's roles as a process plays them: `git` (layer 1), git's `reference-transaction`
//! hook (layer 2) and the floor programs (`sudo`, `npm`, other agent CLIs…), picked by
//! `argv[0]`. This is the one impure corner of the guard: it reads the environment and
//! the disk, prints the refusal line and `exec`s the real program.
//!
//! Two executables run it: the small `pitroom-guard`, which the worker's links point at when it
//! sits next to `pitroom` (workers call git often, and a small program starts in a fraction of
//! the time), and the `pitroom` binary itself as the fallback. Both start with no clap and no
//! config.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::shim::{self, DotGit, Target};
use crate::{decide, env, floor, refusal_line, Context, Decision};

/// The exit status of a refused call.
const REFUSED: i32 = 1;
/// The exit status when the real program cannot be found or started (the shell's own).
const NOT_FOUND: i32 = 127;

/// Which guard role an executable started as `argv[0]` plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `git` first on a worker's `PATH`.
    Git,
    /// The `reference-transaction` hook in `core.hooksPath`.
    Hook,
    /// One of [`floor::guarded_programs`].
    Floor,
}

/// The role `argv0` asks for, if any (its file name decides).
pub fn role(argv0: &OsStr) -> Option<Role> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    match name {
        env::SHIM => Some(Role::Git),
        env::HOOK => Some(Role::Hook),
        _ if floor::is_guarded(name) => Some(Role::Floor),
        _ => None,
    }
}

/// Plays the role `argv[0]` names and returns the exit status, or `None` when `argv[0]` names
/// no guard role. Returns only when the call is refused or fails: an allowed call becomes the
/// real program (`exec`, no fork).
pub fn run(argv: &[OsString]) -> Option<i32> {
    let (argv0, args) = argv.split_first()?;
    Some(match role(argv0)? {
        Role::Git => git_main(args),
        Role::Hook => hook_main(args),
        Role::Floor => floor_main(argv0, args),
    })
}

/// `git ARGS` inside a worker: refused with one line when it would change a protected
/// repository, else the real git.
fn git_main(args: &[OsString]) -> i32 {
    let Some(real) = real_git() else {
        eprintln!("pitroom: the real git was not found on PATH");
        return NOT_FOUND;
    };
    let argv = lossy(args);
    if targets_protected_repo(&argv) {
        if let Decision::Block { reason } = git_verdict(&argv, &real) {
            eprintln!("{}", refusal_line(&argv, &reason));
            return REFUSED;
        }
    }
    exec_failure(&real, std::process::Command::new(&real).args(args).exec())
}

/// The decision on a call aimed at a protected repository.
fn git_verdict(argv: &[String], real: &Path) -> Decision {
    let env: Vec<(String, String)> = std::env::vars().collect();
    // Only a word that is not one of git's own commands can be a user alias, so only then is
    // the user's config read (it costs a git process).
    let aliases = if shim::needs_user_aliases(argv) {
        user_aliases(real)
    } else {
        Vec::new()
    };
    decide(
        argv,
        &Context {
            aliases: &aliases,
            env: &env,
        },
    )
}

/// `reference-transaction STATE` hook: refuses every ref update of a protected repository.
fn hook_main(args: &[OsString]) -> i32 {
    // git writes the updates on stdin; an unreadable stdin leaves only the refs' names out of
    // the refusal line, never the refusal.
    let mut updates = String::new();
    if std::io::stdin().read_to_string(&mut updates).is_err() {
        updates.clear();
    }
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
    REFUSED
}

/// `sudo`, `npm`, `cargo`, `gh`, another agent CLI… inside a worker: refused when the floor
/// says so (one line, exit 1), else the real program, untouched.
fn floor_main(argv0: &OsStr, args: &[OsString]) -> i32 {
    let name = Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let own = std::env::var(env::WORKER_CLI).ok();
    if let Err(why) = floor::decide(name, &lossy(args), own.as_deref()) {
        eprintln!("pitroom: {why}");
        return REFUSED;
    }
    let Some(real) = real_program(name) else {
        eprintln!("pitroom: {name}: command not found");
        return NOT_FOUND;
    };
    let err = std::process::Command::new(&real)
        .arg0(argv0)
        .args(args)
        .exec();
    exec_failure(&real, err)
}

/// What is left to do when `exec` returned: say why and exit as the shell would.
fn exec_failure(program: &Path, err: std::io::Error) -> i32 {
    eprintln!("pitroom: could not run {}: {err}", program.display());
    NOT_FOUND
}

fn lossy(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Whether a candidate on `PATH` is a program other than the running executable (the guard's
/// own links). Where the running executable is gets looked up once, at the first candidate.
fn not_the_guard() -> impl FnMut(&PathBuf) -> bool {
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

/// The first `name` on `PATH` that is not the guard.
fn real_program(name: &str) -> Option<PathBuf> {
    shim::find_on_path(
        &std::env::var_os("PATH").unwrap_or_default(),
        name,
        not_the_guard(),
    )
}

fn real_git() -> Option<PathBuf> {
    shim::real_git(
        std::env::var_os(env::REAL_GIT).as_deref(),
        &std::env::var_os("PATH").unwrap_or_default(),
        not_the_guard(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv0_file_name_picks_the_role() {
        assert_eq!(role(OsStr::new("/h/bin/git")), Some(Role::Git));
        assert_eq!(role(OsStr::new("git")), Some(Role::Git));
        assert_eq!(
            role(OsStr::new("/h/hooks/reference-transaction")),
            Some(Role::Hook)
        );
        assert_eq!(role(OsStr::new("/h/bin/sudo")), Some(Role::Floor));
        assert_eq!(role(OsStr::new("/h/bin/npm")), Some(Role::Floor));
        assert_eq!(role(OsStr::new("/usr/local/bin/pitroom")), None);
        assert_eq!(role(OsStr::new(env::GUARD_EXE)), None);
        assert_eq!(role(OsStr::new("")), None);
    }

    #[test]
    fn no_argv0_or_no_role_is_not_played() {
        assert_eq!(run(&[]), None);
        assert_eq!(run(&["pitroom".into(), "--version".into()]), None);
    }
}
