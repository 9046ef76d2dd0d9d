//! The shim's argv model: which repository a git call targets, its subcommand, whether the
//! user's aliases are worth reading, and where the real git is.
//!
//! Pure like the rest of the guard: the file system comes in through the caller's probes
//! ([`DotGit`] for `.git` entries, an `accept` test for `PATH` candidates), so the pitroom
//! binary's `git` shim and `reference-transaction` hook only read the process state and the
//! disk, and every rule about argv lives here with its tests.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::globals::{walk_globals, Walk, VALUED};

/// Where a git call looks for its repository, as far as argv and the environment say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An explicit git dir (`--git-dir`, `GIT_DIR`), made absolute against the working
    /// directory the call ends up in.
    GitDir(PathBuf),
    /// No explicit git dir: git discovers the repository from this directory upward.
    Discover(PathBuf),
}

/// What a `.git` entry in a directory is, as the caller's probe found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DotGit {
    /// A directory: the repository's git dir.
    Dir,
    /// A file, with its text (`gitdir: …` for linked worktrees and submodules).
    File(String),
    /// Nothing readable there.
    Missing,
}

/// The repository `git ARGS` works on when started in `cwd` with `GIT_DIR` set to
/// `git_dir_env`: the last `--git-dir` (or `--git-dir=`) or else `GIT_DIR`, relative to the
/// directory after every `-C`; without one, discovery from that directory. `git init DIR`
/// creates a repository elsewhere and is judged by where it goes.
pub fn target(args: &[String], cwd: &Path, git_dir_env: Option<&OsStr>) -> Target {
    let mut cwd = cwd.to_path_buf();
    let mut git_dir = git_dir_env.map(PathBuf::from);
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-C" => {
                if let Some(p) = args.get(i + 1) {
                    cwd = cwd.join(p);
                }
                i += 2;
                continue;
            }
            "--git-dir" => {
                git_dir = args.get(i + 1).map(PathBuf::from);
                i += 2;
                continue;
            }
            // The other options that take the next word, as git's option walk knows them.
            _ if matches!(a, "-c" | "--config-env") || VALUED.contains(&a) => {
                i += 2;
                continue;
            }
            _ => {}
        }
        if let Some(p) = a.strip_prefix("--git-dir=") {
            git_dir = Some(PathBuf::from(p));
        } else if !a.starts_with('-') {
            break;
        }
        i += 1;
    }
    if args.get(i).map(String::as_str) == Some("init") && git_dir.is_none() {
        if let Some(dir) = args[i + 1..].iter().find(|a| !a.starts_with('-')) {
            cwd = cwd.join(dir);
        }
    }
    match git_dir {
        Some(d) if d.is_absolute() => Target::GitDir(d),
        Some(d) => Target::GitDir(cwd.join(d)),
        None => Target::Discover(cwd),
    }
}

/// The git dir of the repository containing `start`, the nearest first: `.git` as a directory,
/// or the `gitdir:` a `.git` file points to (relative to the file's directory). `None` outside
/// a repository, and for a `.git` file that is not a `gitdir:` pointer. `probe` tells what
/// `<dir>/.git` is.
pub fn find_git_dir(start: &Path, mut probe: impl FnMut(&Path) -> DotGit) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let dot = dir.join(".git");
        match probe(&dot) {
            DotGit::Dir => return Some(dot),
            DotGit::File(text) => {
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                let p = PathBuf::from(target);
                return Some(if p.is_absolute() { p } else { dir.join(p) });
            }
            DotGit::Missing => {}
        }
    }
    None
}

/// The git dir whose refs a `reference-transaction` hook started in `cwd` guards: `GIT_DIR`
/// (which git sets for hooks), else the repository found from `cwd`, else `cwd` itself.
pub fn hook_git_dir(
    cwd: &Path,
    git_dir_env: Option<&OsStr>,
    probe: impl FnMut(&Path) -> DotGit,
) -> PathBuf {
    git_dir_env
        .map(PathBuf::from)
        .map(|d| if d.is_absolute() { d } else { cwd.join(d) })
        .or_else(|| find_git_dir(cwd, probe))
        .unwrap_or_else(|| cwd.to_path_buf())
}

/// Whether the guard applies to a call on `git_dir` (`None`: not in a repository, or a git
/// dir that does not exist) given the protected dirs (`None`: [`PROTECTED`](crate::env::PROTECTED)
/// is unset, and then everything is protected, the safe default). The caller canonicalises
/// both sides.
pub fn is_protected(protected: Option<&[PathBuf]>, git_dir: Option<&Path>) -> bool {
    match (protected, git_dir) {
        (None, _) => true,
        // Not in a repository: git itself will say so.
        (Some(_), None) => false,
        (Some(list), Some(dir)) => list.iter().any(|p| p == dir),
    }
}

/// The subcommand after git's global options, walked as [`decide`](crate::decide) walks them;
/// `None` when git runs none (options only, an option that prints and exits, an option git does
/// not know). The legacy `--help`/`-h` and `--version`/`-v` are `help` and `version`.
pub fn subcommand(args: &[String]) -> Option<&str> {
    match walk_globals(args, &[], &mut |_, _| {}) {
        Walk::Command(i) => match args[i].as_str() {
            "--help" | "-h" => Some("help"),
            "--version" | "-v" => Some("version"),
            word => Some(word),
        },
        Walk::NoCommand | Walk::Exits | Walk::Unknown(_) => None,
    }
}

/// Git's own commands that workers call most; aliases never shadow them, so a call to one
/// (or to none) needs no look at the user's aliases.
pub(super) const BUILTIN: &[&str] = &[
    "add",
    "am",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "cat-file",
    "check-attr",
    "check-ignore",
    "checkout",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-ref",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "version",
    "worktree",
    "write-tree",
];

/// Whether `sub` is one of `BUILTIN`'s commands or there is no subcommand.
pub fn is_builtin(sub: Option<&str>) -> bool {
    sub.is_none_or(|s| BUILTIN.contains(&s))
}

/// Whether deciding on `git ARGS` needs the user's aliases: only a word that is not one of
/// git's own commands can be one (reading them costs a git process).
pub fn needs_user_aliases(args: &[String]) -> bool {
    !is_builtin(subcommand(args))
}

/// The command that lists the user's aliases through the real git, one `alias.NAME VALUE`
/// per line; [`parse_alias_listing`] reads its output.
pub const ALIAS_LISTING: &[&str] = &["config", "--get-regexp", r"^alias\."];

/// `alias.NAME VALUE` lines as [`Context::aliases`](crate::Context::aliases) takes them.
pub fn parse_alias_listing(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (key, value) = l.split_once(' ').unwrap_or((l, ""));
            Some((key.strip_prefix("alias.")?.to_string(), value.to_string()))
        })
        .collect()
}

/// The first `<dir>/<name>` along `path` that `accept` takes (the caller checks it is a file
/// and not the shim).
pub fn find_on_path(
    path: &OsStr,
    name: &str,
    accept: impl FnMut(&PathBuf) -> bool,
) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(accept)
}

/// The real git: [`REAL_GIT`](crate::env::REAL_GIT) when set and not empty, else the first
/// `git` along `path` that `accept` takes.
pub fn real_git(
    real_git_env: Option<&OsStr>,
    path: &OsStr,
    accept: impl FnMut(&PathBuf) -> bool,
) -> Option<PathBuf> {
    match real_git_env.filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => find_on_path(path, "git", accept),
    }
}
