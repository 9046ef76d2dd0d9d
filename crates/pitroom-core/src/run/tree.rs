//! Prepare the tree: the directory the worker runs in (a leased read copy, an isolated copy,
//! or the user's own tree) and the "before" snapshot its changes are measured against.

use std::path::{Path, PathBuf};

use pitroom_git::Repo;
use pitroom_workers::{Mode, StateDirs};

use super::{io, Engine, EngineError};
use crate::record::RunRecord;

/// Where an attempt's worker runs, and what its tree is a copy of.
pub(super) struct TreeSetup {
    pub(super) workdir: PathBuf,
    pub(super) repo: Option<Repo>,
    /// The copy the worker runs in (a read copy, or an isolated copy).
    pub(super) copy: Option<PathBuf>,
    pub(super) isolated: bool,
    /// Keeps a read copy from being recycled or pruned while the run uses it.
    _lease: Option<pitroom_git::CopyLease>,
}

impl TreeSetup {
    fn in_place(dir: PathBuf, repo: Option<Repo>) -> TreeSetup {
        TreeSetup {
            workdir: dir,
            repo,
            copy: None,
            isolated: false,
            _lease: None,
        }
    }

    /// The worker runs in the same sub-directory of `copy` that the user asked for.
    fn in_copy(
        copy: PathBuf,
        relative: &Path,
        repo: Repo,
        isolated: bool,
    ) -> Result<TreeSetup, EngineError> {
        let workdir = if relative.as_os_str().is_empty() {
            copy.clone()
        } else {
            copy.join(relative)
        };
        if !workdir.is_dir() {
            std::fs::create_dir_all(&workdir).map_err(io("creating the work dir in the copy"))?;
        }
        Ok(TreeSetup {
            workdir,
            repo: Some(repo),
            copy: Some(copy),
            isolated,
            _lease: None,
        })
    }
}

impl Engine {
    /// Picks the directory the worker runs in and takes the "before" snapshot.
    pub(super) fn prepare_tree(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        parent: Option<&RunRecord>,
    ) -> Result<TreeSetup, EngineError> {
        let dir = record.spec.dir.clone();
        let Some(repo) = Repo::discover(&dir)? else {
            record.workdir = Some(dir.clone());
            return Ok(TreeSetup::in_place(dir, None));
        };
        let relative = dir
            .strip_prefix(&repo.toplevel)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let base_index = run_dir.join("base.index");
        match record.spec.mode {
            Mode::Read => {
                // A follow-up reads the very same state as the run it continues.
                let base = match parent.and_then(|p| p.base_tree.clone()) {
                    Some(tree) => tree,
                    None => self.read_snapshot(record, &repo, &base_index)?,
                };
                let lease = pitroom_git::ensure_read_copy(&repo, &base, &self.home.snapshots())?;
                let copy = lease.dir.clone();
                record.base_tree = Some(base);
                let mut setup = TreeSetup::in_copy(copy, &relative, repo, false)?;
                setup._lease = Some(lease);
                record.copy = setup.copy.clone();
                record.workdir = Some(setup.workdir.clone());
                Ok(setup)
            }
            Mode::Isolate => {
                let (base, copy) = match parent {
                    // A follow-up works on in the same copy; the patch accumulates.
                    Some(p) => {
                        let copy = p.copy.clone().filter(|c| c.join(".git").is_dir()).ok_or_else(|| {
                            EngineError::Refused(format!(
                                "the isolated copy of run {} is gone (applied or discarded); start a new run",
                                p.id
                            ))
                        })?;
                        (p.base_tree.clone().unwrap_or_default(), copy)
                    }
                    None => {
                        let base = pitroom_git::snapshot(
                            &repo.git_dir,
                            &repo.toplevel,
                            &repo.index,
                            &base_index,
                        )?
                        .tree;
                        let copy = self.home.copies().join(&record.id);
                        pitroom_git::build_copy(&repo, &base, &copy)?;
                        link_paths(record, &repo.toplevel, &copy);
                        (base, copy)
                    }
                };
                record.base_tree = Some(base);
                let setup = TreeSetup::in_copy(copy, &relative, repo, true)?;
                record.copy = setup.copy.clone();
                record.workdir = Some(setup.workdir.clone());
                Ok(setup)
            }
            Mode::Write => {
                let base =
                    pitroom_git::snapshot(&repo.git_dir, &repo.toplevel, &repo.index, &base_index)?;
                record.base_tree = Some(base.tree);
                record.workdir = Some(dir.clone());
                Ok(TreeSetup::in_place(dir, Some(repo)))
            }
        }
    }

    /// The "before" snapshot of a read run: the user's current state minus secret-looking files,
    /// which never reach the read copy.
    fn read_snapshot(
        &self,
        record: &mut RunRecord,
        repo: &Repo,
        index: &Path,
    ) -> Result<String, EngineError> {
        let is_secret = |p: &str| crate::secrets::is_secret_path(p);
        let options = pitroom_git::SnapshotOptions {
            exclude: &[],
            drop: Some(&is_secret),
        };
        let snap = pitroom_git::snapshot_with(
            &repo.git_dir,
            &repo.toplevel,
            &repo.index,
            index,
            &options,
        )?;
        if !snap.dropped.is_empty() {
            let shown: Vec<&str> = snap.dropped.iter().take(5).map(String::as_str).collect();
            record.warnings.push(format!(
                "{} secret-looking file(s) kept out of the worker's copy: {}{}",
                snap.dropped.len(),
                shown.join(", "),
                if snap.dropped.len() > 5 { ", …" } else { "" }
            ));
        }
        Ok(snap.tree)
    }
}

/// Makes `--link`ed paths (ignored dependency or build folders) available in an isolated copy
/// as copies of their own — copy-on-write where the file system can (`cp --reflink=auto`) — so
/// the worker can never write into the user's originals.
fn link_paths(record: &mut RunRecord, top: &Path, copy: &Path) {
    for rel in record.spec.link.clone() {
        let source = top.join(&rel);
        let dest = copy.join(&rel);
        if !source.exists() {
            record
                .warnings
                .push(format!("--link {rel}: not found in the project; skipped"));
            continue;
        }
        if dest.exists() {
            record.warnings.push(format!(
                "--link {rel}: tracked by git, so the copy has it already"
            ));
            continue;
        }
        if let Some(parent) = dest.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let copied = std::process::Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(&source)
            .arg(&dest)
            .stdin(std::process::Stdio::null())
            .output();
        match copied {
            Ok(out) if out.status.success() => {}
            Ok(out) => record.warnings.push(format!(
                "--link {rel}: copy failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => record
                .warnings
                .push(format!("--link {rel}: could not run cp: {e}")),
        }
    }
}

/// Creates the CLI's private state directories and its links to the user's credential files
/// (best effort: a missing link surfaces as the CLI's own error).
pub(super) fn prepare_dirs(dirs: &StateDirs, links: &[(PathBuf, PathBuf)]) {
    for sub in ["data", "config", "cache"] {
        let _ = std::fs::create_dir_all(dirs.shared.join(sub));
    }
    for sub in ["state", "tmp"] {
        let _ = std::fs::create_dir_all(dirs.scratch.join(sub));
    }
    for (link, target) in links {
        if let Some(parent) = link.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if std::fs::read_link(link).ok().as_deref() != Some(target.as_path()) {
            let _ = std::fs::remove_file(link);
            let _ = std::os::unix::fs::symlink(target, link);
        }
    }
}
