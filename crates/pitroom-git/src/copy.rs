//! Read-only copies: a separate repository holding one snapshot tree, borrowing the user's
//! objects through `alternates`. Nothing is registered in the user's repository.

use std::path::{Path, PathBuf};

use crate::command::{Git, GitError};
use crate::Repo;

/// Returns the copy of `tree` under `root` (`root/<tree>`), building it if needed. Copies are
/// shared by runs of the same tree; a concurrent build is settled by rename, the loser's copy
/// is dropped. HEAD of the copy is detached at `head` so `git log` works inside it.
pub fn ensure_read_copy(repo: &Repo, tree: &str, root: &Path) -> Result<PathBuf, GitError> {
    let dest = root.join(tree);
    if dest.join(".git").is_dir() {
        touch(&dest);
        return Ok(dest);
    }
    std::fs::create_dir_all(root)?;
    let tmp = root.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let built = build(repo, tree, &tmp);
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if std::fs::rename(&tmp, &dest).is_err() {
        // Another run won the race; use its copy.
        let _ = std::fs::remove_dir_all(&tmp);
        if !dest.join(".git").is_dir() {
            return Err(GitError::Parse(format!(
                "could not place the read copy at {}",
                dest.display()
            )));
        }
    }
    Ok(dest)
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
    let git = Git::for_repo(&git_dir, dir);
    git.run(["read-tree", tree])?;
    git.run(["checkout-index", "--all", "--force"])?;
    if let Some(head) = repo.head_commit()? {
        std::fs::write(git_dir.join("HEAD"), format!("{head}\n"))?;
    }
    Ok(())
}

/// Marks a copy as recently used (pruning goes by age).
fn touch(dir: &Path) {
    let _ = std::fs::File::open(dir).and_then(|f| f.set_modified(std::time::SystemTime::now()));
}
