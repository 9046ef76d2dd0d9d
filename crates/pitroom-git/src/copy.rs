//! Read-only copies: separate repositories holding one snapshot tree each, borrowing the
//! user's objects through `alternates`. Nothing is registered in the user's repository.
//!
//! Copies live in `root/<tree>` and are shared by every run of the same tree. A run holds a
//! shared `flock` on the copy's lease file while it uses it; a copy nobody holds is idle and
//! may be **recycled** for a new tree with `read-tree -m -u`, which rewrites only the files
//! that differ. So when the primary agent edits one file between two read runs, the second run
//! pays for one file, not for a fresh checkout of the whole project.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::command::{Git, GitError};
use crate::Repo;

/// The lease file inside a copy's git dir (it moves with the copy when it is recycled).
const LEASE: &str = "pitroom-lease";

/// A run's hold on a copy: while it lives, the copy is not recycled or pruned.
#[derive(Debug)]
pub struct CopyLease {
    pub dir: PathBuf,
    _file: File,
}

/// How old and how many idle copies may stay.
#[derive(Debug, Clone, Copy)]
pub struct KeepPolicy {
    pub max_idle: usize,
    pub max_age: Duration,
}

impl Default for KeepPolicy {
    fn default() -> Self {
        KeepPolicy {
            max_idle: 4,
            max_age: Duration::from_secs(3 * 24 * 3600),
        }
    }
}

/// Returns a leased copy of `tree` under `root`: the existing one, an idle one recycled, or a
/// new one. HEAD of the copy is detached at the user's HEAD so `git log` works inside it.
pub fn ensure_read_copy(repo: &Repo, tree: &str, root: &Path) -> Result<CopyLease, GitError> {
    std::fs::create_dir_all(root)?;
    for _ in 0..8 {
        if let Some(lease) = lease_existing(&root.join(tree))? {
            return Ok(lease);
        }
        if let Some(lease) = recycle_idle(repo, tree, root)? {
            return Ok(lease);
        }
        if let Some(lease) = build_new(repo, tree, root)? {
            return Ok(lease);
        }
    }
    Err(GitError::Parse(format!(
        "could not settle a read copy of {tree} under {}",
        root.display()
    )))
}

/// Takes a shared lease on the copy at `dir`, if it exists and is still that copy once the
/// lease is held (a recycler may have renamed it away meanwhile).
fn lease_existing(dir: &Path) -> Result<Option<CopyLease>, GitError> {
    let path = dir.join(".git").join(LEASE);
    let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
        return Ok(None);
    };
    flock(&file, libc::LOCK_SH)?;
    let same = match (file.metadata(), std::fs::metadata(&path)) {
        (Ok(held), Ok(now)) => held.ino() == now.ino() && held.dev() == now.dev(),
        _ => false,
    };
    if !same {
        return Ok(None);
    }
    touch(dir);
    Ok(Some(CopyLease {
        dir: dir.to_path_buf(),
        _file: file,
    }))
}

/// Moves an idle copy to `tree`, rewriting only the files that differ.
fn recycle_idle(repo: &Repo, tree: &str, root: &Path) -> Result<Option<CopyLease>, GitError> {
    for (old_tree, dir) in copies_newest_first(root) {
        let Some(file) = try_exclusive(&dir) else {
            continue;
        };
        if !belongs_to(&dir, repo) {
            continue;
        }
        let git = Git::for_repo(&dir.join(".git"), &dir);
        // Stat data may be stale (racy entries): refresh it, or the merge refuses to move.
        let _ = git.output(["update-index", "-q", "--refresh"], None);
        let updated = git.run(["read-tree", "-m", "-u", &old_tree, tree]);
        if updated.is_err() {
            // A copy that cannot move cleanly is not worth repairing.
            let _ = std::fs::remove_dir_all(&dir);
            continue;
        }
        let dest = root.join(tree);
        if std::fs::rename(&dir, &dest).is_err() {
            // Another run placed this tree first: use theirs.
            let _ = std::fs::remove_dir_all(&dir);
            return lease_existing(&dest);
        }
        flock(&file, libc::LOCK_SH)?;
        touch(&dest);
        return Ok(Some(CopyLease {
            dir: dest,
            _file: file,
        }));
    }
    Ok(None)
}

/// Checks a new copy out in a temp dir and renames it into place.
fn build_new(repo: &Repo, tree: &str, root: &Path) -> Result<Option<CopyLease>, GitError> {
    let tmp = root.join(format!(".tmp-{}-{}", std::process::id(), nanos()));
    if let Err(e) = build(repo, tree, &tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(tmp.join(".git").join(LEASE))?;
    flock(&file, libc::LOCK_SH)?;
    let dest = root.join(tree);
    if std::fs::rename(&tmp, &dest).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        return lease_existing(&dest);
    }
    Ok(Some(CopyLease {
        dir: dest,
        _file: file,
    }))
}

/// Builds a copy of `tree` at `dir`: its own repository borrowing `repo`'s objects read-only
/// (alternates), the tree checked out, HEAD detached at the user's HEAD. Nothing is written
/// into `repo`.
pub fn build_copy(repo: &Repo, tree: &str, dir: &Path) -> Result<(), GitError> {
    build(repo, tree, dir)
}

fn build(repo: &Repo, tree: &str, dir: &Path) -> Result<(), GitError> {
    std::fs::create_dir_all(dir)?;
    Git::in_dir(dir).run(["init", "--quiet", "--template="])?;
    let git_dir = dir.join(".git");
    std::fs::create_dir_all(git_dir.join("objects/info"))?;
    std::fs::write(
        git_dir.join("objects/info/alternates"),
        format!("{}\n", repo.objects_dir().display()),
    )?;
    File::create(git_dir.join(LEASE))?;
    let git = Git::for_repo(&git_dir, dir);
    git.run(["read-tree", tree])?;
    git.run(["checkout-index", "--all", "--force"])?;
    if let Some(head) = repo.head_commit()? {
        std::fs::write(git_dir.join("HEAD"), format!("{head}\n"))?;
    }
    Ok(())
}

/// Removes idle copies beyond `policy` (oldest first) and half-built temp dirs older than a
/// day. Copies in use are never touched. Returns how many were removed.
pub fn prune_read_copies(root: &Path, policy: KeepPolicy) -> usize {
    let mut removed = 0;
    let mut idle_kept = 0;
    for (_, dir) in copies_newest_first(root) {
        let age = age_of(&dir);
        let Some(_held) = try_exclusive(&dir) else {
            continue;
        };
        if idle_kept < policy.max_idle && age < policy.max_age {
            idle_kept += 1;
            continue;
        }
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let path = entry.path();
        let is_tmp = entry.file_name().to_string_lossy().starts_with(".tmp-");
        if is_tmp && age_of(&path) > Duration::from_secs(24 * 3600) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
    removed
}

/// Copies under `root` as `(tree, dir)`, most recently used first.
fn copies_newest_first(root: &Path) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(SystemTime, String, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let is_tree = name.len() >= 40 && name.chars().all(|c| c.is_ascii_hexdigit());
            let used = e.metadata().ok()?.modified().ok()?;
            is_tree.then(|| (used, name, e.path()))
        })
        .collect();
    found.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    found.into_iter().map(|(_, t, d)| (t, d)).collect()
}

/// Whether the copy borrows `repo`'s objects (copies of other repositories are never recycled).
fn belongs_to(dir: &Path, repo: &Repo) -> bool {
    std::fs::read_to_string(dir.join(".git/objects/info/alternates"))
        .map(|a| a.trim() == repo.objects_dir().display().to_string())
        .unwrap_or(false)
}

fn try_exclusive(dir: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(".git").join(LEASE))
        .ok()?;
    // SAFETY: flock on a descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    (rc == 0).then_some(file)
}

fn flock(file: &File, op: libc::c_int) -> Result<(), GitError> {
    loop {
        // SAFETY: flock on a descriptor we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err.into());
        }
    }
}

/// Marks a copy as recently used (recycling and pruning go by it).
fn touch(dir: &Path) {
    let _ = File::open(dir).and_then(|f| f.set_modified(SystemTime::now()));
}

fn age_of(path: &Path) -> Duration {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .unwrap_or_default()
}

fn nanos() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
