//! Layer 3 of the safety floor: the worker's whole process tree may write only beneath the
//! directories its run allows (its scratch dir, the CLI's private state dirs, and for edit runs
//! the work tree), plus `/dev/null`. Everything else stays readable and executable but not
//! writable — including the repository's `.git`.
//!
//! Two mechanisms, applied by the keeper to itself right before it starts the worker (the
//! worker and everything it spawns inherit both):
//!
//! - **Landlock** (Linux 5.13+), through the `landlock` crate: a ruleset that handles the
//!   twelve write rights of ABI 3 (`WRITE_FILE`, `TRUNCATE`, `REFER`, every `MAKE_*` and
//!   `REMOVE_*`) and grants them only beneath the allowed paths. Reads and execution are not
//!   handled, so they work everywhere. `IOCTL_DEV` is left unhandled on purpose: terminals and
//!   `/dev/null` need ioctls, and it guards no file content.
//! - A **read-only bind mount** of each git dir that lies inside a writable tree, in a private
//!   mount namespace of the keeper. Landlock rules cover whole hierarchies, so "the tree is
//!   writable but its `.git` is not" cannot be said with Landlock alone (measured in
//!   `spec/workers/sandbox.md`); the bind mount says it. It needs `CAP_SYS_ADMIN`; without it
//!   the git dir stays writable to plain file operations and only layers 1–2 guard git itself.
//!   A Landlocked process cannot unmount, remount or leave the namespace, so it cannot undo the
//!   bind.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a worker may write. Built by [`SandboxSpec::for_worker`], applied by the keeper.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Directories beneath which every write right is granted.
    pub writable_dirs: Vec<PathBuf>,
    /// Single files that may be written and truncated, never created or removed (`/dev/null`,
    /// a credentials file a private state dir links to).
    pub writable_files: Vec<PathBuf>,
    /// Paths inside a writable dir that are bind-mounted read-only: git dirs, and the `.git`
    /// file of a linked worktree.
    pub read_only_binds: Vec<PathBuf>,
    /// Files the worker must not read (secret-looking files of a project it reads in place):
    /// in the private mount namespace, [`SandboxSpec::blank_file`] is bound read-only over each.
    pub hidden_files: Vec<PathBuf>,
    /// The empty file bound over each hidden file (it lies outside every writable dir).
    pub blank_file: Option<PathBuf>,
    /// Paths masked whatever the run reads (the user's session sockets; a read run's
    /// credential dirs in HOME): [`SandboxSpec::blank_file`] bound over a file or socket,
    /// [`SandboxSpec::blank_dir`] over a directory. Best effort: the report counts them.
    pub masked: Vec<PathBuf>,
    /// The empty read-only directory bound over each masked directory.
    pub blank_dir: Option<PathBuf>,
    /// Files bound read-only over others, as (replacement, covered): a repository's config
    /// with the credentials of its remote URLs taken out, bound over the real one.
    pub covers: Vec<(PathBuf, PathBuf)>,
    /// Pitroom's state dir (canonical), hidden from the worker behind an empty read-only
    /// tmpfs in the private mount namespace, but for [`SandboxSpec::state_kept`]: other runs'
    /// stored patches, copies and CLI state are none of this worker's business.
    pub state_dir: Option<PathBuf>,
    /// What the worker keeps of the state dir, bound back over the tmpfs: its own run dir,
    /// copy and CLI state, the guard's links (canonical, outermost, beneath `state_dir`).
    pub state_kept: Vec<PathBuf>,
    /// The worker reads the live project in place: it must not start unless Landlock is fully
    /// enforced and every hidden file is covered.
    pub strict: bool,
    /// Where the keeper writes its [`SandboxReport`] as JSON before it starts the worker.
    pub report_file: PathBuf,
}

/// Whether and how far Landlock held for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandlockState {
    /// Every handled write right is enforced.
    Enforced,
    /// The kernel enforces only part of the rights (an older ABI: e.g. no `TRUNCATE` below 3).
    Partial,
    /// Not enforced at all: no Landlock in this kernel, not Linux, or the ruleset failed.
    Unavailable,
    /// Deliberately not applied: the worker CLI keeps its own OS sandbox (Codex).
    Skipped,
}

impl LandlockState {
    pub fn as_str(self) -> &'static str {
        match self {
            LandlockState::Enforced => "enforced",
            LandlockState::Partial => "partial",
            LandlockState::Unavailable => "unavailable",
            LandlockState::Skipped => "skipped",
        }
    }
}

/// How the git dirs of a run were protected from plain file writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GitDirState {
    /// No git dir lies inside a writable dir (read runs; or no repository): Landlock alone keeps
    /// it read-only.
    #[default]
    NotExposed,
    /// Bind-mounted read-only in the worker's mount namespace.
    ReadOnlyMount,
    /// Inside a writable tree and not protected by a mount: plain file operations can change it;
    /// only layers 1–2 (the shim and git's own config) stop git itself.
    Writable,
    /// Inside a writable tree, every write to it denied by the worker's Seatbelt profile
    /// (macOS).
    Seatbelt,
}

/// What the keeper could enforce, as the run record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    pub landlock: LandlockState,
    /// The kernel's Landlock ABI version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abi: Option<i32>,
    /// Why Landlock is not (fully) enforced, or why the git dir stayed writable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub git_dir: GitDirState,
    /// The paths the worker could write beneath.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<PathBuf>,
    /// How many secret-looking files an empty file was bound over (a read run in place).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden: u32,
    /// How many session sockets and credential dirs were masked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub masked: u32,
    /// How many files were covered by a copy with their credentials taken out (a
    /// repository's config whose remote URL holds a token).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub covered: u32,
    /// Whether Pitroom's state dir was hidden but for the run's own parts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_hidden: bool,
    /// Whether the worker was started under a Seatbelt profile rendered from its spec
    /// (`sandbox-exec`, macOS): the profile, not Landlock and mounts, enforces the rules.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seatbelt: bool,
    /// The privileges the worker gave up before it started (capabilities, the seccomp filter).
    #[serde(default)]
    pub hardening: crate::harden::Hardening,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SandboxReport {
    /// The report for a worker that keeps its own sandbox.
    pub fn skipped(reason: &str) -> SandboxReport {
        SandboxReport {
            landlock: LandlockState::Skipped,
            abi: kernel_abi(),
            reason: Some(reason.to_string()),
            git_dir: GitDirState::NotExposed,
            writable: Vec::new(),
            hidden: 0,
            masked: 0,
            covered: 0,
            state_hidden: false,
            seatbelt: false,
            hardening: Default::default(),
        }
    }

    /// The report when the keeper left none (it could not start, or died first).
    pub fn unknown(reason: &str) -> SandboxReport {
        SandboxReport {
            landlock: LandlockState::Unavailable,
            abi: kernel_abi(),
            reason: Some(reason.to_string()),
            git_dir: GitDirState::NotExposed,
            writable: Vec::new(),
            hidden: 0,
            masked: 0,
            covered: 0,
            state_hidden: false,
            seatbelt: false,
            hardening: Default::default(),
        }
    }

    /// Reads the report a keeper wrote to `path`.
    pub fn read(path: &Path) -> Option<SandboxReport> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// What the worker's tree is to the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeAccess<'a> {
    /// Nothing beneath the tree may be written (read runs).
    ReadOnly,
    /// The tree is writable (edit runs); `git_dirs` (dirs, or a worktree's `.git` file) are
    /// kept read-only.
    Writable {
        tree: &'a Path,
        git_dirs: &'a [PathBuf],
    },
}

impl SandboxSpec {
    /// The rules for one worker: `private_dirs` (its scratch dir and the CLI's state dirs) and
    /// `/dev/null` always; the tree only when it is writable, with every git dir beneath a
    /// writable dir bind-mounted read-only. Paths that do not exist are left out.
    ///
    /// A private dir that lies beneath another, *as written*, adds nothing and is dropped
    /// before any link is resolved: a worker may replace what is inside its own dirs (a
    /// `cache` dir by a symlink to `<repo>/.git`), and resolving that link would grant the
    /// next run write on its target. What remains is canonicalised (a rule lands on a
    /// symlink's target anyway, so the record should say where writes really go); those are
    /// dirs no worker can replace, since their parents are not writable to any.
    pub fn for_worker(
        access: TreeAccess<'_>,
        private_dirs: &[PathBuf],
        private_files: &[PathBuf],
        report_file: PathBuf,
    ) -> SandboxSpec {
        let mut dirs: Vec<PathBuf> = outermost(
            private_dirs
                .iter()
                .map(|d| normalize_lexically(d))
                .collect(),
        )
        .iter()
        .filter_map(|d| existing_dir(d))
        .collect();
        let mut binds = Vec::new();
        if let TreeAccess::Writable { tree, git_dirs } = access {
            dirs.extend(existing_dir(tree));
            let exposed: Vec<PathBuf> = git_dirs
                .iter()
                .filter_map(|g| std::fs::canonicalize(g).ok())
                .collect();
            binds = outermost(exposed)
                .into_iter()
                .filter(|g| dirs.iter().any(|d| g.starts_with(d)))
                .collect();
        }
        let mut files = vec![PathBuf::from("/dev/null")];
        files.extend(private_files.iter().filter_map(|f| existing_file(f)));
        files.sort();
        files.dedup();
        SandboxSpec {
            writable_dirs: outermost(dirs),
            writable_files: files,
            read_only_binds: binds,
            report_file,
            ..SandboxSpec::default()
        }
    }

    /// The same rules for a worker that reads the live project in place: `blank` (an empty file
    /// outside every writable dir) is bound over each of `hidden`, and the worker does not start
    /// unless that and Landlock both hold.
    pub fn reading_in_place(mut self, hidden: Vec<PathBuf>, blank: PathBuf) -> SandboxSpec {
        self.hidden_files = hidden;
        self.blank_file = Some(blank);
        self.strict = true;
        self
    }

    /// The same rules with `masked` paths covered: `blank_file` over files and sockets,
    /// `blank_dir` over directories (both empty, read-only, outside every writable dir).
    pub fn masking(
        mut self,
        masked: Vec<PathBuf>,
        blank_file: PathBuf,
        blank_dir: PathBuf,
    ) -> SandboxSpec {
        self.masked = masked;
        self.blank_file.get_or_insert(blank_file);
        self.blank_dir = Some(blank_dir);
        self
    }

    /// The same rules with `replacement` bound read-only over `covered` for each pair.
    pub fn covering(mut self, covers: Vec<(PathBuf, PathBuf)>) -> SandboxSpec {
        self.covers = covers;
        self
    }

    /// The same rules with Pitroom's `state_dir` hidden from the worker but for `kept` and
    /// for every path the rules already name beneath it (writable dirs and files, the blank
    /// file and dir, the report's dir). Both are rebased onto the state dir's canonical path,
    /// which is how the keeper opens them (no link followed beneath it).
    pub fn hiding_state(mut self, state_dir: &Path, kept: &[PathBuf]) -> SandboxSpec {
        let given = normalize_lexically(state_dir);
        let canonical = std::fs::canonicalize(&given).unwrap_or_else(|_| given.clone());
        let named = self
            .writable_dirs
            .iter()
            .chain(&self.writable_files)
            .chain(&self.read_only_binds)
            .chain(&self.blank_file)
            .chain(&self.blank_dir)
            .cloned()
            .chain(self.report_file.parent().map(Path::to_path_buf));
        let beneath: Vec<PathBuf> = kept
            .iter()
            .cloned()
            .chain(named)
            .filter_map(|p| {
                let p = normalize_lexically(&p);
                let rest = p
                    .strip_prefix(&given)
                    .or_else(|_| p.strip_prefix(&canonical))
                    .ok()?;
                (!rest.as_os_str().is_empty()).then(|| canonical.join(rest))
            })
            .collect();
        self.state_kept = outermost(beneath);
        self.state_dir = Some(canonical);
        self
    }

    /// Why a strict (in place) sandbox did not hold as `report` says, or `None` when it did.
    pub fn strict_failure(&self, report: &SandboxReport) -> Option<String> {
        if !self.strict {
            return None;
        }
        if report.landlock != LandlockState::Enforced {
            return Some(format!(
                "Landlock is {} ({}), so the project read in place would be writable",
                report.landlock.as_str(),
                report.reason.as_deref().unwrap_or("no reason given")
            ));
        }
        if !report.hardening.capabilities_dropped {
            return Some(format!(
                "the worker would keep capabilities that reach past the hidden files ({})",
                report
                    .hardening
                    .reason
                    .as_deref()
                    .unwrap_or("no reason given")
            ));
        }
        if (report.hidden as usize) < self.hidden_files.len() {
            return Some(format!(
                "only {} of {} secret-looking files could be hidden ({})",
                report.hidden,
                self.hidden_files.len(),
                report.reason.as_deref().unwrap_or("no reason given")
            ));
        }
        None
    }
}

/// `path` with `.` components dropped and `..` taken lexically, without touching the disk
/// (links left unresolved).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn existing_dir(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().filter(|p| p.is_dir())
}

fn existing_file(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().filter(|p| !p.is_dir())
}

/// Sorted, without duplicates and without paths beneath another path of the list.
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    kept
}

/// The kernel's Landlock ABI version, or `None` when it has no Landlock (or this is not Linux).
pub fn kernel_abi() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: the version query takes no attribute pointer and creates no descriptor.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        (abi > 0).then_some(abi as i32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// How a worker's keeper gets the private mount namespace that keeps `.git` read-only and
/// hides secret files, on this machine for this user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountRoute {
    /// This process holds `CAP_SYS_ADMIN` (root).
    Privileged,
    /// An ordinary user: inside a user namespace of the keeper's own.
    UserNamespace,
    /// Neither: no private mount namespace for workers.
    Unavailable,
}

/// Which [`MountRoute`] workers started from this process get.
pub fn mount_route() -> MountRoute {
    #[cfg(target_os = "linux")]
    {
        if crate::portable() {
            // As on a platform without mount namespaces, even for root.
            MountRoute::Unavailable
        } else if has_cap_sys_admin() {
            MountRoute::Privileged
        } else if std::env::var_os(crate::NO_PID_NAMESPACE_ENV).is_none()
            && crate::contain::user_namespace_mounts_work()
        {
            MountRoute::UserNamespace
        } else {
            MountRoute::Unavailable
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        MountRoute::Unavailable
    }
}

/// Whether a worker's keeper may make a private mount namespace (to bind git dirs read-only
/// and hide secret files): with `CAP_SYS_ADMIN` (root), or — the usual case, an ordinary
/// user — inside a user namespace of its own, where the kernel allows unprivileged ones and
/// the PID namespace is not turned off (the keeper makes both together).
pub fn can_protect_git_dir_with_mount() -> bool {
    #[cfg(target_os = "linux")]
    {
        mount_route() != MountRoute::Unavailable
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether this process holds any effective capability.
pub(crate) fn has_any_capability() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps != 0)
}

#[cfg(target_os = "linux")]
pub(crate) fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Text in a tool result that means a write was refused by the sandbox (or by the file
/// system's permissions): every CLI reports a denied write only inside its tool output, and
/// a denied shell write even inside a "successful" call.
pub fn looks_like_blocked_write(text: &str) -> bool {
    const MARKS: [&str; 5] = [
        "Permission denied",
        "permission denied",
        "Read-only file system",
        "EACCES",
        "PermissionDenied",
    ];
    MARKS.iter().any(|m| text.contains(m))
}

/// Confines the calling thread (and every process it starts from now on) to `spec`. Called
/// by the keeper on its main thread, after it opened everything it still needs to write and
/// before it starts the worker. Never fails the run: what did not hold is in the report.
pub fn enter_sandbox(spec: &SandboxSpec) -> SandboxReport {
    // The engine asks for no sandbox when portable; should a keeper get one all the same, it
    // makes no mount and no ruleset, as where there are none.
    if crate::portable() {
        return SandboxReport::skipped(&format!("turned off by {}", crate::PORTABLE_ENV));
    }
    #[cfg(target_os = "linux")]
    {
        linux::enter(spec)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = spec;
        SandboxReport {
            landlock: LandlockState::Unavailable,
            abi: None,
            reason: Some("Landlock is Linux only".into()),
            git_dir: GitDirState::NotExposed,
            writable: Vec::new(),
            hidden: 0,
            masked: 0,
            covered: 0,
            state_hidden: false,
            seatbelt: false,
            hardening: Default::default(),
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::private_mount_namespace;

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};

    use ::landlock::{
        AccessFs, LandlockStatus, PathBeneath, RestrictionStatus, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, ABI,
    };
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};

    use super::{kernel_abi, GitDirState, LandlockState, SandboxReport, SandboxSpec};

    /// The first Landlock ABI with scopes (signals, abstract unix sockets): Linux 6.12.
    const SCOPES_ABI: i32 = 6;

    /// The write rights of ABI 3 (ABI 5's `IOCTL_DEV` deliberately left out).
    fn write_rights() -> ::landlock::BitFlags<AccessFs> {
        AccessFs::from_write(ABI::V3)
    }

    pub(super) fn enter(spec: &SandboxSpec) -> SandboxReport {
        // Mounts first: a Landlocked process may no longer change mounts.
        let needs_namespace = !spec.read_only_binds.is_empty()
            || !spec.hidden_files.is_empty()
            || !spec.masked.is_empty()
            || !spec.covers.is_empty()
            || spec.state_dir.is_some();
        let namespace = if needs_namespace {
            private_mount_namespace()
        } else {
            Ok(())
        };
        // The state dir first: the binds below land on what the worker keeps of it.
        let (state_hidden, state_reason) = match (namespace, &spec.state_dir) {
            (_, None) => (false, None),
            (Err(e), Some(_)) => (false, Some(format!("no private mount namespace ({e})"))),
            (Ok(()), Some(dir)) => match crate::hide_state::hide(dir, &spec.state_kept) {
                Ok(()) => (true, None),
                Err(e) => (false, Some(format!("the state dir stayed readable ({e})"))),
            },
        };
        let (git_dir, git_reason) = if spec.read_only_binds.is_empty() {
            (GitDirState::NotExposed, None)
        } else {
            match namespace.and_then(|()| bind_read_only(&spec.read_only_binds)) {
                Ok(()) => (GitDirState::ReadOnlyMount, None),
                Err(e) => (
                    GitDirState::Writable,
                    Some(format!("the git dir could not be mounted read-only ({e})")),
                ),
            }
        };
        let (hidden, hide_reason) = match (namespace, &spec.blank_file) {
            (_, _) if spec.hidden_files.is_empty() => (0, None),
            (Err(e), _) => (0, Some(format!("no private mount namespace ({e})"))),
            (Ok(()), None) => (0, Some("no empty file to bind over them".into())),
            (Ok(()), Some(blank)) => hide_files(&spec.hidden_files, blank),
        };
        let (masked, covered) = match namespace {
            Ok(()) => (mask(spec), cover(&spec.covers)),
            Err(_) => (0, 0),
        };
        let git_reason = [git_reason, hide_reason, state_reason]
            .into_iter()
            .flatten()
            .reduce(|a, b| format!("{a}; {b}"));
        let (landlock, abi, reason) = match restrict(spec) {
            Ok(status) => describe(&status),
            Err(e) => (
                LandlockState::Unavailable,
                kernel_abi(),
                Some(format!("the Landlock ruleset failed: {e}")),
            ),
        };
        let reason = match (reason, git_reason) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        SandboxReport {
            landlock,
            abi,
            reason,
            git_dir,
            writable: spec.writable_dirs.clone(),
            hidden,
            masked,
            covered,
            state_hidden,
            seatbelt: false,
            hardening: Default::default(),
        }
    }

    /// Binds each replacement read-only over the file it covers; returns how many hold.
    fn cover(covers: &[(PathBuf, PathBuf)]) -> u32 {
        let held = covers
            .iter()
            .filter(|(replacement, covered)| bind_over(replacement, covered).is_ok())
            .count();
        u32::try_from(held).unwrap_or(u32::MAX)
    }

    /// Binds `blank` read-only over each of `files`; returns how many are hidden (a file gone
    /// since the list was made counts: there is nothing left to read) and why any was not.
    fn hide_files(files: &[PathBuf], blank: &Path) -> (u32, Option<String>) {
        let mut hidden = 0u32;
        let mut failure = None;
        for file in files {
            match bind_over(blank, file) {
                Ok(()) | Err(nix::errno::Errno::ENOENT) => hidden += 1,
                Err(e) => {
                    failure.get_or_insert_with(|| {
                        format!("{} could not be hidden ({e})", file.display())
                    });
                }
            }
        }
        (hidden, failure)
    }

    /// Binds the blank file over each masked file or socket and the blank dir over each
    /// masked dir; returns how many are masked.
    fn mask(spec: &SandboxSpec) -> u32 {
        let mut masked = 0;
        for path in &spec.masked {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            let blank = if meta.is_dir() {
                spec.blank_dir.as_ref()
            } else {
                spec.blank_file.as_ref()
            };
            if blank.is_some_and(|b| bind_over(b, path).is_ok()) {
                masked += 1;
            }
        }
        masked
    }

    /// `source` bound over `target`, read-only (the remount keeps the flags the file system is
    /// locked to).
    fn bind_over(source: &Path, target: &Path) -> nix::Result<()> {
        bind_then_remount_read_only(source, target, MsFlags::MS_BIND)
    }

    /// `source` bound over `target` with `bind` flags, then remounted read-only. A read-only
    /// remount must keep the flags the file system is already locked to (`source`'s).
    fn bind_then_remount_read_only(source: &Path, target: &Path, bind: MsFlags) -> nix::Result<()> {
        mount(Some(source), target, None::<&str>, bind, None::<&str>)?;
        let kept = inherited_flags(source);
        mount(
            None::<&str>,
            target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
            None::<&str>,
        )
    }

    fn describe(status: &RestrictionStatus) -> (LandlockState, Option<i32>, Option<String>) {
        let abi = match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
            _ => None,
        };
        match status.ruleset {
            RulesetStatus::FullyEnforced => (LandlockState::Enforced, abi, None),
            RulesetStatus::PartiallyEnforced => (
                LandlockState::Partial,
                abi,
                Some(format!(
                    "the kernel's Landlock ABI {} lacks some write rights (truncation needs ABI 3)",
                    abi.unwrap_or(0)
                )),
            ),
            RulesetStatus::NotEnforced => (
                LandlockState::Unavailable,
                abi,
                Some(match status.landlock {
                    LandlockStatus::NotEnabled => {
                        "Landlock is built in but not enabled at boot".into()
                    }
                    LandlockStatus::NotImplemented => "the kernel has no Landlock".into(),
                    _ => "the kernel did not enforce the ruleset".into(),
                }),
            ),
        }
    }

    fn restrict(spec: &SandboxSpec) -> Result<RestrictionStatus, RulesetError> {
        let rights = write_rights();
        let file_rights = rights & AccessFs::from_file(ABI::V3);
        let mut ruleset = Ruleset::default().handle_access(rights)?;
        if kernel_abi().is_some_and(|abi| abi >= SCOPES_ABI) {
            // The worker may neither signal a process outside its sandbox (the user's shell,
            // an editor) nor connect to an abstract socket made outside it (a session bus, an
            // X server). Asked only of a kernel that has scopes, so an older one still reports
            // the write rights as fully enforced.
            ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
        }
        let mut ruleset = ruleset.create()?;
        for dir in &spec.writable_dirs {
            // A path that vanished since the spec was built, or that a link now stands in,
            // simply grants nothing.
            if let Some(fd) = open_without_links(dir) {
                ruleset = ruleset.add_rule(PathBeneath::new(fd, rights))?;
            }
        }
        for file in &spec.writable_files {
            if let Some(fd) = open_without_links(file) {
                ruleset = ruleset.add_rule(PathBeneath::new(fd, file_rights))?;
            }
        }
        ruleset.restrict_self()
    }

    /// The spec's paths are canonical: a rule is granted on exactly that inode, through no
    /// link that appeared since the spec was built (`RESOLVE_NO_SYMLINKS`, an `O_PATH` open).
    /// On a kernel without `openat2` (before 5.6; Landlock needs 5.13) it falls back to a
    /// plain open.
    fn open_without_links(path: &Path) -> Option<std::os::fd::OwnedFd> {
        use rustix::fs::{openat2, Mode, OFlags, ResolveFlags, CWD};
        match openat2(
            CWD,
            path,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::NOSYS) => {
                rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()
            }
            Err(_) => None,
        }
    }

    /// A private mount namespace for this thread, nothing propagating back (also where the
    /// containment mounts its own `/proc`).
    pub(crate) fn private_mount_namespace() -> nix::Result<()> {
        unshare(CloneFlags::CLONE_NEWNS)?;
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
    }

    /// Each path bound onto itself read-only (in the private mount namespace).
    fn bind_read_only(paths: &[PathBuf]) -> nix::Result<()> {
        for path in paths {
            bind_one(path)?;
        }
        Ok(())
    }

    fn bind_one(path: &Path) -> nix::Result<()> {
        bind_then_remount_read_only(path, path, MsFlags::MS_BIND | MsFlags::MS_REC)
    }

    fn inherited_flags(path: &Path) -> MsFlags {
        use nix::sys::statvfs::{statvfs, FsFlags};
        let Ok(stat) = statvfs(path) else {
            return MsFlags::empty();
        };
        let flags = stat.flags();
        let mut kept = MsFlags::empty();
        for (fs, ms) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if flags.contains(fs) {
                kept |= ms;
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        let tree = base.join("tree");
        let scratch = base.join("run/scratch");
        let state = base.join("state");
        for d in [&tree.join(".git"), &scratch, &state] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        (root, tree, scratch, state)
    }

    /// The read-only binds of an edit run on `tree` with `git_dirs`, writing `scratch` too.
    fn edit_run_binds(tree: &Path, git_dirs: &[PathBuf], scratch: PathBuf) -> Vec<PathBuf> {
        SandboxSpec::for_worker(
            TreeAccess::Writable { tree, git_dirs },
            &[scratch],
            &[],
            PathBuf::from("/x"),
        )
        .read_only_binds
    }

    #[test]
    fn hiding_state_keeps_only_what_the_run_names_beneath_the_canonical_state_dir() {
        let (root, tree, _scratch, state) = dirs();
        let run = state.join("runs/r1");
        let cli_state = run.join("cli-state");
        let links = state.join("guard/bin");
        for d in [&cli_state, &links, &state.join("runs/r0")] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        // The state dir as the user named it: through a symlink.
        let alias = root.path().join("alias");
        std::os::unix::fs::symlink(&state, &alias).expect("symlink");
        let spec = SandboxSpec::for_worker(
            TreeAccess::ReadOnly,
            &[alias.join("runs/r1/cli-state"), tree.clone()],
            &[],
            alias.join("runs/r1/sandbox.json"),
        )
        .hiding_state(&alias, &[links.clone(), alias.join("runs/r1/cli-state/x")]);

        assert_eq!(spec.state_dir.as_deref(), Some(state.as_path()));
        // The report's dir holds the CLI state: one bind keeps both; the tree is not beneath
        // the state dir, so it is not the tmpfs's business.
        let mut kept = spec.state_kept.clone();
        kept.sort();
        assert_eq!(kept, vec![links, run]);
        assert!(!spec
            .state_kept
            .iter()
            .any(|k| k.starts_with(state.join("runs/r0"))));
    }

    #[test]
    fn hiding_state_never_keeps_the_state_dir_itself() {
        let (_root, _tree, _scratch, state) = dirs();
        let spec =
            SandboxSpec::for_worker(TreeAccess::ReadOnly, &[], &[], PathBuf::from("/x/r.json"))
                .hiding_state(&state, std::slice::from_ref(&state));
        assert!(spec.state_kept.is_empty());
        assert_eq!(spec.state_dir, Some(state));
    }

    #[test]
    fn a_read_run_may_write_only_its_private_dirs_and_dev_null() {
        let (_root, tree, scratch, state) = dirs();
        let spec = SandboxSpec::for_worker(
            TreeAccess::ReadOnly,
            &[scratch.clone(), state.clone()],
            &[],
            scratch.join("sandbox.json"),
        );
        assert_eq!(spec.writable_dirs, vec![scratch, state]);
        assert!(!spec.writable_dirs.iter().any(|d| d.starts_with(&tree)));
        assert_eq!(spec.writable_files, vec![PathBuf::from("/dev/null")]);
        assert!(spec.read_only_binds.is_empty());
    }

    #[test]
    fn an_edit_run_may_write_its_tree_but_binds_the_git_dir_inside_it_read_only() {
        let (_root, tree, scratch, state) = dirs();
        let git = tree.join(".git");
        let spec = SandboxSpec::for_worker(
            TreeAccess::Writable {
                tree: &tree,
                git_dirs: std::slice::from_ref(&git),
            },
            &[scratch.clone(), state.clone()],
            &[],
            scratch.join("sandbox.json"),
        );
        assert_eq!(spec.writable_dirs, vec![scratch, state, tree]);
        assert_eq!(spec.read_only_binds, vec![git]);
    }

    #[test]
    fn a_git_dir_outside_every_writable_dir_needs_no_mount() {
        let (_root, tree, scratch, state) = dirs();
        // A linked worktree's common dir elsewhere: Landlock alone keeps it read-only.
        let outside = state.parent().expect("parent").join("elsewhere.git");
        std::fs::create_dir_all(&outside).expect("mkdir");
        assert_eq!(
            edit_run_binds(&tree, &[outside, tree.join(".git")], scratch),
            vec![tree.join(".git")]
        );
    }

    #[test]
    fn a_linked_worktrees_git_file_is_bound_read_only_too() {
        let (_root, _tree, scratch, state) = dirs();
        let worktree = state.parent().expect("parent").join("wt");
        std::fs::create_dir_all(&worktree).expect("mkdir");
        std::fs::write(worktree.join(".git"), "gitdir: /elsewhere\n").expect("write");
        assert_eq!(
            edit_run_binds(
                &worktree,
                &[worktree.join(".git"), worktree.join("missing")],
                scratch
            ),
            vec![worktree.join(".git")]
        );
    }

    #[test]
    fn nested_missing_and_symlinked_paths_are_normalised() {
        let (_root, tree, scratch, state) = dirs();
        let link = state.parent().expect("parent").join("link-to-state");
        std::os::unix::fs::symlink(&state, &link).expect("symlink");
        let spec = SandboxSpec::for_worker(
            TreeAccess::ReadOnly,
            &[
                scratch.clone(),
                scratch.join("tmp-does-not-exist"),
                scratch.clone(),
                link,
                tree.join("missing"),
            ],
            &[],
            PathBuf::from("/x"),
        );
        assert_eq!(spec.writable_dirs, vec![scratch, state]);
    }

    #[test]
    fn a_link_a_worker_planted_inside_its_state_dir_grants_nothing_beyond_that_dir() {
        let (_root, tree, scratch, state) = dirs();
        // A read run replaced its cache dir with a link to the repository's .git; the next
        // run names that dir (an XDG variable) among its private dirs.
        let cache = state.join("cache");
        std::os::unix::fs::symlink(tree.join(".git"), &cache).expect("symlink");
        let spec = SandboxSpec::for_worker(
            TreeAccess::ReadOnly,
            &[
                scratch.clone(),
                state.clone(),
                cache,
                scratch.join("../scratch/tmp"),
            ],
            &[],
            PathBuf::from("/x"),
        );
        assert_eq!(spec.writable_dirs, vec![scratch, state]);
    }

    #[test]
    fn a_linked_credentials_file_is_writable_as_a_file_only() {
        let (_root, _tree, scratch, state) = dirs();
        let creds = state.join("auth.json");
        std::fs::write(&creds, "{}").expect("write");
        let spec = SandboxSpec::for_worker(
            TreeAccess::ReadOnly,
            &[scratch],
            &[creds.clone(), state.join("gone.json")],
            PathBuf::from("/x"),
        );
        assert_eq!(spec.writable_files, vec![PathBuf::from("/dev/null"), creds]);
    }

    #[test]
    fn denied_writes_are_recognised_in_each_clis_wording() {
        for text in [
            "/usr/bin/bash: line 1: probe.txt: Permission denied",
            "EACCES: permission denied, open '/w/src/lib.rs.tmp.1'",
            "PermissionDenied: FileSystem.writeFile (/w/x)",
            "touch: cannot touch '.git/x': Read-only file system",
        ] {
            assert!(looks_like_blocked_write(text), "{text}");
        }
        assert!(!looks_like_blocked_write("wrote 3 files"));
    }

    #[test]
    fn a_strict_sandbox_holds_only_with_landlock_enforced_and_every_file_hidden() {
        let spec = SandboxSpec::default().reading_in_place(
            vec!["/w/.env".into(), "/w/k.pem".into()],
            "/run/blank".into(),
        );
        let report = |landlock, hidden| SandboxReport {
            landlock,
            abi: Some(3),
            reason: None,
            git_dir: GitDirState::NotExposed,
            writable: Vec::new(),
            hidden,
            masked: 0,
            covered: 0,
            state_hidden: false,
            seatbelt: false,
            hardening: crate::harden::Hardening {
                capabilities_dropped: true,
                seccomp: true,
                reason: None,
            },
        };
        assert_eq!(
            spec.strict_failure(&report(LandlockState::Enforced, 2)),
            None
        );
        let mut privileged = report(LandlockState::Enforced, 2);
        privileged.hardening.capabilities_dropped = false;
        assert!(spec
            .strict_failure(&privileged)
            .is_some_and(|w| w.contains("capabilities")));
        assert!(spec
            .strict_failure(&report(LandlockState::Enforced, 1))
            .is_some_and(|w| w.contains("only 1 of 2")));
        for state in [LandlockState::Partial, LandlockState::Unavailable] {
            assert!(spec
                .strict_failure(&report(state, 2))
                .is_some_and(|w| w.contains("writable")));
        }
        let copy_run = SandboxSpec::default();
        assert_eq!(
            copy_run.strict_failure(&report(LandlockState::Unavailable, 0)),
            None
        );
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let report = SandboxReport {
            landlock: LandlockState::Enforced,
            abi: Some(7),
            reason: None,
            git_dir: GitDirState::ReadOnlyMount,
            writable: vec![PathBuf::from("/w")],
            hidden: 2,
            masked: 1,
            covered: 1,
            state_hidden: true,
            seatbelt: false,
            hardening: Default::default(),
        };
        let text = serde_json::to_string(&report).expect("json");
        assert!(text.contains("\"landlock\":\"enforced\""), "{text}");
        assert!(text.contains("\"git_dir\":\"read_only_mount\""), "{text}");
        let back: SandboxReport = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, report);
    }
}
