//! Snapshots, diffs, reverse application and read copies on real repositories.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_git::{
    apply_patch, diff_trees, ensure_read_copy, prune_read_copies, snapshot, ApplyCheck,
    ChangeStatus, Direction, KeepPolicy, Repo,
};

/// Tests that build read copies run one at a time: the build counter is per process.
static COPY_BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn git(dir: &Path, args: &[&str]) -> String {
    pitroom_testkit::repo::git_ok(dir, args)
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// A repository with a commit and uncommitted work: modified, staged and untracked files.
fn repo() -> (tempfile::TempDir, Repo) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    write(&dir, "a.txt", b"one\n");
    write(&dir, "sub/b.txt", b"two\n");
    write(&dir, "crlf.txt", b"x\r\ny\r\n");
    write(&dir, "bin.dat", &[0, 1, 2, 255, 0]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "c1"]);
    write(&dir, "a.txt", b"one, edited by the user\n");
    write(&dir, "sub/new.txt", b"untracked\n");
    git(&dir, &["add", "sub/b.txt"]);
    let repo = Repo::discover(&dir.join("sub")).unwrap().expect("a repo");
    (tmp, repo)
}

/// `repo()` for a test that builds read copies: holds `COPY_BUILDS` until dropped, and names
/// the directory the copies go in.
fn repo_for_copies() -> (
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    Repo,
    PathBuf,
) {
    let serial = COPY_BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let (tmp, repo) = repo();
    let root = tmp.path().join("copies");
    (serial, tmp, repo, root)
}

/// Waits until nothing holds the lease of the copy at `dir` any more. Dropping a lease closes
/// its descriptor here, but a git child another test is starting holds copies of this
/// process's descriptors (the lease's `flock` with them) until its `exec` closes them, which
/// on a loaded machine can come later than the next line of this test.
fn wait_until_unleased(dir: &Path) {
    let lease = std::fs::File::open(dir.join(".git/pitroom-lease")).expect("the lease file");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&lease);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // SAFETY: flock on a descriptor we own, released at once.
    while unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the lease of {} is still held a minute after it was dropped",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: as above.
    unsafe { libc::flock(fd, libc::LOCK_UN) };
}

fn snap(repo: &Repo, name: &str, tmp: &Path) -> String {
    snapshot(&repo.git_dir, &repo.toplevel, &repo.index, &tmp.join(name))
        .unwrap()
        .tree
}

#[test]
fn discover_finds_the_top_from_a_subdirectory_and_none_outside() {
    let (tmp, repo) = repo();
    assert_eq!(
        repo.toplevel,
        tmp.path().join("repo").canonicalize().unwrap()
    );
    let outside = tempfile::tempdir().unwrap();
    assert!(Repo::discover(outside.path()).unwrap().is_none());
}

#[test]
fn snapshot_includes_uncommitted_and_untracked_work_and_touches_no_index_or_ref() {
    let (tmp, repo) = repo();
    let index_before = std::fs::read(&repo.index).unwrap();
    let refs_before = git(&repo.toplevel, &["for-each-ref"]);
    let stash_before = git(&repo.toplevel, &["stash", "list"]);
    let tree = snap(&repo, "s.index", tmp.path());
    let listing = git(&repo.toplevel, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(listing.contains("sub/new.txt"), "{listing}");
    let a = git(
        &repo.toplevel,
        &["cat-file", "-p", &format!("{tree}:a.txt")],
    );
    assert_eq!(a, "one, edited by the user\n");
    assert_eq!(std::fs::read(&repo.index).unwrap(), index_before);
    assert_eq!(git(&repo.toplevel, &["for-each-ref"]), refs_before);
    assert_eq!(git(&repo.toplevel, &["stash", "list"]), stash_before);
}

#[test]
fn same_tree_gives_the_same_snapshot() {
    let (tmp, repo) = repo();
    assert_eq!(
        snap(&repo, "1.index", tmp.path()),
        snap(&repo, "2.index", tmp.path())
    );
}

#[test]
fn diff_and_reverse_apply_round_trip_byte_for_byte() {
    let (tmp, repo) = repo();
    let top = repo.toplevel.clone();
    let before = snap(&repo, "b.index", tmp.path());
    let files_before: Vec<(String, Vec<u8>)> = ["a.txt", "crlf.txt", "bin.dat", "sub/b.txt"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(top.join(f)).unwrap()))
        .collect();
    // The "worker": edit, CRLF edit, binary edit, delete, add with spaces, chmod, symlink.
    write(&top, "a.txt", b"one, edited by the user\nand the worker\n");
    write(&top, "crlf.txt", b"x\r\ny\r\nz\r\n");
    write(&top, "bin.dat", &[9, 0, 9]);
    std::fs::remove_file(top.join("sub/b.txt")).unwrap();
    write(&top, "new dir/é file.txt", b"");
    std::fs::set_permissions(top.join("crlf.txt"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("a.txt", top.join("link")).unwrap();
    let after = snap(&repo, "a.index", tmp.path());
    let changes = diff_trees(&repo.git_dir, &before, &after, false).unwrap();
    let statuses: Vec<(char, &str)> = changes
        .files
        .iter()
        .map(|f| (f.status.letter(), f.path.as_str()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ('M', "a.txt"),
            ('M', "bin.dat"),
            ('M', "crlf.txt"),
            ('A', "link"),
            ('A', "new dir/é file.txt"),
            ('D', "sub/b.txt")
        ]
    );
    assert!(changes
        .files
        .iter()
        .any(|f| f.status == ChangeStatus::Deleted));
    let patch = tmp.path().join("p.patch");
    std::fs::write(&patch, &changes.patch).unwrap();
    assert_eq!(
        apply_patch(&top, &patch, Direction::Reverse, true).unwrap(),
        ApplyCheck::Clean
    );
    assert_eq!(
        apply_patch(&top, &patch, Direction::Reverse, false).unwrap(),
        ApplyCheck::Clean
    );
    for (f, bytes) in files_before {
        assert_eq!(std::fs::read(top.join(&f)).unwrap(), bytes, "{f}");
    }
    assert!(!top.join("link").exists() && !top.join("new dir/é file.txt").exists());
    assert_eq!(
        std::fs::metadata(top.join("crlf.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    assert_eq!(
        snap(&repo, "c.index", tmp.path()),
        before,
        "the tree is back exactly"
    );
}

#[test]
fn reverse_apply_refuses_when_the_files_changed_since_and_writes_nothing() {
    let (tmp, repo) = repo();
    let top = repo.toplevel.clone();
    let before = snap(&repo, "b.index", tmp.path());
    write(&top, "a.txt", b"worker\n");
    write(&top, "sub/b.txt", b"worker too\n");
    let after = snap(&repo, "a.index", tmp.path());
    let patch = tmp.path().join("p.patch");
    std::fs::write(
        &patch,
        diff_trees(&repo.git_dir, &before, &after, false)
            .unwrap()
            .patch,
    )
    .unwrap();
    write(&top, "a.txt", b"user changed it again\n");
    let result = apply_patch(&top, &patch, Direction::Reverse, false).unwrap();
    assert!(
        matches!(result, ApplyCheck::Conflict { ref files, .. } if files.contains(&"a.txt".to_string())),
        "{result:?}"
    );
    assert_eq!(
        std::fs::read(top.join("sub/b.txt")).unwrap(),
        b"worker too\n",
        "all or nothing"
    );
}

#[test]
fn read_copy_is_shared_recycled_for_a_new_tree_and_never_taken_while_leased() {
    let (_serial, tmp, repo, root) = repo_for_copies();
    let t1 = snap(&repo, "1.index", tmp.path());
    let first = ensure_read_copy(&repo, &t1, &root).unwrap();
    let second = ensure_read_copy(&repo, &t1, &root).unwrap();
    assert_eq!(first.dir, second.dir, "one copy per tree, shared");
    assert_eq!(
        std::fs::read(first.dir.join("a.txt")).unwrap(),
        b"one, edited by the user\n"
    );
    assert_eq!(
        git(&first.dir, &["log", "--format=%s"]).trim(),
        "c1",
        "HEAD is the user's"
    );
    let untouched_inode = std::fs::metadata(first.dir.join("sub/b.txt"))
        .unwrap()
        .ino();
    drop(first);

    // While leased, a new tree gets a new copy.
    write(&repo.toplevel, "a.txt", b"second state\n");
    let t2 = snap(&repo, "2.index", tmp.path());
    let other = ensure_read_copy(&repo, &t2, &root).unwrap();
    assert_ne!(other.dir, second.dir);
    assert!(second.dir.exists(), "a leased copy is never recycled");
    let idle = [other.dir.clone(), second.dir.clone()];
    drop(other);
    drop(second);
    idle.iter().for_each(|dir| wait_until_unleased(dir));

    // Idle now: the newest idle copy moves to the third tree, rewriting only what differs.
    write(&repo.toplevel, "a.txt", b"third state\n");
    let t3 = snap(&repo, "3.index", tmp.path());
    let recycled = ensure_read_copy(&repo, &t3, &root).unwrap();
    assert_eq!(
        std::fs::read(recycled.dir.join("a.txt")).unwrap(),
        b"third state\n"
    );
    // (`.locks` holds the per-tree build locks: not a copy.)
    let copies: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    assert_eq!(copies.len(), 2, "recycled, not built: {copies:?}");
    let t1_dir = root.join(&t1);
    if !t1_dir.exists() {
        // The t1 copy was the one recycled: its unchanged files kept their inodes.
        assert_eq!(
            std::fs::metadata(recycled.dir.join("sub/b.txt"))
                .unwrap()
                .ino(),
            untouched_inode
        );
    }
}

#[test]
fn pruning_keeps_the_newest_idle_copies_and_every_leased_one() {
    let (_serial, tmp, repo, root) = repo_for_copies();
    let mut leases = Vec::new();
    for i in 0..4 {
        write(&repo.toplevel, "a.txt", format!("state {i}\n").as_bytes());
        let t = snap(&repo, &format!("{i}.index"), tmp.path());
        leases.push(ensure_read_copy(&repo, &t, &root).unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = leases.pop().unwrap();
    let idle: Vec<PathBuf> = leases.iter().map(|l| l.dir.clone()).collect();
    drop(leases);
    idle.iter().for_each(|dir| wait_until_unleased(dir));
    // No copy is an hour old: only the number of idle copies decides.
    let prune = |max_idle| {
        prune_read_copies(
            &root,
            KeepPolicy {
                max_idle,
                max_age: Duration::from_secs(3600),
            },
        )
    };
    let removed = prune(1);
    assert_eq!(removed, 2);
    assert!(held.dir.exists());
    let removed = prune(0);
    assert_eq!(removed, 1);
    assert!(held.dir.exists(), "a leased copy is never pruned");
}

#[test]
fn runs_that_need_the_same_copy_at_once_wait_for_one_build() {
    let (_serial, tmp, repo, root) = repo_for_copies();
    let tree = snap(&repo, "1.index", tmp.path());
    let before = pitroom_git::copies_built();
    let barrier = std::sync::Barrier::new(8);
    let dirs: Vec<PathBuf> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    let lease = ensure_read_copy(&repo, &tree, &root).expect("a copy");
                    let dir = lease.dir.clone();
                    // Hold the lease until every thread has one, as a crew's runs do.
                    barrier.wait();
                    dir
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert!(
        dirs.iter().all(|d| *d == dirs[0]),
        "one shared copy: {dirs:?}"
    );
    assert_eq!(
        pitroom_git::copies_built() - before,
        1,
        "built once, not once per run"
    );
    let leftovers: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary copy outlives its builder: {leftovers:?}"
    );
}
