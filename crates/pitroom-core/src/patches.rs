//! `apply` and `discard`: landing an isolated run's patch in the user's tree (checked first,
//! all or nothing), or dropping its copy while keeping the patch.

use std::path::Path;

use pitroom_git::{ApplyCheck, Direction};
use pitroom_workers::Mode;

use crate::home::Home;
use crate::landing;
pub use crate::patch::PatchError;
use crate::record::RunRecord;
use crate::redact::MASK;

fn require_isolated(record: &RunRecord) -> Result<(), PatchError> {
    let id = &record.id;
    if record.spec.mode != Mode::Isolate {
        return Err(PatchError::Refused(format!(
            "run {id} is a {} run, not an isolated one (-i)",
            record.spec.mode.as_str()
        )));
    }
    record.ensure_finished().map_err(PatchError::Refused)
}

/// What the user allows `apply` to land beyond a patch whose every line was shown as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// Deleting files (`--allow-delete`).
    pub delete: bool,
    /// Files whose preview masked a secret: the real bytes land, not `[REDACTED]`
    /// (`--allow-redacted`).
    pub redacted: bool,
    /// Files whose content is binary, so no preview shows it (`--allow-binary`).
    pub binary: bool,
}

/// Applies run `record`'s patch to its repository's work tree. Deletions, redacted text and
/// binary content each need their `allow`. On success the record is marked applied and the
/// copy removed; returns the files changed.
pub fn apply(home: &Home, record: &mut RunRecord, allow: Allow) -> Result<usize, PatchError> {
    require_isolated(record)?;
    let id = record.id.clone();
    if record.applied {
        return Err(PatchError::Refused(format!("run {id} was already applied")));
    }
    let patch = home.run_dir(&id).join("changes.patch");
    if record.changes.is_empty() || !patch.is_file() {
        return Err(PatchError::Refused(format!(
            "run {id} changed nothing; nothing to apply"
        )));
    }
    let Some(repo) = record.repo.clone() else {
        return Err(PatchError::Refused(format!(
            "run {id} has no repository on record"
        )));
    };
    let deletions: Vec<&str> = record
        .changes
        .iter()
        .filter(|c| c.status == 'D')
        .map(|c| c.path.as_str())
        .collect();
    if !deletions.is_empty() && !allow.delete {
        let shown: Vec<String> = deletions
            .iter()
            .take(10)
            .map(|p| pitroom_git::quote_path(p.as_bytes()))
            .collect();
        return Err(PatchError::Refused(format!(
            "run {id} deletes {} file(s); nothing was applied: {}{}\nReview with `pitroom show --patch {id}`, then apply with --allow-delete",
            deletions.len(),
            shown.join(", "),
            if deletions.len() > 10 { ", …" } else { "" }
        )));
    }
    let bytes = std::fs::read(&patch)?;
    unshown(record, &patch, &bytes, allow)?;
    let copy = record.copy.as_deref().filter(|c| c.join(".git").is_dir());
    let edges = pitroom_git::check_edges(&repo, &bytes, Direction::Forward, copy, &[])?;
    if !edges.problems.is_empty() {
        let (lines, hint) = describe(&edges.problems);
        return Err(PatchError::Unsafe {
            message: format!(
                "run {id} was not applied; nothing was changed. {} path(s) cannot land exactly:\n{lines}",
                edges.problems.len()
            ),
            hint,
        });
    }
    match pitroom_git::apply_patch(&repo, &patch, Direction::Forward, false)? {
        ApplyCheck::Clean => {}
        ApplyCheck::Conflict { files, detail } => {
            let task = home.run_dir(&id).join("task.md");
            return Err(PatchError::Conflict(format!(
                "run {id} does not apply to your current tree; nothing was changed.\nConflicting: {}\n{detail}\nRe-run the task on the current tree: pitroom run -i --task-file {}",
                if files.is_empty() { "(see below)".to_string() } else { files.join(", ") },
                task.display()
            )));
        }
    }
    record.applied = true;
    record.write(&home.record_path(&id))?;
    remove_copy(home, record);
    Ok(record.changes.len())
}

/// Refuses a patch that would land what its preview (`show --patch`, the review package) did
/// not show, unless allowed: text shown redacted, binary content. Names each file and why.
fn unshown(
    record: &RunRecord,
    stored: &Path,
    patch: &[u8],
    allow: Allow,
) -> Result<(), PatchError> {
    let mut lines = Vec::new();
    let mut flags = Vec::new();
    if !allow.redacted {
        let redacted = landing::redacted_files(patch, &landing::redactor_for(record));
        lines.extend(
            redacted.iter().map(|p| {
                format!("  {p}: shown with {MASK} where a secret's real bytes would land")
            }),
        );
        if !redacted.is_empty() {
            flags.push("--allow-redacted");
        }
    }
    if !allow.binary {
        let unseen = landing::unseen_files(patch);
        lines.extend(
            unseen
                .iter()
                .map(|u| format!("  {}: {}", u.path, u.describe())),
        );
        if !unseen.is_empty() {
            flags.push("--allow-binary");
        }
    }
    if lines.is_empty() {
        return Ok(());
    }
    let id = &record.id;
    let look = match record.copy.as_deref().filter(|c| c.is_dir()) {
        Some(copy) => format!("read those files in the run's copy, {}", copy.display()),
        None => format!(
            "read those files' sections in the stored patch, {}",
            stored.display()
        ),
    };
    Err(PatchError::Unsafe {
        message: format!(
            "run {id} was not applied; nothing was changed. {} file(s) would land content `pitroom show --patch {id}` does not show:\n{}",
            lines.len(),
            lines.join("\n")
        ),
        hint: format!(
            "{look}; if you trust them, apply with: pitroom apply {id} {}",
            flags.join(" ")
        ),
    })
}

/// The problems as one line each (`  path: why`), and their hints, each once.
pub(crate) fn describe(problems: &[pitroom_git::EdgeProblem]) -> (String, String) {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("  {}: {}", p.path, p.why))
        .collect();
    let mut hints: Vec<String> = Vec::new();
    for p in problems {
        let hint = format!("{}: {}", p.path, p.hint);
        if !hints.contains(&hint) {
            hints.push(hint);
        }
    }
    (lines.join("\n"), hints.join("\n"))
}

/// Removes an isolated run's copy and keeps its patch.
pub fn discard(home: &Home, record: &mut RunRecord) -> Result<(), PatchError> {
    require_isolated(record)?;
    if record.discarded || record.copy.as_deref().is_none_or(|c| !c.exists()) {
        return Err(PatchError::Refused(format!(
            "run {} has no copy left to discard (applied or discarded already)",
            record.id
        )));
    }
    remove_copy(home, record);
    record.discarded = true;
    record.write(&home.record_path(&record.id))?;
    Ok(())
}

/// Deletes the copy — only if it really lies inside `$PITROOM_HOME/copies`, whatever the
/// record says.
fn remove_copy(home: &Home, record: &RunRecord) {
    let Some(copy) = record.copy.as_deref() else {
        return;
    };
    if is_inside(copy, &home.copies()) {
        let _ = std::fs::remove_dir_all(copy);
    }
}

fn is_inside(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => p != r && p.starts_with(&r),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_strictly_inside_the_copies_dir_count() {
        let home = tempfile::tempdir().unwrap();
        let copies = home.path().join("copies");
        std::fs::create_dir_all(copies.join("run1")).unwrap();
        assert!(is_inside(&copies.join("run1"), &copies));
        assert!(!is_inside(&copies, &copies), "never the root itself");
        assert!(!is_inside(home.path(), &copies));
        assert!(!is_inside(&copies.join("run1/../.."), &copies));
        assert!(!is_inside(Path::new("/"), &copies));
    }
}
