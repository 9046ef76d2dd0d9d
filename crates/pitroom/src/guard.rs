//! The git guard's entry points. Inside a worker, `git` on `PATH` is a link to this binary
//! (layer 1): it refuses history-, ref-, index- and work-discarding commands aimed at a
//! protected repository and hands everything else to the real git untouched. The same binary
//! is the `reference-transaction` hook that git's environment config installs (layer 2), which
//! refuses every ref update in a protected repository even when a worker runs `/usr/bin/git`
//! directly. Both start with no clap and no config: workers call git often.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use pitroom_git::guard::{decide, refusal_line, Context, Decision};

/// Colon-separated git dirs the guard protects (the user's repository, the worker's copy).
pub const PROTECTED_ENV: &str = "PITROOM_PROTECTED";
/// The real git the shim hands allowed calls to.
pub const REAL_GIT_ENV: &str = "PITROOM_REAL_GIT";

/// Which guard role argv[0] asks for, if any.
pub fn role(argv0: Option<&OsString>) -> Option<&'static str> {
    let name = Path::new(argv0?).file_name()?.to_str()?;
    match name {
        "git" => Some("git"),
        "reference-transaction" => Some("reference-transaction"),
        _ if pitroom_core::floor::GUARDED_PROGRAMS.contains(&name) => Some("floor"),
        _ => None,
    }
}

/// The worker's own CLI (file name), which the floor lets run itself again.
pub const WORKER_CLI_ENV: &str = "PITROOM_WORKER_CLI";

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
    let own = std::env::var(WORKER_CLI_ENV).ok();
    if let Err(why) = pitroom_core::floor::decide(&name, &words, own.as_deref()) {
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

/// The first `name` on `PATH` that is not this binary (the shim).
fn real_program(name: &str) -> Option<PathBuf> {
    let me = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok());
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|c| c.is_file() && c.canonicalize().ok() != me)
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
        let aliases = if is_builtin(subcommand(&argv).as_deref()) {
            Vec::new()
        } else {
            user_aliases(&real)
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
    if let Some(p) = std::env::var_os(REAL_GIT_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let me = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok());
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("git"))
        .find(|c| c.is_file() && c.canonicalize().ok() != me)
}

fn protected_dirs() -> Option<Vec<PathBuf>> {
    let raw = std::env::var_os(PROTECTED_ENV)?;
    Some(
        std::env::split_paths(&raw)
            .filter_map(|p| p.canonicalize().ok())
            .collect(),
    )
}

fn is_protected(git_dir: &Path) -> bool {
    match protected_dirs() {
        // Without a list, everything is protected: the safe default.
        None => true,
        Some(list) => git_dir.canonicalize().is_ok_and(|g| list.contains(&g)),
    }
}

/// Whether this git call would work on a protected repository: an explicit `--git-dir` or
/// `GIT_DIR`, else the repository found from the working directory (after `-C`).
fn targets_protected_repo(args: &[String]) -> bool {
    let mut cwd = std::env::current_dir().unwrap_or_default();
    let mut git_dir = std::env::var_os("GIT_DIR").map(PathBuf::from);
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
            "-c" | "--work-tree" | "--namespace" | "--config-env" | "--attr-source"
            | "--shallow-file" | "--super-prefix" => {
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
    // `git init DIR` creates a repository elsewhere: judge by where it goes.
    if args.get(i).map(String::as_str) == Some("init") && git_dir.is_none() {
        if let Some(target) = args[i + 1..].iter().find(|a| !a.starts_with('-')) {
            cwd = cwd.join(target);
        }
    }
    let dir = match git_dir {
        Some(d) if d.is_absolute() => d,
        Some(d) => cwd.join(d),
        None => match find_git_dir(&cwd) {
            Some(d) => d,
            // Not in a repository: git itself will say so.
            None => return protected_dirs().is_none(),
        },
    };
    is_protected(&dir)
}

/// The git dir of the repository containing `start`: `.git` as a directory, or the `gitdir:`
/// a `.git` file points to.
fn find_git_dir(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let dot = dir.join(".git");
        if dot.is_dir() {
            return Some(dot);
        }
        if let Ok(text) = std::fs::read_to_string(&dot) {
            let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
            let p = PathBuf::from(target);
            return Some(if p.is_absolute() { p } else { dir.join(p) });
        }
    }
    None
}

fn current_repo_is_protected() -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let dir = std::env::var_os("GIT_DIR")
        .map(PathBuf::from)
        .map(|d| if d.is_absolute() { d } else { cwd.join(d) })
        .or_else(|| find_git_dir(&cwd))
        .unwrap_or(cwd);
    // A linked worktree's ref updates go to the common dir too: protect by either.
    is_protected(&dir)
        || std::fs::read_to_string(dir.join("commondir"))
            .ok()
            .is_some_and(|c| is_protected(&dir.join(c.trim())))
}

/// The subcommand word after git's global options (for the alias shortcut).
fn subcommand(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
            | "--attr-source" | "--shallow-file" | "--super-prefix" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            s => return Some(s.to_string()),
        }
    }
    None
}

/// Git's own commands that workers call most; aliases never shadow them.
fn is_builtin(sub: Option<&str>) -> bool {
    const BUILTIN: &[&str] = &[
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
    sub.is_none_or(|s| BUILTIN.contains(&s))
}

/// The user's aliases, read through the real git (`alias.NAME VALUE` lines).
fn user_aliases(real: &Path) -> Vec<(String, String)> {
    let out = std::process::Command::new(real)
        .args(["config", "--get-regexp", r"^alias\."])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (key, value) = l.split_once(' ').unwrap_or((l, ""));
            Some((key.strip_prefix("alias.")?.to_string(), value.to_string()))
        })
        .collect()
}
