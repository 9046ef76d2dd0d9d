//! `apply` and `discard`: landing an isolated run's patch in the user's tree (checked first,
//! all or nothing), or dropping its copy while keeping the patch.

use std::path::Path;

use pitroom_git::{ApplyCheck, Direction};
use pitroom_workers::Mode;

use crate::home::Home;
use crate::landing;
pub use crate::patch::PatchError;
use crate::record::{PatchFate, RunRecord};
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
    if record.patch.is_applied() {
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
    record.patch = PatchFate::Applied;
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

/// Why run `record`'s copy cannot be discarded now, if it cannot: the one rule every front end
/// asks (the dashboard's button, `pitroom discard`, MCP). A copy counts only when it is a
/// directory strictly inside `$PITROOM_HOME/copies`, the only place `discard` removes from: a
/// copy recorded anywhere else would be marked discarded while staying on disk.
pub fn discard_refusal(home: &Home, record: &RunRecord) -> Option<String> {
    let id = &record.id;
    if record.spec.mode != Mode::Isolate {
        return Some(format!(
            "run {id} is a {} run: only an isolated run (-i) has a copy to discard",
            record.spec.mode.as_str()
        ));
    }
    if record.state.is_active() {
        return Some(format!(
            "run {id} is still {}; stop it first",
            record.state.as_str()
        ));
    }
    if record.patch.is_applied() {
        return Some(format!(
            "run {id}'s patch was applied and its copy already removed"
        ));
    }
    let copy_left = record
        .copy
        .as_deref()
        .is_some_and(|c| c.is_dir() && is_inside(c, &home.copies()));
    if record.patch.is_discarded() || !copy_left {
        return Some(format!(
            "run {id}'s copy is already gone (its patch is kept)"
        ));
    }
    None
}

/// Removes an isolated run's copy and keeps its patch.
pub fn discard(home: &Home, record: &mut RunRecord) -> Result<(), PatchError> {
    if let Some(why) = discard_refusal(home, record) {
        return Err(PatchError::Refused(why));
    }
    remove_copy(home, record);
    record.patch = PatchFate::Discarded;
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

    /// A finished isolated run of `home` whose copy is recorded at `copy`.
    fn isolated_run(home: &Home, copy: &Path) -> RunRecord {
        let spec = crate::RunSpec::new("task", Mode::Isolate, "opencode", home.root.clone());
        let mut record = RunRecord::new(
            "r1".into(),
            spec,
            "2026-01-01T00:00:00Z".parse().expect("a stamp"),
        );
        record.state = crate::RunState::Done;
        record.copy = Some(copy.to_path_buf());
        record
    }

    #[test]
    fn a_copy_inside_the_copies_dir_may_be_discarded_and_each_refusal_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        let copy = home.copies().join("r1");
        std::fs::create_dir_all(&copy).unwrap();
        let mut record = isolated_run(&home, &copy);
        assert_eq!(discard_refusal(&home, &record), None);

        record.spec.mode = Mode::Read;
        let why = discard_refusal(&home, &record).unwrap();
        assert_eq!(
            why,
            "run r1 is a read run: only an isolated run (-i) has a copy to discard"
        );
        record.spec.mode = Mode::Isolate;
        record.state = crate::RunState::Running;
        assert_eq!(
            discard_refusal(&home, &record).unwrap(),
            "run r1 is still running; stop it first"
        );
        record.state = crate::RunState::Done;
        record.patch = PatchFate::Applied;
        assert_eq!(
            discard_refusal(&home, &record).unwrap(),
            "run r1's patch was applied and its copy already removed"
        );
        record.patch = PatchFate::Discarded;
        assert_eq!(
            discard_refusal(&home, &record).unwrap(),
            "run r1's copy is already gone (its patch is kept)"
        );
    }

    /// Where the dashboard and `discard` used to disagree: `discard` took any existing copy
    /// (and, finding it outside `copies/`, marked it discarded while leaving it on disk); the
    /// dashboard compared paths as written, so `copies/r1/../..` or `copies` itself passed.
    #[test]
    fn a_copy_outside_the_copies_dir_is_never_discarded_nor_marked_so() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        std::fs::create_dir_all(home.copies().join("r1")).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        for copy in [
            elsewhere.clone(),
            home.copies(),
            home.copies().join("r1/../.."),
        ] {
            let mut record = isolated_run(&home, &copy);
            assert_eq!(
                discard_refusal(&home, &record).as_deref(),
                Some("run r1's copy is already gone (its patch is kept)"),
                "{}",
                copy.display()
            );
            let refused = discard(&home, &mut record);
            assert!(
                matches!(refused, Err(PatchError::Refused(_))),
                "{}",
                copy.display()
            );
            assert!(!record.patch.is_discarded(), "{}", copy.display());
            assert!(copy.is_dir(), "{} was removed", copy.display());
        }
    }
}
