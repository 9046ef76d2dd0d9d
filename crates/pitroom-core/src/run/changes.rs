//! Snapshot and diff: the "after" snapshot of the tree the patch covers and its diff against
//! the base. The tree, not the events, says what the worker changed.

use std::path::{Path, PathBuf};

use pitroom_git::Changes;

use super::paths::relative_to;
use super::stream::Stream;
use super::tree::TreeSetup;
use super::{io, EngineError};
use crate::record::{ChangedFile, RunRecord};

/// An "after" snapshot, with the repository it was taken in, so it can be diffed.
pub(super) struct After {
    pub(super) tree: String,
    git_dir: PathBuf,
    /// The top of the tree the patch covers (the copy, or the user's repository).
    pub(super) work_tree: PathBuf,
    /// The index the snapshot was seeded from.
    seed: PathBuf,
    /// The snapshot's own index.
    index: PathBuf,
    /// Paths git could not stage: in no patch.
    pub(super) unstaged: Vec<String>,
    /// The secret-looking files the snapshot left out (in the user's repository).
    pub(super) secrets: Vec<String>,
}

/// Takes the "after" snapshot of the tree the patch covers; `None` when there is no repository
/// to take it in. `links` (`--link`ed folders) are never staged. `base` is the run's "before"
/// tree: in the user's tree the snapshot is seeded from the index that tree was written from,
/// so when the worker changed nothing it is that tree, not written again.
pub(super) fn snapshot_after(
    links: &[String],
    run_dir: &Path,
    tree: &TreeSetup,
    base: Option<&str>,
) -> Result<Option<After>, EngineError> {
    let (git_dir, work_tree, seed, seed_tree) = match (&tree.copy, &tree.repo) {
        // A copy's own index may hold a later tree than the base (a follow-up's): not known.
        (Some(copy), _) => (
            copy.join(".git"),
            copy.clone(),
            copy.join(".git/index"),
            None,
        ),
        (None, Some(repo)) => (
            repo.git_dir.clone(),
            repo.toplevel.clone(),
            run_dir.join("base.index"),
            base,
        ),
        (None, None) => return Ok(None),
    };
    // In the user's repository secret files are never staged: those of the "before"
    // snapshot, and any that appeared since.
    let mut secrets = Vec::new();
    if let (None, Some(repo)) = (&tree.copy, &tree.repo) {
        secrets = crate::secrets::stageable_secrets(repo);
        if let Some((before, _)) = &tree.secrets_before {
            secrets.extend(before.iter().cloned());
        }
        secrets.sort();
        secrets.dedup();
    }
    let mut exclude: Vec<String> = links.to_vec();
    exclude.extend(secrets.iter().cloned());
    let options = pitroom_git::SnapshotOptions {
        exclude: &exclude,
        drop: None,
        seed_tree,
    };
    let after = pitroom_git::snapshot_with(
        &git_dir,
        &work_tree,
        &seed,
        &run_dir.join("after.index"),
        &options,
    )?;
    Ok(Some(After {
        tree: after.tree,
        git_dir,
        work_tree,
        seed,
        index: after.index,
        unstaged: after.unstaged,
        secrets,
    }))
}

impl After {
    /// What changed from `base` to this snapshot. Writes no patch: the caller decides where it
    /// goes (the record's `changes.patch`, a hand-off account).
    pub(super) fn diff_from(&self, base: &str, tree: &TreeSetup) -> Result<Changes, EngineError> {
        // An isolated patch is applied later: a move must stay a move, not a deletion to allow.
        let changes = pitroom_git::diff_trees(&self.git_dir, base, &self.tree, tree.isolated)?;
        if tree.copy.is_some() {
            // The copy's own index was written while its files were checked out, so git sees
            // every entry as racily clean and re-hashes them all; the fresh index of this
            // snapshot makes the next check a stat walk.
            // Without it the next check re-hashes every file: slower, never wrong.
            if let Err(e) = std::fs::rename(&self.index, &self.seed) {
                tracing::info!("could not keep the snapshot index as the copy's seed: {e}");
            }
        }
        Ok(changes)
    }
}

/// Takes the "after" snapshot and diff into the record: the after tree, `changes.patch`, the
/// changed files, the ones the events never mentioned, and a read copy's violation.
pub(super) fn capture_changes(
    record: &mut RunRecord,
    run_dir: &Path,
    tree: &TreeSetup,
    stream: &Stream,
) -> Result<(), EngineError> {
    let Some(base) = record.base_tree.clone() else {
        return Ok(());
    };
    let (after, ignored) = std::thread::scope(|scope| {
        // The ignored files are listed while the tree is staged: two scans at once.
        let ignored = scope.spawn(|| ignored_after(tree));
        let after = snapshot_after(&record.spec.link, run_dir, tree, Some(&base));
        let ignored = ignored
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (after, ignored)
    });
    note_ignored_changes(record, tree, ignored?.as_ref());
    let Some(after) = after? else {
        return Ok(());
    };
    note_secret_changes(record, tree, &after.secrets);
    record.after_tree = Some(after.tree.clone());
    note_unstaged(record, &after.unstaged);
    let changes = after.diff_from(&base, tree)?;
    if changes.is_empty() {
        // Taken again after --verify: a patch of the first take must not outlive it.
        record.changes.clear();
        record.unreported.clear();
        crate::log::remove_file(&run_dir.join("changes.patch"), "a superseded patch");
        return Ok(());
    }
    std::fs::write(run_dir.join("changes.patch"), &changes.patch)
        .map_err(io("writing changes.patch"))?;
    record.changes = changed_files(&changes);
    record.unreported = unreported(&record.changes, &stream.edited, &after.work_tree);
    if let (Some(copy), false) = (&tree.copy, tree.isolated) {
        // Whatever the events claim, the tree says the worker wrote. The shared copy is
        // spoiled for other runs: it leaves its tree's name at once (so no run leases it) and
        // is removed; the next run builds a clean one.
        record.read_only_violation = true;
        pitroom_git::retire_read_copy(copy);
    }
    Ok(())
}

/// Compares a write run's ignored files with how they were before it, into the record and a
/// warning: git stages none of them, so no patch or revert covers what changed there.
fn note_ignored_changes(
    record: &mut RunRecord,
    tree: &TreeSetup,
    after: Option<&pitroom_git::FileStamps>,
) {
    let (Some(before), Some(after)) = (&tree.ignored_before, after) else {
        return;
    };
    record.ignored_changes = before.changed_in(after);
    record
        .warnings
        .retain(|w| !w.starts_with(IGNORED_CHANGES_NOTE));
    if !record.ignored_changes.is_empty() {
        let shown: Vec<&str> = record
            .ignored_changes
            .iter()
            .take(5)
            .map(String::as_str)
            .collect();
        record.warnings.push(format!(
            "{IGNORED_CHANGES_NOTE} {} ignored file(s), which no patch or revert covers: {}{}",
            record.ignored_changes.len(),
            shown.join(", "),
            if record.ignored_changes.len() > 5 {
                ", …"
            } else {
                ""
            }
        ));
    }
}

/// A write run's ignored files after the worker, when they were listed before it.
fn ignored_after(tree: &TreeSetup) -> Result<Option<pitroom_git::FileStamps>, EngineError> {
    let (Some(_), Some(repo)) = (&tree.ignored_before, &tree.repo) else {
        return Ok(None);
    };
    Ok(pitroom_git::FileStamps::ignored(
        &repo.git_dir,
        &repo.toplevel,
        super::tree::MAX_IGNORED,
    )?)
}

/// How the warning on changed secret files begins.
const SECRET_CHANGES_NOTE: &str = "the worker changed secret-looking file(s)";

/// Compares a write run's secret-looking files with how they were before it (no snapshot
/// stages them, so no patch or revert covers them), into the record and a warning.
fn note_secret_changes(record: &mut RunRecord, tree: &TreeSetup, secrets: &[String]) {
    let (Some((_, before)), Some(repo)) = (&tree.secrets_before, &tree.repo) else {
        return;
    };
    let after = pitroom_git::FileStamps::of(&repo.toplevel, secrets);
    record.secret_changes = before.changed_in(&after);
    record
        .warnings
        .retain(|w| !w.starts_with(SECRET_CHANGES_NOTE));
    if !record.secret_changes.is_empty() {
        record.warnings.push(format!(
            "{SECRET_CHANGES_NOTE}, which Pitroom never stages (their contents stay out of git's object store), so no patch or revert covers them: {}",
            record.secret_changes.join(", ")
        ));
    }
}

/// How the warning on paths the snapshot could not hold begins.
const UNSTAGED_NOTE: &str = "git could not record";

/// Warns of the paths git could not stage into a snapshot (a nested repository with no commit,
/// an unreadable file): no patch holds them and `revert` cannot undo them.
pub(super) fn note_unstaged(record: &mut RunRecord, unstaged: &[String]) {
    record.warnings.retain(|w| !w.starts_with(UNSTAGED_NOTE));
    if unstaged.is_empty() {
        return;
    }
    let shown: Vec<&str> = unstaged.iter().take(5).map(String::as_str).collect();
    record.warnings.push(format!(
        "{UNSTAGED_NOTE} {} path(s), which no patch or revert covers (a nested repository with no commit, an unreadable file): {}{}",
        unstaged.len(),
        shown.join(", "),
        if unstaged.len() > 5 { ", …" } else { "" }
    ));
}

/// How the warning on changed ignored files begins (taken again after `--verify`, it replaces
/// the first).
const IGNORED_CHANGES_NOTE: &str = "the worker changed";

/// The diff's files as the record lists them.
fn changed_files(changes: &Changes) -> Vec<ChangedFile> {
    changes
        .files
        .iter()
        .map(|f| ChangedFile {
            status: f.status.letter(),
            path: f.path.clone(),
            old_path: f.old_path.clone(),
            added: f.added,
            deleted: f.deleted,
        })
        .collect()
}

/// The changed files no tool call reported editing (`edited` holds the paths the events gave,
/// absolute or relative to `work_tree`): edits a worker made behind its tools' backs.
pub(super) fn unreported(
    changes: &[ChangedFile],
    edited: &[String],
    work_tree: &Path,
) -> Vec<String> {
    let reported: Vec<String> = edited.iter().map(|p| relative_to(p, work_tree)).collect();
    changes
        .iter()
        .map(|c| c.path.clone())
        .filter(|p| !reported.contains(p))
        .collect()
}
