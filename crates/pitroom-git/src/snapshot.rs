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
}

/// What a snapshot leaves out.
#[derive(Default)]
pub struct SnapshotOptions<'a> {
    /// Paths (relative to the work tree's top) never staged: linked dependency folders.
    pub exclude: &'a [String],
    /// Files dropped after staging when this says so: secret-looking files kept out of read copies.
    pub drop: Option<&'a dyn Fn(&str) -> bool>,
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
    let snap = snapshot_with(
        git_dir,
        work_tree,
        seed_index,
        out_index,
        &SnapshotOptions::default(),
    )?;
    let git = Git::for_repo(git_dir, work_tree).with_index(out_index);
    let note = inexact_note(out_index);
    let _ = std::fs::remove_file(&note);
    // Best effort: a note that cannot be made leaves revert with git's own conversion.
    if let Ok(paths) = crate::edges::inexact_paths(&git, git_dir, work_tree) {
        if !paths.is_empty() {
            let _ = std::fs::write(&note, nul_joined_bytes(&paths));
        }
    }
    Ok(snap)
}

/// The note [`snapshot`] leaves beside its index: the files whose bytes git's conversion
/// (the user's filters and eol attributes) would not give back from the snapshot, NUL-separated.
pub fn inexact_note(index: &Path) -> PathBuf {
    let mut p = index.as_os_str().to_owned();
    p.push(".inexact");
    PathBuf::from(p)
}

/// The paths in the note beside `index` (none when there is no note).
pub fn inexact_paths(index: &Path) -> Vec<Vec<u8>> {
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
    let _ = std::fs::remove_file(out_index);
    let git = Git::for_repo(git_dir, work_tree).with_index(out_index);
    if seed_index.is_file() {
        std::fs::copy(seed_index, out_index)?;
        keep_mtime(seed_index, out_index);
    } else {
        git.run(["read-tree", "--empty"])?;
    }
    let mut add = vec!["add".to_string(), "-A".into(), "--".into(), ":/".into()];
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
    git.run(&add)?;
    let mut dropped = Vec::new();
    if let Some(drop) = options.drop {
        // Listing the staged index is cheap (no work-tree scan); only matches are removed.
        let listed = git.run(["ls-files", "-z", "--cached"])?;
        dropped = listed
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| drop(p))
            .collect();
        if !dropped.is_empty() {
            let out = git.output(
                ["update-index", "--force-remove", "-z", "--stdin"],
                Some(&nul_joined(&dropped)),
            )?;
            if out.code != 0 {
                return Err(out.into_error());
            }
        }
    }
    // `add -A` has just written every blob the index names, so the per-blob existence check
    // of a plain `write-tree` is pure cost (half of its time on a 10k-file tree).
    let tree = line(&git.run(["write-tree", "--missing-ok"])?);
    let _ = std::fs::remove_file(lock_path(out_index));
    Ok(Snapshot {
        tree,
        index: out_index.to_path_buf(),
        dropped,
    })
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
    use std::time::{Duration, SystemTime};

    fn set_mtime(path: &Path, when: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(when))
            .expect("mtime");
    }

    /// The "after" snapshot is seeded with the "before" one's index. An edit of the same size
    /// with the same mtime second as that index's entries is still seen: git re-checks racily
    /// clean entries only when the seed's copy keeps the seed's time.
    #[test]
    fn a_same_size_edit_in_the_same_second_as_the_before_snapshot_is_captured() {
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path();
        let git = |args: &[&str]| pitroom_testkit::repo::git_ok(top, args);
        git(&["init", "-q"]);
        git(&["config", "core.trustctime", "false"]);
        let file = top.join("a.txt");
        let when = SystemTime::now() - Duration::from_secs(100);
        std::fs::write(&file, "user\n").expect("w");
        set_mtime(&file, when);
        let git_dir = top.join(".git");
        let indexes = tempfile::tempdir().expect("tmp");
        let base_index = indexes.path().join("base.index");
        let after_index = indexes.path().join("after.index");
        let base = snapshot(&git_dir, top, &git_dir.join("index"), &base_index).expect("base");
        // The index was written in the same second as the file: its entry is racily clean.
        set_mtime(&base_index, when);
        std::fs::write(&file, "work\n").expect("w");
        set_mtime(&file, when);
        let after = snapshot_with(
            &git_dir,
            top,
            &base_index,
            &after_index,
            &SnapshotOptions::default(),
        )
        .expect("after");
        assert_ne!(base.tree, after.tree, "the edit is in the after snapshot");
    }
}
