//! What `git apply` would do wrong or only half: the checks `apply` and `revert` run on a
//! patch before anything is written. A patch that passes lands byte for byte; one that does not
//! is refused whole, each problem naming its path, why and what to do.
//!
//! - a symlink whose target leaves the project (absolute, or `..` past the top) is not created;
//! - nothing is written or removed through a symlinked folder of the user's tree;
//! - a nested repository (a gitlink, mode 160000) is not "applied": the patch holds only its
//!   commit id, and git would leave an empty folder;
//! - a file under converting attributes (`filter`, `text`/`eol`, `ident`,
//!   `working-tree-encoding`, or `core.autocrlf`) must come out of the user's smudge/eol
//!   conversion as exactly the bytes the worker left, or it is refused.

use std::ffi::OsStr;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::command::GitError;
use crate::diff::Direction;

mod convert;
mod patch;
#[cfg(test)]
mod tests;

pub(crate) use convert::find_inexact_paths;
use convert::*;
pub use patch::*;

const SYMLINK: u32 = 0o120000;
const GITLINK: u32 = 0o160000;

/// One file's section of a `git diff --binary --full-index` patch, read byte-exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchEntry {
    /// The path before (`None` for a new file) and after (`None` for a deletion).
    pub old_path: Option<Vec<u8>>,
    pub new_path: Option<Vec<u8>>,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub old_blob: Option<String>,
    pub new_blob: Option<String>,
    /// The whole content of each side, when a single text hunk holds it (a symlink's target).
    pub old_text: Option<Vec<u8>>,
    pub new_text: Option<Vec<u8>>,
    /// Where the section lies in the patch.
    pub range: Range<usize>,
    /// Whether git wrote the content as binary (`GIT binary patch`, `Binary files … differ`):
    /// it is not readable in the patch.
    pub binary: bool,
}

/// One reason a patch cannot land exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeProblem {
    /// The path, quoted as git quotes it when it holds control characters.
    pub path: String,
    pub why: String,
    /// What the user can do.
    pub hint: String,
}

/// The outcome of [`check_edges`]: the problems (none: go ahead), and the sections to leave
/// out of the patch (a nested repository a revert would remove that the user already removed).
#[derive(Debug, Clone, Default)]
pub struct EdgeCheck {
    pub problems: Vec<EdgeProblem>,
    pub skip: Vec<Range<usize>>,
}

impl EdgeCheck {
    /// `patch` without the skipped sections.
    pub fn filtered(&self, patch: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(patch.len());
        let mut at = 0;
        for r in &self.skip {
            out.extend_from_slice(&patch[at..r.start]);
            at = r.end;
        }
        out.extend_from_slice(&patch[at..]);
        out
    }
}

/// Checks `patch`, about to be applied in `direction` to the work tree at `toplevel`.
/// `worker_tree` is the tree the worker left (an isolated run's copy): the bytes a converted
/// file must come out as. `inexact` are the files git's conversion cannot give back as they
/// were before the run ([`crate::read_inexact_note`] of its "before" snapshot): a revert that would
/// restore one is refused. Nothing is written.
pub fn check_edges(
    toplevel: &Path,
    patch: &[u8],
    direction: Direction,
    worker_tree: Option<&Path>,
    inexact: &[Vec<u8>],
) -> Result<EdgeCheck, GitError> {
    let mut entries = parse_patch(patch);
    if direction == Direction::Reverse {
        for e in &mut entries {
            std::mem::swap(&mut e.old_path, &mut e.new_path);
            std::mem::swap(&mut e.old_mode, &mut e.new_mode);
            std::mem::swap(&mut e.old_blob, &mut e.new_blob);
            std::mem::swap(&mut e.old_text, &mut e.new_text);
        }
    }
    let mut check = EdgeCheck::default();
    for e in &entries {
        nested_repository(toplevel, e, direction, worker_tree, &mut check);
        through_symlink(toplevel, e, &entries, &mut check.problems);
        if direction == Direction::Forward {
            escaping_symlink(e, &mut check.problems);
        }
        let restores = matches!(e.new_mode, Some(0o100644 | 0o100755));
        if let (Direction::Reverse, true, Some(path)) = (direction, restores, &e.new_path) {
            if inexact.contains(path) {
                check.problems.push(EdgeProblem {
                    path: quote_path(path),
                    why: "your .gitattributes/config convert it (filter or eol), and its bytes before the run were not in git's converted form, so revert would write git's form instead of them".into(),
                    hint: "undo the run by hand from its patch (pitroom show --patch), keeping that file's own bytes".into(),
                });
            }
        }
    }
    if let (Direction::Forward, Some(tree)) = (direction, worker_tree) {
        converted_files(toplevel, tree, &entries, &mut check.problems)?;
    }
    Ok(check)
}

/// A gitlink on either side: git writes an empty folder for one and removes nothing for the
/// other. Only a nested repository the run added and the user has since removed passes (its
/// section is skipped).
fn nested_repository(
    toplevel: &Path,
    e: &PatchEntry,
    direction: Direction,
    worker_tree: Option<&Path>,
    check: &mut EdgeCheck,
) {
    let old_link = e.old_mode == Some(GITLINK);
    let new_link = e.new_mode == Some(GITLINK);
    if !old_link && !new_link {
        return;
    }
    let path = e.new_path.as_ref().or(e.old_path.as_ref());
    let shown = quote_path(path.map(Vec::as_slice).unwrap_or_default());
    match direction {
        Direction::Forward => check.problems.push(EdgeProblem {
            path: shown.clone(),
            why: "a nested git repository (gitlink) the worker created or changed; the patch holds only its commit id, not its files, so applying it would leave an empty folder".into(),
            hint: match (worker_tree, path) {
                (Some(tree), Some(p)) => format!(
                    "copy it by hand from the run's copy ({}) if you want it, or re-run the task asking the worker not to create repositories",
                    join(tree, p).display()
                ),
                _ => "re-run the task asking the worker not to create repositories".into(),
            },
        }),
        Direction::Reverse => {
            // Reversed: `old` is what the tree has now.
            let removing_added = old_link && e.new_path.is_none();
            let exists = e
                .old_path
                .as_ref()
                .is_some_and(|p| std::fs::symlink_metadata(join(toplevel, p)).is_ok());
            if removing_added && !exists {
                check.skip.push(e.range.clone());
            } else if removing_added {
                check.problems.push(EdgeProblem {
                    path: shown.clone(),
                    why: "a nested git repository the run created; revert does not delete repositories".into(),
                    hint: format!("remove it yourself if you do not want it (rm -rf {shown}), then revert again"),
                });
            } else {
                check.problems.push(EdgeProblem {
                    path: shown,
                    why: "a nested git repository the run removed or changed; the patch holds only its commit id, so revert cannot bring its files back".into(),
                    hint: "restore that repository by hand (from its own remote or a backup)".into(),
                });
            }
        }
    }
}

/// A path the patch writes or removes whose folder is a symlink in the user's tree (unless the
/// patch itself removes that symlink first): git refuses it, and Pitroom never writes through one.
fn through_symlink(
    toplevel: &Path,
    e: &PatchEntry,
    entries: &[PatchEntry],
    problems: &mut Vec<EdgeProblem>,
) {
    let mut paths: Vec<&Vec<u8>> = e.old_path.iter().chain(e.new_path.iter()).collect();
    paths.dedup();
    for path in paths {
        let mut prefix_end = 0;
        while let Some(offset) = path[prefix_end..].iter().position(|b| *b == b'/') {
            let prefix = &path[..prefix_end + offset];
            prefix_end += offset + 1;
            let removed_first = entries.iter().any(|other| {
                other.old_path.as_deref() == Some(prefix)
                    && other.old_mode == Some(SYMLINK)
                    && other.new_path.as_deref() != Some(prefix)
            });
            let is_link = std::fs::symlink_metadata(join(toplevel, prefix))
                .is_ok_and(|m| m.file_type().is_symlink());
            if is_link && !removed_first {
                problems.push(EdgeProblem {
                    path: quote_path(path),
                    why: format!(
                        "its folder {} is a symlink in your tree; Pitroom never writes through a symlink",
                        quote_path(prefix)
                    ),
                    hint: format!(
                        "replace the symlink {} with a real folder, or re-run the task on the current tree",
                        quote_path(prefix)
                    ),
                });
                break;
            }
            if std::fs::symlink_metadata(join(toplevel, prefix)).is_err() {
                break;
            }
        }
    }
}

/// A symlink the patch creates whose target is absolute or climbs out of the project.
fn escaping_symlink(e: &PatchEntry, problems: &mut Vec<EdgeProblem>) {
    let (Some(path), Some(SYMLINK)) = (&e.new_path, e.new_mode) else {
        return;
    };
    let hint = "re-run the task asking for a relative link inside the project, or create the link yourself".to_string();
    let Some(target) = &e.new_text else {
        problems.push(EdgeProblem {
            path: quote_path(path),
            why: "a symlink whose target cannot be read from the patch".into(),
            hint,
        });
        return;
    };
    let escapes = target.starts_with(b"/") || {
        let mut depth: i64 = path.iter().filter(|b| **b == b'/').count() as i64;
        let mut out = false;
        for part in target.split(|b| *b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => depth -= 1,
                _ => depth += 1,
            }
            if depth < 0 {
                out = true;
                break;
            }
        }
        out
    };
    if escapes {
        problems.push(EdgeProblem {
            path: quote_path(path),
            why: format!(
                "a symlink pointing outside the project, to {}",
                quote_path(target)
            ),
            hint,
        });
    }
}

fn join(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}
