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
        // One builder per tree: runs that need the same copy at once (a crew) wait for the one
        // being made instead of each checking out the whole tree and throwing it away. The
        // kernel drops the lock if its holder dies; what it left half-built is only ever a
        // `.tmp-*` directory, which nobody leases.
        let _building = lock_tree(root, tree)?;
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
            discard(&dir, "a read copy that could not move to the new tree");
            continue;
        }
        let dest = root.join(tree);
        if std::fs::rename(&dir, &dest).is_err() {
            // Another run placed this tree first: use theirs.
            discard(&dir, "a recycled read copy another run overtook");
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

/// Holds `root/.locks/<tree>` exclusively until dropped.
fn lock_tree(root: &Path, tree: &str) -> Result<File, GitError> {
    let locks = root.join(".locks");
    std::fs::create_dir_all(&locks)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(locks.join(tree))?;
    flock(&file, libc::LOCK_EX)?;
    Ok(file)
}

/// How many read copies this process checked out from scratch (the test of one build per tree
/// counts them).
static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The number of read copies built from scratch by this process so far.
pub fn copies_built() -> usize {
    BUILDS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Checks a new copy out in a temp dir and renames it into place.
fn build_new(repo: &Repo, tree: &str, root: &Path) -> Result<Option<CopyLease>, GitError> {
    let tmp = root.join(format!(".tmp-{}-{}", std::process::id(), nanos()));
    BUILDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if let Err(e) = build(repo, tree, &tmp) {
        discard(&tmp, "a half-built read copy");
        return Err(e);
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(tmp.join(".git").join(LEASE))?;
    flock(&file, libc::LOCK_SH)?;
    let dest = root.join(tree);
    if std::fs::rename(&tmp, &dest).is_err() {
        discard(&tmp, "a read copy another run built first");
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
    if !fill_by_cloning(repo, &git, dir, &reflink)? {
        check_out_whole_tree(&git, tree)?;
    }
    if let Some(head) = repo.head_commit()? {
        std::fs::write(git_dir.join("HEAD"), format!("{head}\n"))?;
    }
    Ok(())
}

/// Writes every file of `tree` into the copy's empty work tree, from the objects themselves:
/// `read-tree -u --reset` (what `git worktree add` does), not `checkout-index --all`, which on
/// this machine took several times as long for the same 30,000 files and left the index
/// without stat data, so that the copy's first snapshot re-hashed every file. Parallel
/// checkout workers (one per core; git 2.32+, ignored by older ones) write the files.
fn check_out_whole_tree(git: &Git, tree: &str) -> Result<(), GitError> {
    let mut git = git.clone();
    git.config.push("checkout.workers=0");
    git.run(["read-tree", "-u", "--reset", tree])?;
    Ok(())
}

/// Fills a copy whose index holds the snapshot tree with copy-on-write clones of the user's own
/// files, where the file system can clone (btrfs, XFS, …): the blocks are shared, so a copy of a
/// large project costs metadata only. The clones are then verified against the tree — the index
/// refresh re-hashes every file — and whatever differs (a file the user changed since the
/// snapshot, a mode) is checked out from the tree, as is everything that could not be cloned
/// (symlinks, files gone since). Returns `false`, having written nothing, when the first clone
/// shows the file system cannot clone; the caller then checks the whole tree out.
pub(crate) fn fill_by_cloning(
    repo: &Repo,
    git: &Git,
    dir: &Path,
    clone: &dyn Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<bool, GitError> {
    let listed = git.run(["ls-files", "-z", "--stage"])?;
    let mut cloned_any = false;
    for entry in listed.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        // "MODE OBJECT STAGE\tPATH"
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        if !(meta.starts_with("100644 ") || meta.starts_with("100755 ")) {
            continue;
        }
        let (src, dst) = (repo.toplevel.join(path), dir.join(path));
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if crate::command::interrupted() {
            return Err(GitError::Interrupted {
                args: "cloning files into a copy".into(),
            });
        }
        match clone(&src, &dst) {
            Ok(()) => cloned_any = true,
            Err(e) if !cloned_any && cannot_clone(&e) => return Ok(false),
            // A file gone since the snapshot, or unreadable: checked out below.
            Err(_) => {}
        }
    }
    if !cloned_any {
        return Ok(false);
    }
    let _ = git.output(["update-index", "-q", "--refresh"], None);
    // Wrong content or mode (`diff-files`), then whatever is missing (symlinks, files that
    // could not be cloned): checked out from the tree, with fresh stat data in the index (-u).
    for listing in [
        git.run(["diff-files", "--name-only", "-z"])?,
        git.run(["ls-files", "-z", "--deleted"])?,
    ] {
        if listing.is_empty() {
            continue;
        }
        let out = git.output(
            ["checkout-index", "-u", "--force", "-z", "--stdin"],
            Some(&listing),
        )?;
        if out.code != 0 {
            return Err(out.into_error());
        }
    }
    Ok(true)
}

/// Errors that mean "this file system (or this pair of paths) cannot clone at all".
fn cannot_clone(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EOPNOTSUPP
                | libc::EXDEV
                | libc::EINVAL
                | libc::ENOTTY
                | libc::ENOSYS
                | libc::EPERM
        )
    ) || not_supported_on_macos(e)
}

/// macOS's `clonefile` says `ENOTSUP` (a number of its own there; on Linux it is `EOPNOTSUPP`,
/// matched above) on a file system without clones (anything but APFS).
#[cfg(target_os = "macos")]
fn not_supported_on_macos(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOTSUP)
}

#[cfg(not(target_os = "macos"))]
fn not_supported_on_macos(_: &std::io::Error) -> bool {
    false
}

/// A copy-on-write clone of `src` at `dst` (`FICLONE`), or an error if the file system cannot.
#[cfg(target_os = "linux")]
fn reflink(src: &Path, dst: &Path) -> std::io::Result<()> {
    /// `_IOW(0x94, 9, int)` from linux/fs.h.
    const FICLONE: libc::c_ulong = 0x4004_9409;
    let source = File::open(src)?;
    let target = File::create(dst)?;
    // SAFETY: both descriptors are open files we own; FICLONE takes the source fd as argument.
    let rc = unsafe { libc::ioctl(target.as_raw_fd(), FICLONE as _, source.as_raw_fd()) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    drop(target);
    let _ = std::fs::remove_file(dst);
    Err(err)
}

/// A copy-on-write clone of `src` at `dst` (`clonefile`, APFS), or an error if the file
/// system cannot. `dst` must not exist (`clonefile` makes it).
#[cfg(target_os = "macos")]
fn reflink(src: &Path, dst: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (source, target) = (c(src)?, c(dst)?);
    // SAFETY: two NUL-terminated paths; flag 0 follows no special behaviour.
    let rc = unsafe { libc::clonefile(source.as_ptr(), target.as_ptr(), 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
            discard(&path, "a day-old temporary copy");
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

/// Takes `op` (`LOCK_SH` or `LOCK_EX`) on `file`, waiting as long as it takes, unless the run
/// is stopped meanwhile: the wait is for another run (a builder of the same copy, a recycler),
/// and a stop must not wait for it. `flock` itself would not return on a signal (it restarts),
/// so the lock is tried without blocking and the wait is a watched poll.
fn flock(file: &File, op: libc::c_int) -> Result<(), GitError> {
    loop {
        // SAFETY: flock on a descriptor we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EWOULDBLOCK | libc::EINTR) => {}
            _ => return Err(err.into()),
        }
        if crate::command::interrupted() {
            return Err(GitError::Interrupted {
                args: "waiting for another run's copy".into(),
            });
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// How often a wait for another run's lock on a copy is retried (and the stop looked at).
const LOCK_POLL: Duration = Duration::from_millis(20);

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

/// Takes a read copy a worker wrote into out of use: first renamed away from its tree's name
/// (copies are leased by that name, so no later run can lease it, even if its removal fails),
/// then removed. A leftover is a `.tmp-` directory, pruned after a day.
pub fn retire_read_copy(copy: &Path) {
    let Some(root) = copy.parent() else {
        return discard(copy, "a spoiled read copy");
    };
    let aside = root.join(format!(".tmp-spoiled-{}-{}", std::process::id(), nanos()));
    match std::fs::rename(copy, &aside) {
        Ok(()) => discard(&aside, "a spoiled read copy"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::error!(
                "could not move the spoiled read copy {} aside ({e}); remove it by hand, or the next read run of that tree reads it",
                copy.display()
            );
            discard(copy, "a spoiled read copy");
        }
    }
}

/// Removes a copy nobody will use; a later prune retries one that stays (only `.tmp-`
/// directories and copies no run leases are ever pruned), and the run log says why it stayed.
fn discard(dir: &Path, what: &str) {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!("could not remove {what}, {}: {e}", dir.display());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_copy_leaves_its_trees_name_and_the_disk() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let copy = tmp.path().join("4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        std::fs::create_dir_all(copy.join(".git")).expect("copy");
        std::fs::write(copy.join("calc.py"), "spoiled by a worker\n").expect("file");
        std::fs::write(copy.join(".git").join(LEASE), "").expect("lease");
        retire_read_copy(&copy);
        assert!(lease_existing(&copy).expect("lease check").is_none());
        let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("root").collect();
        assert!(left.is_empty(), "{left:?}");
        // Retiring what is already gone is fine.
        retire_read_copy(&copy);
    }

    fn git_in(dir: &Path, args: &[&str]) {
        pitroom_testkit::repo::git_ok(dir, args);
    }

    /// A committed repository and an empty copy repository whose index holds its tree.
    fn repo_and_empty_copy(tmp: &Path, files: &[(&str, &str)]) -> (Repo, PathBuf, Git) {
        let top = tmp.join("repo");
        for (path, content) in files {
            let p = top.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
            std::fs::write(p, content).expect("write");
        }
        git_in(&top, &["init", "-q"]);
        git_in(&top, &["add", "-A"]);
        git_in(&top, &["commit", "-qm", "c"]);
        let repo = Repo::discover(&top).expect("git").expect("repo");
        let tree = Git::for_repo(&repo.git_dir, &top)
            .run(["rev-parse", "HEAD^{tree}"])
            .expect("tree");
        let tree = String::from_utf8_lossy(&tree).trim().to_string();
        let dir = tmp.join("copy");
        std::fs::create_dir_all(&dir).expect("dir");
        Git::in_dir(&dir)
            .run(["init", "--quiet", "--template="])
            .expect("init");
        std::fs::write(
            dir.join(".git/objects/info/alternates"),
            format!("{}\n", repo.objects_dir().display()),
        )
        .expect("alternates");
        let git = Git::for_repo(&dir.join(".git"), &dir);
        git.run(["read-tree", &tree]).expect("read-tree");
        (repo, dir, git)
    }

    /// The clone-then-verify path, with plain copies standing in for clones (this machine's file
    /// system cannot clone): whatever the "clones" got wrong is repaired from the tree.
    #[test]
    fn cloned_fill_is_verified_and_repaired_against_the_tree() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).expect("dir");
        std::os::unix::fs::symlink("same.txt", top.join("link")).expect("symlink");
        std::fs::write(top.join("run.sh"), "#!/bin/sh\n").expect("w");
        std::fs::set_permissions(top.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let (repo, dir, git) = repo_and_empty_copy(
            tmp.path(),
            &[
                ("same.txt", "same\n"),
                ("sub/changed.txt", "snapshot version\n"),
                ("gone.txt", "gone later\n"),
            ],
        );
        // The user moves on after the snapshot.
        std::fs::write(top.join("sub/changed.txt"), "edited after the snapshot\n").expect("w");
        std::fs::remove_file(top.join("gone.txt")).expect("rm");
        // Plain copies lose the executable bit, as a clone would.
        let plain_copy = |src: &Path, dst: &Path| std::fs::write(dst, std::fs::read(src)?);
        assert!(fill_by_cloning(&repo, &git, &dir, &plain_copy).expect("fill"));

        let read = |p: &str| std::fs::read_to_string(dir.join(p)).expect("read");
        assert_eq!(read("sub/changed.txt"), "snapshot version\n");
        assert_eq!(read("gone.txt"), "gone later\n");
        assert_eq!(
            std::fs::read_link(dir.join("link")).expect("link"),
            Path::new("same.txt")
        );
        let mode = std::fs::metadata(dir.join("run.sh"))
            .expect("m")
            .permissions()
            .mode();
        assert_ne!(mode & 0o111, 0, "executable bit from the tree");
        let differs = git.run(["diff-files", "--name-only"]).expect("diff-files");
        let missing = git.run(["ls-files", "--deleted"]).expect("ls-files");
        assert!(
            differs.is_empty() && missing.is_empty(),
            "the work tree matches its tree"
        );
    }

    #[test]
    fn a_file_system_that_cannot_clone_falls_back_without_writing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (repo, dir, git) = repo_and_empty_copy(tmp.path(), &[("a.txt", "a\n")]);
        let unsupported =
            |_: &Path, _: &Path| Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        assert!(!fill_by_cloning(&repo, &git, &dir, &unsupported).expect("fill"));
        assert!(!dir.join("a.txt").exists());
    }

    #[test]
    fn reflink_on_this_file_system_either_clones_exactly_or_says_it_cannot() {
        let tmp = tempfile::tempdir().expect("tmp");
        let src = tmp.path().join("src");
        std::fs::write(&src, b"bytes\0\xff").expect("w");
        let dst = tmp.path().join("dst");
        match reflink(&src, &dst) {
            Ok(()) => assert_eq!(std::fs::read(&dst).expect("r"), b"bytes\0\xff"),
            Err(e) => {
                assert!(cannot_clone(&e), "{e}");
                assert!(!dst.exists(), "a failed clone leaves nothing behind");
            }
        }
    }
}
