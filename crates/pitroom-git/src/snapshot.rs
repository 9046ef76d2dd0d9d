//! Throwaway-index snapshots: the tree id of a work tree as it is now.

use std::path::{Path, PathBuf};

use crate::command::{line, Git, GitError};

/// A snapshot: the tree id and the index file that produced it. Seeding the next snapshot of
/// the same tree with this index keeps its stat cache, so unchanged files are not re-hashed.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub tree: String,
    pub index: PathBuf,
    /// Files the snapshot's `drop` rule left out.
    pub dropped: Vec<String>,
    /// Paths git could not stage, so the snapshot does not hold them: a nested repository with
    /// no commit yet, a file it may not read.
    pub unstaged: Vec<String>,
}

/// What a snapshot leaves out.
#[derive(Default)]
pub struct SnapshotOptions<'a> {
    /// Paths (relative to the work tree's top) never staged: linked dependency folders.
    pub exclude: &'a [String],
    /// Files dropped after staging when this says so: secret-looking files kept out of read copies.
    pub drop: Option<&'a dyn Fn(&str) -> bool>,
    /// The tree `seed_index` was written from, when the caller knows it (a write run's "after"
    /// snapshot, seeded from its "before" one): a snapshot that stages no change is that tree,
    /// and is not written again.
    pub seed_tree: Option<&'a str>,
}

/// Snapshots `work_tree` of the repository at `git_dir`: copies `seed_index` (the real index,
/// or an earlier snapshot's) to `out_index`, stages everything (`add -A`: tracked, modified and
/// untracked-but-not-ignored files) into that copy, and writes the tree. The real index is read,
/// never written.
pub fn snapshot(
    git_dir: &Path,
    work_tree: &Path,
    seed_index: &Path,
    out_index: &Path,
) -> Result<Snapshot, GitError> {
    snapshot_excluding(git_dir, work_tree, seed_index, out_index, &[])
}

/// [`snapshot`] with `exclude` (paths relative to the work tree's top) never staged: the
/// "before" snapshot of an edit run, which keeps secret files out of the object store.
pub fn snapshot_excluding(
    git_dir: &Path,
    work_tree: &Path,
    seed_index: &Path,
    out_index: &Path,
    exclude: &[String],
) -> Result<Snapshot, GitError> {
    let options = SnapshotOptions {
        exclude,
        ..SnapshotOptions::default()
    };
    let staged = stage(git_dir, work_tree, seed_index, out_index, &options)?;
    // The tree and the revert note both read only what was staged (git replaces the index
    // file whole when it caches the tree in it), so the two go at once: the note's git calls
    // no longer add to the snapshot's time.
    let tree = std::thread::scope(|scope| {
        let tree = scope.spawn(|| staged.write_tree());
        write_inexact_note(&staged.git, git_dir, work_tree, out_index);
        // A panic there is a bug: it goes on as one.
        tree.join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    Ok(Snapshot {
        tree,
        index: staged.index,
        dropped: staged.dropped,
        unstaged: staged.unstaged,
    })
}

/// Leaves the note of the files a revert cannot restore exactly beside `index`. Best effort: a
/// note that cannot be made leaves revert with git's own conversion.
fn write_inexact_note(git: &Git, git_dir: &Path, work_tree: &Path, index: &Path) {
    let note = inexact_note(index);
    let _ = std::fs::remove_file(&note);
    if let Ok(paths) = crate::edges::find_inexact_paths(git, git_dir, work_tree) {
        if !paths.is_empty() {
            let _ = std::fs::write(&note, nul_joined_bytes(&paths));
        }
    }
}

/// The note [`snapshot`] leaves beside its index: the files whose bytes git's conversion
/// (the user's filters and eol attributes) would not give back from the snapshot, NUL-separated.
pub fn inexact_note(index: &Path) -> PathBuf {
    let mut p = index.as_os_str().to_owned();
    p.push(".inexact");
    PathBuf::from(p)
}

/// The paths in the note beside `index` (none when there is no note).
pub fn read_inexact_note(index: &Path) -> Vec<Vec<u8>> {
    std::fs::read(inexact_note(index))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn nul_joined_bytes(paths: &[Vec<u8>]) -> Vec<u8> {
    paths
        .iter()
        .flat_map(|p| p.iter().copied().chain(std::iter::once(0)))
        .collect()
}

/// [`snapshot`] with exclusions. Returns the snapshot and the paths `drop` removed.
pub fn snapshot_with(
    git_dir: &Path,
    work_tree: &Path,
    seed_index: &Path,
    out_index: &Path,
    options: &SnapshotOptions<'_>,
) -> Result<Snapshot, GitError> {
    let staged = stage(git_dir, work_tree, seed_index, out_index, options)?;
    let tree = match options.seed_tree {
        Some(seed) if !staged.changed && staged.dropped.is_empty() => seed.to_string(),
        _ => staged.write_tree()?,
    };
    Ok(Snapshot {
        tree,
        index: staged.index,
        dropped: staged.dropped,
        unstaged: staged.unstaged,
    })
}

/// A work tree staged into a throwaway index whose tree is not written yet.
#[derive(Debug)]
struct Staged {
    git: Git,
    /// The throwaway index holding the staged state.
    index: PathBuf,
    /// Files the `drop` rule left out.
    dropped: Vec<String>,
    /// Paths git could not stage (`add --ignore-errors` named them).
    unstaged: Vec<String>,
    /// Whether staging changed any entry of the seed (added, removed, or new content or mode):
    /// without, the staged index holds the seed's tree.
    changed: bool,
}

impl Staged {
    /// Writes the staged index's tree and returns its id. Reads the index and the object
    /// store only, never the work tree's contents: whatever changed in the work tree since it
    /// was staged is not in this tree. (Git rewrites the index with the tree cached in it; an
    /// entry it finds racily clean it checks against the file and, if the file changed since,
    /// marks to be re-hashed: the next snapshot seeded from this index sees that change.)
    fn write_tree(&self) -> Result<String, GitError> {
        // `add -A` has just written every blob the index names, so the per-blob existence
        // check of a plain `write-tree` is pure cost (half of its time on a 10k-file tree).
        let tree = line(&self.git.run(["write-tree", "--missing-ok"])?);
        let _ = std::fs::remove_file(lock_path(&self.index));
        Ok(tree)
    }
}

/// Stages `work_tree` into a copy of `seed_index` at `out_index`: [`snapshot_with`] without
/// the tree.
fn stage(
    git_dir: &Path,
    work_tree: &Path,
    seed_index: &Path,
    out_index: &Path,
    options: &SnapshotOptions<'_>,
) -> Result<Staged, GitError> {
    let _ = std::fs::remove_file(out_index);
    let git = Git::for_repo(git_dir, work_tree).with_index(out_index);
    if seed_index.is_file() {
        std::fs::copy(seed_index, out_index)?;
        keep_mtime(seed_index, out_index);
    } else {
        git.run(["read-tree", "--empty"])?;
    }
    // `--verbose` names every path whose entry it adds, replaces (new content or mode) or
    // removes, and nothing else (a refreshed stat is no change): silence means the seed's tree.
    // `--ignore-errors`: a path git cannot stage (a nested repository with no commit yet, a
    // file it may not read) is left out and named, not allowed to fail the snapshot — else a
    // worker that makes one would keep every change it made out of the record.
    let mut add = vec![
        "add".to_string(),
        "-A".into(),
        "--verbose".into(),
        "--ignore-errors".into(),
        "--".into(),
        ":/".into(),
    ];
    // Naming an ignored path, even to exclude it, makes `add` fail; ignored paths are left out
    // anyway, so only the others need excluding.
    let ignored = ignored_paths(&git, options.exclude)?;
    add.extend(
        options
            .exclude
            .iter()
            .filter(|p| !ignored.contains(p))
            .map(|p| format!(":(top,literal,exclude){p}")),
    );
    let added = git.output(&add, None)?;
    let unstaged = match added.code {
        0 => Vec::new(),
        1 => unstaged_paths(&added.stderr),
        _ => return Err(added.into_error()),
    };
    let changed = !added.stdout.is_empty();
    // An excluded path the `drop` rule names was kept out before staging (never hashed): it
    // counts among the dropped.
    let mut dropped: Vec<String> = match options.drop {
        Some(drop) => options
            .exclude
            .iter()
            .filter(|p| !ignored.contains(p) && drop(p))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    if let Some(drop) = options.drop {
        // Listing the staged index is cheap (no work-tree scan); only matches are removed.
        let listed = git.run(["ls-files", "-z", "--cached"])?;
        let staged_secrets: Vec<String> = listed
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| drop(p))
            .collect();
        if !staged_secrets.is_empty() {
            let out = git.output(
                ["update-index", "--force-remove", "-z", "--stdin"],
                Some(&nul_joined(&staged_secrets)),
            )?;
            if out.code != 0 {
                return Err(out.into_error());
            }
        }
        dropped.extend(staged_secrets);
        dropped.sort();
        dropped.dedup();
    }
    Ok(Staged {
        git,
        index: out_index.to_path_buf(),
        dropped,
        unstaged,
        changed,
    })
}

/// The paths `add --ignore-errors` names as not staged: `error: 'sub/' does not have a commit
/// checked out`, `error: open("f"): Permission denied`, `error: unable to index file 'f'`.
fn unstaged_paths(stderr: &str) -> Vec<String> {
    let mut paths: Vec<String> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("error: "))
        .filter_map(|rest| {
            let quoted = rest.split_once('\'').or_else(|| rest.split_once('"'))?.1;
            let end = quoted.find(['\'', '"'])?;
            Some(quoted[..end].to_string())
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Paths as git's `-z --stdin` reads them: each followed by a NUL.
fn nul_joined(paths: &[String]) -> Vec<u8> {
    paths
        .iter()
        .flat_map(|p| p.as_bytes().iter().copied().chain(std::iter::once(0)))
        .collect()
}

/// Which of `paths` git ignores in this work tree.
fn ignored_paths(git: &Git, paths: &[String]) -> Result<Vec<String>, GitError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    // Exit 1 means "none ignored"; only 128 is an error.
    let out = git.output(
        ["check-ignore", "-z", "--stdin", "--no-index"],
        Some(&nul_joined(paths)),
    )?;
    if out.code > 1 {
        return Err(out.into_error());
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).trim_end_matches('/').to_string())
        .collect())
}

/// Gives the copy of an index its original's modification time. Git trusts an entry's stat data
/// only when the entry is older than the index file; with a copy's fresh time, an entry written
/// in the same second as the original would pass as clean, and an edit of the same size made in
/// that second (a worker's, right after the "before" snapshot) would be missed.
fn keep_mtime(original: &Path, copy: &Path) {
    let Ok(modified) = std::fs::metadata(original).and_then(|m| m.modified()) else {
        return;
    };
    if let Ok(file) = std::fs::File::options().write(true).open(copy) {
        let _ = file.set_modified(modified);
    }
}

fn lock_path(index: &Path) -> PathBuf {
    let mut p = index.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_add_could_not_stage_are_read_from_its_errors() {
        let stderr = "error: 'sub/' does not have a commit checked out\n\
                      error: open(\"secret.txt\"): Permission denied\n\
                      error: unable to index file 'big.bin'\n\
                      fatal: adding files failed\n";
        assert_eq!(
            unstaged_paths(stderr),
            vec!["big.bin".to_string(), "secret.txt".into(), "sub/".into()]
        );
        assert!(unstaged_paths("warning: LF will be replaced\n").is_empty());
    }
    use pitroom_testkit::repo::git_ok;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    /// A new repository holding `a.txt` ("user\n") whose mtime is 100 s old, and that time: the
    /// racy-git tests then put an index and an edit in the same second.
    fn repo_with_an_old_file() -> (tempfile::TempDir, std::path::PathBuf, SystemTime) {
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path();
        pitroom_testkit::repo::git_ok(top, &["init", "-q"]);
        pitroom_testkit::repo::git_ok(top, &["config", "core.trustctime", "false"]);
        let file = top.join("a.txt");
        let when = SystemTime::now() - Duration::from_secs(100);
        std::fs::write(&file, "user\n").expect("w");
        set_mtime(&file, when);
        (tmp, file, when)
    }

    /// Sets `index`'s mtime to `when`, then edits `file` to "work\n" (the size of "user\n")
    /// keeping its mtime `when`: the index's entry for the file is racily clean.
    fn edit_in_the_same_second(index: &Path, file: &Path, when: SystemTime) {
        set_mtime(index, when);
        std::fs::write(file, "work\n").expect("w");
        set_mtime(file, when);
    }

    /// The "after" snapshot of `top` seeded from `seed_index`, with no options (and no note).
    fn after_snapshot(git_dir: &Path, top: &Path, seed_index: &Path, out: &Path) -> Snapshot {
        snapshot_with(git_dir, top, seed_index, out, &SnapshotOptions::default()).expect("after")
    }

    fn set_mtime(path: &Path, when: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(when))
            .expect("mtime");
    }

    /// A repository whose work tree differs from its index (and its index from HEAD) in every
    /// way a snapshot must see: a modified file, an untracked one, a deleted one, a rename, an
    /// ignored file, a new symlink, a retargeted symlink and an executable-bit change.
    fn every_kind_of_change(top: &Path) {
        let git = |args: &[&str]| pitroom_testkit::repo::git_ok(top, args);
        let write = |rel: &str, body: &str| pitroom_testkit::repo::write(top, rel, body);
        git(&["init", "-q"]);
        git(&["config", "core.trustctime", "false"]);
        write(".gitignore", "*.log\n");
        write("src/lib.rs", "pub fn a() {}\n");
        write("src/gone.rs", "// deleted\n");
        write("src/old_name.rs", "// moved\n");
        write("run.sh", "echo hi\n");
        write("staged_only.txt", "staged\n");
        std::os::unix::fs::symlink("src/lib.rs", top.join("link")).expect("link");
        git(&["add", "-A"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "base",
        ]);
        // The user's work in progress, partly staged: the index is neither HEAD nor the tree.
        write("staged_only.txt", "staged, then edited again\n");
        git(&["add", "staged_only.txt"]);
        write("staged_only.txt", "edited after staging\n");
        write("src/lib.rs", "pub fn a() { changed() }\n");
        write("src/new.rs", "// untracked\n");
        write("debug.log", "ignored\n");
        std::fs::remove_file(top.join("src/gone.rs")).expect("rm");
        std::fs::rename(top.join("src/old_name.rs"), top.join("src/new_name.rs")).expect("mv");
        std::fs::set_permissions(top.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::remove_file(top.join("link")).expect("rm link");
        std::os::unix::fs::symlink("run.sh", top.join("link")).expect("relink");
        std::os::unix::fs::symlink("src", top.join("dir_link")).expect("dir link");
    }

    /// The paths and modes a tree holds, recursively.
    fn listing(top: &Path, tree: &str) -> String {
        pitroom_testkit::repo::git_ok(top, &["ls-tree", "-r", tree])
    }

    #[test]
    fn a_snapshot_seeded_from_the_users_index_equals_one_that_hashes_every_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).expect("dir");
        every_kind_of_change(&top);
        let git_dir = top.join(".git");
        let indexes = tempfile::tempdir().expect("tmp");
        let seeded = snapshot(
            &git_dir,
            &top,
            &git_dir.join("index"),
            &indexes.path().join("seeded.index"),
        )
        .expect("seeded");
        let unseeded = snapshot(
            &git_dir,
            &top,
            &indexes.path().join("no such index"),
            &indexes.path().join("unseeded.index"),
        )
        .expect("unseeded");
        assert_eq!(
            seeded.tree,
            unseeded.tree,
            "{}",
            listing(&top, &seeded.tree)
        );
        let files = listing(&top, &seeded.tree);
        for expected in [
            "100755 blob",
            "src/new.rs",
            "src/new_name.rs",
            "120000 blob",
            "dir_link",
        ] {
            assert!(
                files.contains(expected),
                "{expected} missing from:\n{files}"
            );
        }
        for absent in ["src/gone.rs", "src/old_name.rs", "debug.log"] {
            assert!(!files.contains(absent), "{absent} in:\n{files}");
        }
        let staged = pitroom_testkit::repo::git_ok(
            &top,
            &["show", &format!("{}:staged_only.txt", seeded.tree)],
        );
        assert_eq!(
            staged, "edited after staging\n",
            "the work tree, not the index, is snapshotted"
        );
    }

    /// An "after" snapshot told its seed's tree gives that tree back only when staging changed
    /// nothing; each kind of change still gives the tree a snapshot hashing every file gives.
    #[test]
    fn an_after_snapshot_reuses_the_seed_tree_only_when_nothing_changed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).expect("dir");
        let git = |args: &[&str]| pitroom_testkit::repo::git_ok(&top, args);
        let write = |rel: &str, body: &str| pitroom_testkit::repo::write(&top, rel, body);
        git(&["init", "-q"]);
        git(&["config", "core.trustctime", "false"]);
        write(".gitignore", "*.log\n");
        write("a.txt", "a\n");
        write("run.sh", "echo hi\n");
        write("gone.txt", "soon deleted\n");
        std::os::unix::fs::symlink("a.txt", top.join("link")).expect("link");
        let git_dir = top.join(".git");
        let indexes = tempfile::tempdir().expect("tmp");
        let base_index = indexes.path().join("base.index");
        let base = snapshot(&git_dir, &top, &git_dir.join("index"), &base_index).expect("base");
        let after = || {
            let options = SnapshotOptions {
                seed_tree: Some(&base.tree),
                ..SnapshotOptions::default()
            };
            let out = indexes.path().join("after.index");
            snapshot_with(&git_dir, &top, &base_index, &out, &options).expect("after")
        };
        let hashed = || {
            let out = indexes.path().join("hashed.index");
            let none = indexes.path().join("no such index");
            snapshot_with(&git_dir, &top, &none, &out, &SnapshotOptions::default())
                .expect("hashed")
                .tree
        };
        write("ignored.log", "never staged\n");
        assert_eq!(after().tree, base.tree, "an ignored file changes nothing");
        let changes: [(&str, &dyn Fn()); 6] = [
            ("an edit", &|| write("a.txt", "b\n")),
            ("an untracked file", &|| write("new.txt", "new\n")),
            ("a deletion", &|| {
                std::fs::remove_file(top.join("gone.txt")).expect("rm")
            }),
            ("an executable bit", &|| {
                std::fs::set_permissions(top.join("run.sh"), std::fs::Permissions::from_mode(0o755))
                    .expect("chmod")
            }),
            ("a retargeted symlink", &|| {
                std::fs::remove_file(top.join("link")).expect("rm");
                std::os::unix::fs::symlink("run.sh", top.join("link")).expect("relink");
            }),
            ("a rename", &|| {
                std::fs::rename(top.join("new.txt"), top.join("moved.txt")).expect("mv")
            }),
        ];
        for (what, change) in changes {
            change();
            let tree = after().tree;
            assert_ne!(tree, base.tree, "{what} is seen");
            assert_eq!(
                tree,
                hashed(),
                "{what}: the same tree as hashing every file"
            );
        }
    }

    /// The user's index was written in the same second as a file's last change, so its entry
    /// is racily clean; the file then changes again within that second, keeping its size and
    /// its mtime (and ctime is not trusted). A snapshot seeded from that index still sees the
    /// change: the copy keeps the index's own mtime, so git re-reads the racy entry.
    #[test]
    fn a_snapshot_seeded_from_a_racy_user_index_sees_a_same_second_same_size_edit() {
        let (tmp, file, when) = repo_with_an_old_file();
        let top = tmp.path();
        git_ok(top, &["add", "a.txt"]);
        let git_dir = top.join(".git");
        let user_index = git_dir.join("index");
        let staged = git_ok(top, &["ls-files", "-s", "a.txt"]);
        // The index and the file's mtime share a second: the entry is racily clean.
        edit_in_the_same_second(&user_index, &file, when);
        let indexes = tempfile::tempdir().expect("tmp");
        let snap = snapshot(&git_dir, top, &user_index, &indexes.path().join("s.index"))
            .expect("snapshot");
        let content = git_ok(top, &["show", &format!("{}:a.txt", snap.tree)]);
        assert_eq!(content, "work\n", "the same-second edit is in the snapshot");
        assert_eq!(
            git_ok(top, &["ls-files", "-s", "a.txt"]),
            staged,
            "the user's index is untouched"
        );
    }

    /// A tree written after the work tree changed again is the state staged, not the edit, and
    /// the "after" snapshot seeded from the index `write_tree` rewrote still sees a same-size
    /// edit made in the staged entry's second (git checks a racily clean entry against the file
    /// when it rewrites the index).
    #[test]
    fn a_tree_written_after_the_work_tree_changed_is_the_staged_state_and_the_change_is_seen() {
        let (tmp, file, when) = repo_with_an_old_file();
        let top = tmp.path();
        let git_dir = top.join(".git");
        let indexes = tempfile::tempdir().expect("tmp");
        let base_index = indexes.path().join("base.index");
        let staged = stage(
            &git_dir,
            top,
            &git_dir.join("index"),
            &base_index,
            &SnapshotOptions::default(),
        )
        .expect("stage");
        // Staged in the same second as the file's change: its entry is racily clean.
        edit_in_the_same_second(&base_index, &file, when);
        let base = staged.write_tree().expect("tree");
        assert_eq!(
            git_ok(top, &["show", &format!("{base}:a.txt")]),
            "user\n",
            "the staged state"
        );
        let after = after_snapshot(
            &git_dir,
            top,
            &base_index,
            &indexes.path().join("after.index"),
        );
        assert_eq!(
            git_ok(top, &["show", &format!("{}:a.txt", after.tree)]),
            "work\n",
            "the edit"
        );
    }

    /// The "after" snapshot is seeded with the "before" one's index. An edit of the same size
    /// with the same mtime second as that index's entries is still seen: git re-checks racily
    /// clean entries only when the seed's copy keeps the seed's time.
    #[test]
    fn a_same_size_edit_in_the_same_second_as_the_before_snapshot_is_captured() {
        let (tmp, file, when) = repo_with_an_old_file();
        let top = tmp.path();
        let git_dir = top.join(".git");
        let indexes = tempfile::tempdir().expect("tmp");
        let base_index = indexes.path().join("base.index");
        let after_index = indexes.path().join("after.index");
        let base = snapshot(&git_dir, top, &git_dir.join("index"), &base_index).expect("base");
        // The index was written in the same second as the file: its entry is racily clean.
        edit_in_the_same_second(&base_index, &file, when);
        let after = after_snapshot(&git_dir, top, &base_index, &after_index);
        assert_ne!(base.tree, after.tree, "the edit is in the after snapshot");
    }
}
