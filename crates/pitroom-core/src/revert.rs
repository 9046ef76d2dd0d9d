//! `revert`: undo exactly a write run's edits, checked first, all or nothing.

use pitroom_git::{ApplyCheck, Direction};
use pitroom_workers::Mode;

use crate::home::Home;
pub use crate::patch::PatchError;
use crate::record::{PatchFate, RunRecord};

/// Reverse-applies run `record`'s patch to its repository and marks the run reverted.
pub fn revert(home: &Home, record: &mut RunRecord) -> Result<usize, PatchError> {
    let id = record.id.clone();
    if record.spec.mode != Mode::Write {
        return Err(PatchError::Refused(format!(
            "run {id} is a {} run; only write runs change your tree, so there is nothing to revert",
            record.spec.mode.as_str()
        )));
    }
    record.ensure_finished().map_err(PatchError::Refused)?;
    if record.patch.is_reverted() {
        return Err(PatchError::Refused(format!(
            "run {id} was already reverted"
        )));
    }
    let Some(repo) = record.repo.clone() else {
        return Err(PatchError::Refused(format!(
            "run {id} ran outside a git repository, so no patch was recorded"
        )));
    };
    let patch = home.run_dir(&id).join("changes.patch");
    if record.changes.is_empty() || !patch.is_file() {
        return Err(PatchError::Refused(format!(
            "run {id} changed nothing; nothing to revert"
        )));
    }
    let bytes = std::fs::read(&patch)?;
    // Files whose bytes before the run git's conversion cannot give back (noted by the
    // "before" snapshot).
    let inexact = pitroom_git::read_inexact_note(&home.run_dir(&id).join("base.index"));
    let edges = pitroom_git::check_edges(&repo, &bytes, Direction::Reverse, None, &inexact)?;
    if !edges.problems.is_empty() {
        let (lines, hint) = crate::patches::describe(&edges.problems);
        let hint = hint.replace(
            "pitroom show --patch)",
            &format!("pitroom show --patch {id})"),
        );
        return Err(PatchError::Unsafe {
            message: format!(
                "run {id} was not reverted; nothing was changed. {} path(s) cannot be restored exactly:\n{lines}",
                edges.problems.len()
            ),
            hint,
        });
    }
    // Sections with nothing left to undo (a nested repository the user already removed) are
    // left out of the patch applied.
    let filtered = home.run_dir(&id).join("revert.patch");
    let to_apply = if edges.skip.is_empty() {
        patch.clone()
    } else {
        std::fs::write(&filtered, edges.filtered(&bytes))?;
        filtered.clone()
    };
    let applied = pitroom_git::apply_patch(&repo, &to_apply, Direction::Reverse, false);
    if to_apply == filtered {
        let _ = std::fs::remove_file(&filtered);
    }
    match applied? {
        ApplyCheck::Clean => {}
        ApplyCheck::Conflict { detail: why, .. } => {
            return Err(PatchError::Conflict(format!(
                "run {id} cannot be reverted: its files changed since the run, so nothing was touched.\n{why}\nInspect the patch with: pitroom show --patch {id}"
            )))
        }
    }
    record.patch = PatchFate::Reverted;
    record.write(&home.record_path(&id))?;
    Ok(record.changes.len())
}
