//! Finding the repository a directory belongs to.

use std::path::{Path, PathBuf};

use crate::command::{line, Git, GitError};

/// A non-bare repository with a work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The work tree's top directory.
    pub toplevel: PathBuf,
    /// `.git` of this work tree (for a linked worktree, its private git dir).
    pub git_dir: PathBuf,
    /// The directory holding the object store (shared by linked worktrees).
    pub common_dir: PathBuf,
    /// The real index file (never written by Pitroom).
    pub index: PathBuf,
}

impl Repo {
    /// The repository containing `dir`, or `None` when `dir` is not inside a work tree.
    pub fn discover(dir: &Path) -> Result<Option<Repo>, GitError> {
        let out = Git::in_dir(dir).output(
            [
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--absolute-git-dir",
                "--git-common-dir",
                "--git-path",
                "index",
            ],
            None,
        )?;
        if out.code != 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        match lines.as_slice() {
            [top, git_dir, common, index] => Ok(Some(Repo {
                toplevel: PathBuf::from(top),
                git_dir: PathBuf::from(git_dir),
                common_dir: PathBuf::from(common),
                index: PathBuf::from(index),
            })),
            _ => Ok(None),
        }
    }

    pub fn git(&self) -> Git {
        Git::for_repo(&self.git_dir, &self.toplevel)
    }

    /// The commit HEAD points at, if there is one yet.
    pub fn head_commit(&self) -> Result<Option<String>, GitError> {
        let out = self
            .git()
            .output(["rev-parse", "--verify", "-q", "HEAD^{commit}"], None)?;
        Ok((out.code == 0).then(|| line(&out.stdout)))
    }

    pub fn objects_dir(&self) -> PathBuf {
        self.common_dir.join("objects")
    }
}
