//! What the benchmark programs share: the release binaries they measure, a generated dirty
//! repository, running a command, medians, and the guard loop ([`guard`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

pub mod guard;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The variable naming the cargo target dir the binaries were built in, when it is not the
/// workspace's `target/` (a `CARGO_TARGET_DIR` elsewhere).
pub const TARGET_DIR_ENV: &str = "PITROOM_BENCH_TARGET_DIR";

/// The release `pitroom` and `pitroom-fake-worker` (the debug ones with
/// `PITROOM_BENCH_PROFILE=debug`, for checks such as the soak that measure no speed), from the
/// workspace's `target/` or `$PITROOM_BENCH_TARGET_DIR`; exits with what to build when they are
/// missing.
pub fn release_binaries() -> (PathBuf, PathBuf) {
    let target = profile_dir();
    (
        built(&target, "pitroom"),
        built(&target, "pitroom-fake-worker"),
    )
}

/// The release `pitroom` with `pitroom-guard` beside it (both binaries of the `pitroom`
/// package), from the same place as [`release_binaries`].
pub fn release_pitroom() -> PathBuf {
    let target = profile_dir();
    built(&target, pitroom_guard::env::GUARD_EXE);
    built(&target, "pitroom")
}

/// `target/<profile>`, where the measured binaries are.
fn profile_dir() -> PathBuf {
    std::env::var_os(TARGET_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join(profile())
}

fn profile() -> String {
    std::env::var("PITROOM_BENCH_PROFILE").unwrap_or_else(|_| "release".into())
}

/// `name` in `target`; exits with what to build when it is missing.
fn built(target: &Path, name: &str) -> PathBuf {
    let path = target.join(name);
    if !path.is_file() {
        let flag = if profile() == "release" {
            " --release"
        } else {
            ""
        };
        eprintln!(
            "{} is missing; build first: cargo build{flag} -p pitroom --features test-fakes",
            path.display()
        );
        std::process::exit(2);
    }
    path
}

/// A repository of `files` generated Rust files in 100 folders, committed, then `dirty` of them
/// modified and `dirty` untracked files added (the user's work in progress).
pub fn generate_repo(repo: &Path, files: usize, dirty: usize) {
    std::fs::create_dir_all(repo).expect("repo dir");
    run_ok(Command::new("git").args(["init", "-q"]).current_dir(repo));
    for i in 0..files {
        let dir = repo.join(format!("src/mod{:03}", i % 100));
        std::fs::create_dir_all(&dir).expect("dir");
        let body = format!("// file {i}\npub fn f{i}() -> usize {{\n    {i}\n}}\n").repeat(8);
        std::fs::write(dir.join(format!("file{i:05}.rs")), body).expect("file");
    }
    run_ok(Command::new("git").args(["add", "-A"]).current_dir(repo));
    run_ok(
        Command::new("git")
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-qm",
                "init",
            ])
            .current_dir(repo),
    );
    for i in 0..dirty {
        let path = repo.join(format!("src/mod{:03}/file{:05}.rs", i % 100, i));
        std::fs::write(&path, format!("// edited {i}\n")).expect("edit");
        std::fs::write(repo.join(format!("src/untracked{i}.rs")), "// new\n").expect("new");
    }
}

/// Runs a command to its end, panicking unless it succeeds; returns how long it took.
pub fn run_ok(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let status = cmd.status().expect("command runs");
    let elapsed = t.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    elapsed
}

/// The median of `rounds` timings of `f`.
pub fn median(rounds: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..rounds).map(|_| f()).collect();
    times.sort();
    times[rounds / 2]
}

/// Creating an isolated copy (its own repository borrowing the user's objects, the snapshot
/// tree checked out) against `git worktree add --detach` of the same commit, on a clean
/// repository of `files` files, and against the way copies were checked out before
/// (`read-tree` then `checkout-index --all --force`, by hand with the same git). Medians of
/// `rounds`, alternating which goes first: file creation dominates all three and the disk is
/// shared.
pub fn isolated_copy_vs_worktree(files: usize, rounds: usize) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo_dir = tmp.path().join("repo");
    generate_repo(&repo_dir, files, 50);
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.args(args).current_dir(&repo_dir);
        c
    };
    run_ok(&mut git(&["checkout", "-q", "--", "."]));
    run_ok(&mut git(&["clean", "-qfd"]));
    let repo = pitroom_git::Repo::discover(&repo_dir)
        .expect("git")
        .expect("a repository");
    let out = git(&["rev-parse", "HEAD^{tree}"]).output().expect("git");
    let tree = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let objects = repo.objects_dir();
    let (mut worktrees, mut copies, mut before) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let wt = tmp.path().join(format!("wt{round}"));
        let copy = tmp.path().join(format!("copy{round}"));
        let old = tmp.path().join(format!("old{round}"));
        let worktree_once = || {
            let mut add = git(&["worktree", "add", "-q", "--detach"]);
            add.arg(&wt).arg("HEAD");
            run_ok(&mut add)
        };
        let copy_once = || {
            let t = Instant::now();
            pitroom_git::build_copy(&repo, &tree, &copy).expect("copy");
            t.elapsed()
        };
        let before_once = || {
            let t = Instant::now();
            std::fs::create_dir_all(&old).expect("dir");
            run_ok(
                Command::new("git")
                    .args(["init", "-q", "--template="])
                    .current_dir(&old),
            );
            std::fs::create_dir_all(old.join(".git/objects/info")).expect("info");
            std::fs::write(
                old.join(".git/objects/info/alternates"),
                format!("{}\n", objects.display()),
            )
            .expect("alternates");
            for args in [
                vec!["read-tree", tree.as_str()],
                vec!["checkout-index", "--all", "--force"],
            ] {
                run_ok(
                    Command::new("git")
                        .arg("--git-dir")
                        .arg(old.join(".git"))
                        .arg("--work-tree")
                        .arg(&old)
                        .args(args)
                        .current_dir(&old),
                );
            }
            t.elapsed()
        };
        // Rotate the order: whoever goes first meets a different page cache and disk queue.
        match round % 3 {
            0 => {
                worktrees.push(worktree_once());
                copies.push(copy_once());
                before.push(before_once());
            }
            1 => {
                copies.push(copy_once());
                before.push(before_once());
                worktrees.push(worktree_once());
            }
            _ => {
                before.push(before_once());
                worktrees.push(worktree_once());
                copies.push(copy_once());
            }
        }
        let mut remove = git(&["worktree", "remove", "--force"]);
        remove.arg(&wt);
        run_ok(&mut remove);
        let _ = std::fs::remove_dir_all(&copy);
        let _ = std::fs::remove_dir_all(&old);
    }
    let mid = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (wt, copy, old) = (
        mid(worktrees.clone()),
        mid(copies.clone()),
        mid(before.clone()),
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let each = |times: &[Duration]| {
        times
            .iter()
            .map(|d| format!("{:.0}", ms(*d)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!();
    println!("isolated copy vs git worktree add, {files} files; medians of {rounds}");
    println!(
        "git worktree add --detach         {:8.1} ms   (baseline 1.00×)   [{}]",
        ms(wt),
        each(&worktrees)
    );
    println!(
        "pitroom isolated copy             {:8.1} ms   {:5.2}× git worktree add   [{}]",
        ms(copy),
        ms(copy) / ms(wt),
        each(&copies)
    );
    println!(
        "  before (read-tree + checkout-index) {:8.1} ms   {:5.2}× git worktree add   [{}]",
        ms(old),
        ms(old) / ms(wt),
        each(&before)
    );
}
