//! What a worker (and its `--verify` check) must not read, added to its sandbox: the user's
//! session sockets, a read run's credentials in HOME, Pitroom's state dir but for the run's
//! own parts, and the credentials in the repository's remote URLs.

use std::path::{Path, PathBuf};

use pitroom_proc::SandboxSpec;
use pitroom_workers::Mode;

use super::tree::TreeSetup;
use super::Engine;

/// The repository config with its credentials taken out, in the run dir.
const CLEAN_GIT_CONFIG: &str = "git-config";

impl Engine {
    /// `spec` with the user's session sockets masked (and in a read run the credentials in
    /// the user's home too), Pitroom's state dir hidden but for this run's own parts, and
    /// the repository's config covered by one without credentials. The empty file and dir
    /// that mask paths, and the clean config, are made in `run_dir`; what cannot be made
    /// leaves that part out (and the report shows it did not hold).
    pub(super) fn confidential(
        &self,
        mode: Mode,
        run_dir: &Path,
        tree: &TreeSetup,
        spec: SandboxSpec,
    ) -> SandboxSpec {
        let env = |name: &str| self.env_var(name);
        let mut masked = crate::secrets::session_sockets(&env, nix::unistd::getuid().as_raw());
        let home = self.env_var("HOME").map(PathBuf::from);
        if mode == Mode::Read {
            if let Some(home) = &home {
                masked.extend(crate::secrets::credential_paths(home));
            }
        }
        let mut spec = match blanks(run_dir) {
            Ok((file, dir)) => spec.masking(masked, file, dir),
            Err(e) => {
                tracing::warn!("could not make the empty file and dir that mask paths: {e}");
                spec
            }
        };
        if let Some(cover) = clean_git_config(tree, run_dir) {
            spec = spec.covering(vec![cover]);
        }
        let state = &self.home.root;
        if home.as_deref().is_some_and(|h| h.starts_with(state)) {
            // A state dir that holds the user's home (PITROOM_HOME=~) cannot be hidden
            // without hiding the home the worker's CLI lives in.
            return spec;
        }
        spec.hiding_state(state, &kept_state(&self.home.root, run_dir, tree))
    }
}

/// What a worker keeps of the state dir beyond the paths its rules name: its run dir, the
/// tree it works in (a copy lives there), and the guard's links, which its `PATH` and git's
/// hooks path lead to.
fn kept_state(state: &Path, run_dir: &Path, tree: &TreeSetup) -> Vec<PathBuf> {
    let links = crate::guard_env::link_dirs(state);
    let mut kept = vec![run_dir.to_path_buf(), tree.workdir.clone()];
    kept.extend(tree.copy.clone());
    kept.extend(links);
    if let Some(repo) = &tree.repo {
        kept.extend([
            repo.toplevel.clone(),
            repo.git_dir.clone(),
            repo.common_dir.clone(),
        ]);
    }
    kept
}

/// The user's repository config without the credentials of its remotes, written to
/// `run_dir`, paired with the config it covers; `None` when it holds no credential (or there
/// is no repository: a copy's config is Pitroom's and has no remote).
fn clean_git_config(tree: &TreeSetup, run_dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let repo = tree.repo.as_ref()?;
    let config = repo.common_dir.join("config");
    let text = std::fs::read_to_string(&config).ok()?;
    let clean = crate::secrets::git_config_without_credentials(&text)?;
    let path = run_dir.join(CLEAN_GIT_CONFIG);
    match write_read_only(&path, clean.as_bytes()) {
        Ok(()) => Some((path, config)),
        Err(e) => {
            tracing::warn!(
                "could not write the repository config without credentials to {}: {e}",
                path.display()
            );
            None
        }
    }
}

/// Writes `bytes` to `path` (replacing an earlier attempt's file) and makes it read-only.
fn write_read_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::write(path, bytes)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444))
}

/// The empty read-only file and directory, in the run dir, that hidden and masked paths are
/// covered with.
fn blanks(run_dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let (file, dir) = (run_dir.join("blank"), run_dir.join("blank.d"));
    if !file.exists() {
        std::fs::write(&file, b"")?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444))?;
    }
    if !dir.exists() {
        std::fs::create_dir(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555))?;
    }
    Ok((file, dir))
}
