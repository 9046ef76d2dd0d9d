//! Prepare the tree: the directory the worker runs in (for a read run the live tree in place,
//! else a leased read copy; an isolated copy; or the user's own tree) and the "before" snapshot
//! its changes are measured against (none for a read run in place: it cannot write).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use pitroom_git::Repo;
use pitroom_proc::private_dir::PrivateDir;
use pitroom_workers::{Mode, StateDirs};

use super::{changes, io, Engine, EngineError};
use crate::record::{ReadView, RunRecord};

/// Where an attempt's worker runs, and what its tree is a copy of.
pub(super) struct TreeSetup {
    pub(super) workdir: PathBuf,
    pub(super) repo: Option<Repo>,
    /// The copy the worker runs in (a read copy, or an isolated copy).
    pub(super) copy: Option<PathBuf>,
    pub(super) isolated: bool,
    /// A read run on the live tree (no copy): what its sandbox hides and binds over it.
    pub(super) in_place: Option<InPlace>,
    /// A write run's ignored files as they were before the worker, to report what it changed
    /// there (no snapshot stages them). `None` for other runs, or past the limit.
    pub(super) ignored_before: Option<pitroom_git::FileStamps>,
    /// A write run's secret-looking files, which no snapshot stages, and their stamps before the
    /// worker, to report what it changed there.
    pub(super) secrets_before: Option<(Vec<String>, pitroom_git::FileStamps)>,
    /// Keeps a read copy from being recycled or pruned while the run uses it.
    _lease: Option<pitroom_git::CopyLease>,
}

/// More ignored files than this and a write run does not compare them (the record says so).
pub(super) const MAX_IGNORED: usize = 200_000;

/// A read run in place: the worker reads the live project, read-only under Landlock, with an
/// empty file bound over each secret-looking file in its private mount namespace.
pub(super) struct InPlace {
    pub(super) hidden: Vec<PathBuf>,
    /// The empty, read-only file in the run dir bound over each hidden file.
    pub(super) blank: PathBuf,
}

/// More secret-looking files than this and a tree is read through a copy instead: each costs
/// two mounts in the worker's namespace.
const MAX_HIDDEN: usize = crate::secrets::MAX_SECRET_FILES;

/// What decides whether a read run may read the live tree in place.
pub(super) struct ViewFacts {
    /// `PITROOM_READ_VIEW` as the caller set it.
    pub(super) forced: Option<String>,
    /// A CLI of the run's chain that keeps its own sandbox (so is not Landlocked).
    pub(super) own_sandbox: Option<String>,
    pub(super) landlock_off: bool,
    /// `PITROOM_PORTABLE`: no Landlock and no private mount namespace, as off Linux.
    pub(super) portable: bool,
    /// The kernel's Landlock ABI (3 is the first to refuse truncation).
    pub(super) abi: Option<i32>,
    /// A private mount namespace can be made (to hide secret-looking files).
    pub(super) can_mount: bool,
    /// The run continues one that read a copy: it reads that same state.
    pub(super) parent_read_a_copy: bool,
}

/// Why a read run must read a copy rather than the live tree; `None` when it may read in
/// place. The first reason that applies is the one named.
pub(super) fn copy_needed(f: &ViewFacts) -> Option<String> {
    if f.forced.as_deref() == Some("copy") {
        return Some(format!("asked for with {}=copy", super::READ_VIEW_ENV));
    }
    if f.parent_read_a_copy {
        return Some("it continues a run that read a copy, and reads the same state".into());
    }
    if let Some(cli) = &f.own_sandbox {
        return Some(format!(
            "{cli} keeps its own sandbox, so it cannot be Landlocked"
        ));
    }
    if f.portable {
        return Some(format!(
            "Landlock and mount namespaces are turned off by {}",
            pitroom_proc::PORTABLE_ENV
        ));
    }
    if f.landlock_off {
        return Some(format!("Landlock is off ({}=off)", super::LANDLOCK_ENV));
    }
    match f.abi {
        None => return Some("the kernel has no Landlock".into()),
        Some(abi) if abi < 3 => {
            return Some(format!(
                "the kernel's Landlock ABI {abi} cannot refuse truncation (needs 3)"
            ))
        }
        Some(_) => {}
    }
    if !f.can_mount {
        return Some(
            "no private mount namespace (needs CAP_SYS_ADMIN) to hide secret-looking files".into(),
        );
    }
    None
}

impl TreeSetup {
    fn in_place(dir: PathBuf, repo: Option<Repo>) -> TreeSetup {
        TreeSetup {
            workdir: dir,
            repo,
            copy: None,
            isolated: false,
            in_place: None,
            ignored_before: None,
            secrets_before: None,
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
            in_place: None,
            ignored_before: None,
            secrets_before: None,
            _lease: None,
        })
    }
}

impl Engine {
    /// Picks the directory the worker runs in and takes the "before" snapshot. `known` is the
    /// repository found when the run was prepared, if this process found it.
    pub(super) fn prepare_tree(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        parent: Option<&RunRecord>,
        known: Option<Repo>,
    ) -> Result<TreeSetup, EngineError> {
        let dir = record.spec.dir.clone();
        let repo = match known {
            Some(repo) => Some(repo),
            None => Repo::discover(&dir)?,
        };
        let Some(repo) = repo else {
            record.workdir = Some(dir.clone());
            if record.spec.mode == Mode::Read {
                record.view = Some(ReadView::InPlace);
                record.view_reason = Some("not a git repository: there is no state to copy".into());
            }
            return Ok(TreeSetup::in_place(dir, None));
        };
        let relative = dir
            .strip_prefix(&repo.toplevel)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let base_index = run_dir.join("base.index");
        match record.spec.mode {
            Mode::Read => {
                let reason = match copy_needed(&self.view_facts(record, parent)) {
                    Some(why) => why,
                    None => {
                        let hidden = crate::secrets::secret_files_under(&repo.toplevel, MAX_HIDDEN);
                        if hidden.len() <= MAX_HIDDEN {
                            return self.read_in_place(record, run_dir, &dir, repo, hidden);
                        }
                        format!("more than {MAX_HIDDEN} secret-looking files to hide")
                    }
                };
                record.view = Some(ReadView::Copy);
                record.view_reason = Some(reason);
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
                        // Secret files stay out of the copy and of the user's object store.
                        let base = pitroom_git::snapshot_excluding(
                            &repo.git_dir,
                            &repo.toplevel,
                            &repo.index,
                            &base_index,
                            &crate::secrets::stageable_secrets(&repo),
                        )?
                        .tree;
                        let copy =
                            build_isolated_copy(&repo, &base, &self.home.copies(), &record.id)?;
                        link_paths(record, &repo.toplevel, &copy)?;
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
                // Secret files are never staged (their contents would enter the user's object
                // store); what the worker does to them is compared by stamp instead.
                let (base, ignored) = std::thread::scope(|scope| {
                    // The ignored files are listed while the tree is staged: two scans at once.
                    let ignored = scope.spawn(|| {
                        pitroom_git::FileStamps::ignored(&repo.git_dir, &repo.toplevel, MAX_IGNORED)
                    });
                    let base = crate::secrets::stageable_secrets(&repo);
                    let snapshot = pitroom_git::snapshot_excluding(
                        &repo.git_dir,
                        &repo.toplevel,
                        &repo.index,
                        &base_index,
                        &base,
                    );
                    let ignored = ignored
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (snapshot.map(|s| (s, base)), ignored)
                });
                let (base, secrets) = base?;
                let ignored = ignored?;
                changes::note_unstaged(record, &base.unstaged);
                record.base_tree = Some(base.tree);
                let secrets_before = pitroom_git::FileStamps::of(&repo.toplevel, &secrets);
                record.workdir = Some(dir.clone());
                if ignored.is_none() {
                    record.warnings.push(format!(
                        "more than {MAX_IGNORED} ignored files: changes the worker makes to them are not checked"
                    ));
                }
                let mut setup = TreeSetup::in_place(dir, Some(repo));
                setup.ignored_before = ignored;
                setup.secrets_before = Some((secrets, secrets_before));
                Ok(setup)
            }
        }
    }

    /// What decides a read run's view, gathered from the run, its chain and this machine.
    fn view_facts(&self, record: &RunRecord, parent: Option<&RunRecord>) -> ViewFacts {
        let own_sandbox = super::fallback::fallback_chain(&record.spec)
            .into_iter()
            .map(|target| target.backend)
            .find(|backend| {
                self.adapter_for_spec(&record.spec, backend)
                    .is_ok_and(|a| a.has_own_sandbox())
            });
        ViewFacts {
            forced: self.env_var(super::READ_VIEW_ENV),
            own_sandbox,
            landlock_off: self.env_var(super::LANDLOCK_ENV).as_deref() == Some("off"),
            portable: self.portable(),
            abi: pitroom_proc::kernel_abi(),
            can_mount: pitroom_proc::landlock::can_protect_git_dir_with_mount(),
            parent_read_a_copy: parent
                .is_some_and(|p| p.view != Some(ReadView::InPlace) && p.base_tree.is_some()),
        }
    }

    /// The live tree, read in place: no copy and no snapshot. The sandbox hides each of
    /// `hidden` (the secret-looking files the worker could open) behind an empty file written
    /// here, in the run dir, where the worker may not write.
    fn read_in_place(
        &self,
        record: &mut RunRecord,
        run_dir: &Path,
        dir: &Path,
        repo: Repo,
        hidden: Vec<PathBuf>,
    ) -> Result<TreeSetup, EngineError> {
        let blank = run_dir.join("blank");
        std::fs::write(&blank, b"").map_err(io("writing the empty file that hides secrets"))?;
        std::fs::set_permissions(&blank, std::fs::Permissions::from_mode(0o444))
            .map_err(io("making the empty file read-only"))?;
        if !hidden.is_empty() {
            let shown: Vec<String> = hidden
                .iter()
                .take(5)
                .map(|p| super::paths::relative_to(&p.display().to_string(), &repo.toplevel))
                .collect();
            record.warnings.push(format!(
                "{} secret-looking file(s) hidden from the worker (an empty file in their place): {}{}",
                hidden.len(),
                shown.join(", "),
                if hidden.len() > 5 { ", …" } else { "" }
            ));
        }
        record.view = Some(ReadView::InPlace);
        record.workdir = Some(dir.to_path_buf());
        let mut setup = TreeSetup::in_place(dir.to_path_buf(), Some(repo));
        setup.in_place = Some(InPlace { hidden, blank });
        Ok(setup)
    }

    /// The "before" snapshot of a read run: the user's current state minus secret-looking files,
    /// which never reach the read copy.
    fn read_snapshot(
        &self,
        record: &mut RunRecord,
        repo: &Repo,
        index: &Path,
    ) -> Result<String, EngineError> {
        let snap = crate::secrets::snapshot_without_secrets(repo, index)?;
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

/// Builds the isolated copy of `base` for run `id` under `copies`: in a `.tmp-` directory first,
/// renamed into place once complete, so a stop (or any failure) part-way leaves nothing behind
/// that a later step could take for a copy — the half-built directory is removed.
fn build_isolated_copy(
    repo: &Repo,
    base: &str,
    copies: &Path,
    id: &str,
) -> Result<PathBuf, EngineError> {
    let building = copies.join(format!(".tmp-{id}"));
    let copy = copies.join(id);
    let built = pitroom_git::build_copy(repo, base, &building)
        .and_then(|()| std::fs::rename(&building, &copy).map_err(pitroom_git::GitError::Io));
    if let Err(e) = built {
        // Best effort: a leftover `.tmp-` directory is pruned later, and never used.
        crate::log::remove_dir(&building, "the half-built isolated copy");
        return Err(e.into());
    }
    Ok(copy)
}

/// Makes `--link`ed paths (ignored dependency or build folders) available in an isolated copy
/// as copies of their own — copy-on-write where the file system can (`cp --reflink=auto`) — so
/// the worker can never write into the user's originals. A copy that fails is a warning; a
/// stop part-way is an error (the run ends there).
fn link_paths(record: &mut RunRecord, top: &Path, copy: &Path) -> Result<(), EngineError> {
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
        // A parent that cannot be made makes `cp` fail below, with its own words.
        if let Some(parent) = dest.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                tracing::info!("--link {rel}: could not create {}: {e}", parent.display());
            }
        }
        match copy_linked(&source, &dest, &rel) {
            Ok(out) if out.code == 0 => {}
            Ok(out) => record
                .warnings
                .push(format!("--link {rel}: copy failed: {}", out.stderr.trim())),
            Err(e @ pitroom_git::GitError::Interrupted { .. }) => return Err(e.into()),
            Err(e) => record
                .warnings
                .push(format!("--link {rel}: could not run cp: {e}")),
        }
    }
    Ok(())
}

/// `cp -a` of one `--link` path, cloned where the file system can: `--reflink=auto` on Linux
/// (GNU cp falls back to a copy by itself); `-c` (`clonefile`) on macOS, whose cp does not fall
/// back, so a failed clone is copied again plainly. In its own process group and watched, like
/// git: a stop ends a big copy at once.
fn copy_linked(
    source: &Path,
    dest: &Path,
    rel: &str,
) -> Result<pitroom_git::Output, pitroom_git::GitError> {
    let what = format!("cp -a {rel}");
    let attempt = |flags: &[&str]| {
        let mut cp = std::process::Command::new("cp");
        cp.args(flags).arg(source).arg(dest);
        pitroom_git::output_of(&mut cp, &what, None)
    };
    if cfg!(target_os = "macos") {
        match attempt(&["-a", "-c"]) {
            Ok(out) if out.code != 0 => attempt(&["-a"]),
            done => done,
        }
    } else {
        attempt(&["-a", "--reflink=auto"])
    }
}

/// Creates the CLI's private state directories and its links to the user's credential files
/// (best effort: a missing link surfaces as the CLI's own error, and the run log says why).
/// Every one is reached without following a link: a worker may have replaced any of them.
pub(super) fn prepare_dirs(dirs: &StateDirs, links: &[(PathBuf, PathBuf)]) {
    let made = ["data", "config", "cache"]
        .map(|sub| dirs.shared.join(sub))
        .into_iter()
        .chain(["state", "tmp"].map(|sub| dirs.scratch.join(sub)));
    for dir in made {
        if let Err(e) = private_dir(dirs, &dir) {
            tracing::warn!(
                "could not create the worker's state dir {}: {e}",
                dir.display()
            );
        }
    }
    for (link, target) in links {
        if let Err(e) = credential_link(dirs, link, target) {
            tracing::warn!(
                "could not link {} to {}: {e}; the worker may not find its login",
                link.display(),
                target.display()
            );
        }
    }
}

/// Opens `dir` — the CLI's shared state dir, the run's scratch dir, or a dir beneath either —
/// as a plain directory reached from the dir above them (which no worker may write) without
/// following a link, replacing whatever a worker left there that is not a plain directory.
pub(super) fn private_dir(dirs: &StateDirs, dir: &Path) -> std::io::Result<PrivateDir> {
    let root = [&dirs.shared, &dirs.scratch]
        .into_iter()
        .find(|root| dir.starts_with(root))
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} lies outside the worker's private dirs ({} and {})",
                    dir.display(),
                    dirs.shared.display(),
                    dirs.scratch.display()
                ),
            )
        })?;
    let anchor = root.parent().unwrap_or(root);
    pitroom_proc::private_dir::open_beneath(anchor, dir)
}

/// Points `link` at `target` (the user's credential file), replacing an older link.
fn credential_link(dirs: &StateDirs, link: &Path, target: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (link.parent(), link.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", link.display()),
        ));
    };
    private_dir(dirs, parent)?.symlink(name, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> ViewFacts {
        ViewFacts {
            forced: None,
            own_sandbox: None,
            landlock_off: false,
            portable: false,
            abi: Some(3),
            can_mount: true,
            parent_read_a_copy: false,
        }
    }

    #[test]
    fn a_read_run_reads_in_place_only_where_landlock_and_a_mount_namespace_hold() {
        assert_eq!(copy_needed(&allowed()), None);
        assert_eq!(
            copy_needed(&ViewFacts {
                forced: Some("auto".into()),
                ..allowed()
            }),
            None
        );
        // Each fact alone that makes a copy needed, and what the reason says.
        let needs_a_copy = [
            (
                ViewFacts {
                    forced: Some("copy".into()),
                    ..allowed()
                },
                "PITROOM_READ_VIEW=copy",
            ),
            (
                ViewFacts {
                    own_sandbox: Some("codex".into()),
                    ..allowed()
                },
                "codex keeps its own sandbox",
            ),
            (
                ViewFacts {
                    landlock_off: true,
                    ..allowed()
                },
                "PITROOM_LANDLOCK=off",
            ),
            (
                ViewFacts {
                    portable: true,
                    ..allowed()
                },
                "turned off by PITROOM_PORTABLE",
            ),
            (
                ViewFacts {
                    abi: None,
                    ..allowed()
                },
                "no Landlock",
            ),
            (
                ViewFacts {
                    abi: Some(2),
                    ..allowed()
                },
                "ABI 2",
            ),
            (
                ViewFacts {
                    can_mount: false,
                    ..allowed()
                },
                "mount namespace",
            ),
            (
                ViewFacts {
                    parent_read_a_copy: true,
                    ..allowed()
                },
                "continues a run that read a copy",
            ),
        ];
        for (facts, reason) in needs_a_copy {
            let why = copy_needed(&facts);
            assert!(
                why.as_deref().is_some_and(|w| w.contains(reason)),
                "{reason}: {why:?}"
            );
        }
    }
}
