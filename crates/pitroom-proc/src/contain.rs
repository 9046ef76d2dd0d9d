//! Containment: each worker tree lives in a PID namespace of its own.
//!
//! The keeper makes a new PID namespace and starts [`crate::init`] as its PID 1; the worker
//! and everything it starts live inside it. When that init dies — because the worker exited,
//! because the keeper ended it, or because the keeper itself was SIGKILLed and the init's
//! parent-death signal fired — the kernel kills every process left in the namespace. No
//! Pitroom process has to survive for that to hold, which is what makes "no worker process
//! outlives its run" true even when every Pitroom process is killed at once.
//!
//! A PID namespace needs `CAP_SYS_ADMIN`. Root has it; anyone else first gets it inside a
//! user namespace of their own (the same uid and gid mapped onto themselves, so files keep
//! their owners). Where neither works (namespaces disabled, a restricting LSM, not Linux),
//! the keeper's process sweep is all there is, and the report says why.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a run's worker tree was kept from outliving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A PID namespace whose init is a Pitroom process: the kernel ends the whole tree when
    /// the init dies, even if every Pitroom process is SIGKILLed.
    PidNamespace,
    /// Only the keeper's sweep of its descendants (it is their subreaper): holds when the
    /// keeper or the supervisor dies alone, not when both are killed at once.
    ProcessSweep,
}

impl Mechanism {
    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::PidNamespace => "pid namespace",
            Mechanism::ProcessSweep => "process sweep",
        }
    }
}

/// What held a run's worker tree, as the run record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainmentReport {
    pub mechanism: Mechanism,
    /// The worker saw a `/proc` of its own namespace (only its own processes, its own pids).
    #[serde(default)]
    pub own_proc: bool,
    /// Why the stronger mechanism (or the private `/proc`) is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where only the sweep holds the tree: the `PITROOM_TREE` mark its processes carry, by
    /// which the next Pitroom command that finds the run's supervisor and keeper dead ends
    /// what they left ([`crate::sweep_marked_orphans`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_mark: Option<String>,
}

impl ContainmentReport {
    pub fn sweep(reason: impl Into<String>) -> ContainmentReport {
        ContainmentReport {
            mechanism: Mechanism::ProcessSweep,
            own_proc: false,
            reason: Some(reason.into()),
            tree_mark: None,
        }
    }

    /// Reads the report a keeper or init wrote; `None` when there is none or it does not parse.
    pub fn read(path: &Path) -> Option<ContainmentReport> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the report through a descriptor opened before any sandbox was entered.
    pub(crate) fn write_to(&self, file: &mut File) -> std::io::Result<()> {
        let json = serde_json::to_string(self).map_err(std::io::Error::other)?;
        file.write_all(json.as_bytes())
    }
}

/// Set (to anything) in the environment of `pitroom run`, it turns the PID namespace off and
/// leaves only the keeper's sweep: an escape hatch should a worker CLI misbehave inside one.
pub const NO_PID_NAMESPACE_ENV: &str = pitroom_env::PITROOM_NO_PID_NAMESPACE;

/// Set (to anything but empty or `0`), Pitroom runs as on a platform without Linux's own
/// mechanisms: no PID or user namespace (only the keeper's sweep), no private mount namespace
/// (read runs read a checked copy, `.git` is not bound read-only), no Landlock, and the
/// state-dir watch polls instead of using inotify. The portable test pass (`.ci/portable`)
/// runs with it, so the paths macOS takes are proven on Linux too.
pub const PORTABLE_ENV: &str = pitroom_env::PITROOM_PORTABLE;

/// Whether a value of [`PORTABLE_ENV`] turns the portable mode on.
pub fn portable_value(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process runs portable ([`PORTABLE_ENV`] in its environment).
pub fn portable() -> bool {
    portable_value(std::env::var_os(PORTABLE_ENV).as_deref())
}

/// Why the namespaces are turned off by a setting, if one does: [`NO_PID_NAMESPACE_ENV`] or
/// [`PORTABLE_ENV`] in this process's environment.
pub(crate) fn namespaces_turned_off() -> Option<String> {
    if std::env::var_os(NO_PID_NAMESPACE_ENV).is_some() {
        Some(format!("turned off by {NO_PID_NAMESPACE_ENV}"))
    } else if portable() {
        Some(format!("turned off by {PORTABLE_ENV}"))
    } else {
        None
    }
}

/// Gives this process the capability to make a PID namespace: nothing for root, else a user
/// namespace of its own with its uid and gid mapped onto themselves. Must run before the
/// process starts a thread (the kernel refuses a user namespace to a threaded process).
pub(crate) fn gain_namespace_rights() -> Result<(), String> {
    if let Some(reason) = namespaces_turned_off() {
        return Err(reason);
    }
    #[cfg(target_os = "linux")]
    {
        if crate::landlock::has_cap_sys_admin() {
            return Ok(());
        }
        linux::enter_user_namespace().map_err(|e| format!("no user namespace ({e})"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(NO_NAMESPACES_HERE.into())
    }
}

/// Why a worker tree has no PID namespace off Linux, and what holds it instead.
#[cfg(not(target_os = "linux"))]
const NO_NAMESPACES_HERE: &str = "PID namespaces are Linux only: the keeper's sweep ends the worker's tree, found by descent and by the worker's session (no subreaper, no parent-death signal here)";

/// Makes the next child of the calling thread the PID 1 of a new PID namespace.
pub(crate) fn new_pid_namespace_for_children() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID)
            .map_err(|e| format!("no PID namespace ({e})"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(NO_NAMESPACES_HERE.into())
    }
}

/// Mounts a `/proc` of the caller's own PID namespace in a private mount namespace, so the
/// worker's `/proc/<pid>` matches the pids it sees. Called by the init, before any sandbox.
pub(crate) fn mount_own_proc() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        linux::mount_own_proc().map_err(|e| format!("no private /proc ({e})"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("Linux only".into())
    }
}

/// Whether an unprivileged process here can make a user namespace with a mount namespace in
/// it: probed in a forked child, so this process (threaded, perhaps) stays as it is.
#[cfg(target_os = "linux")]
pub(crate) fn user_namespace_mounts_work() -> bool {
    // SAFETY: the child makes one system call and `_exit`s: nothing that a fork of a threaded
    // process may not do.
    match unsafe { libc::fork() } {
        0 => {
            // SAFETY: plain system calls in the forked child.
            let code = unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) };
            unsafe { libc::_exit(if code == 0 { 0 } else { 1 }) }
        }
        pid if pid > 0 => {
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
            waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
        _ => false,
    }
}

/// Lets the init, started by an ordinary user's keeper inside the user namespace it made,
/// keep `CAP_SYS_ADMIN` across its `execve` (a process whose uid is not 0 loses every
/// capability there otherwise): it needs it for its own `/proc` and the sandbox's mounts, and
/// gives it up ([`crate::harden`]) before the worker starts. Called between fork and exec.
#[cfg(target_os = "linux")]
pub(crate) fn keep_mount_right_across_exec() -> std::io::Result<()> {
    use rustix::thread::{
        capabilities, configure_capability_in_ambient_set, set_capabilities, CapabilitySet,
    };
    if rustix::process::getuid().is_root() {
        return Ok(());
    }
    let mut sets = capabilities(None)?;
    if !sets.permitted.contains(CapabilitySet::SYS_ADMIN) {
        return Ok(());
    }
    sets.inheritable |= CapabilitySet::SYS_ADMIN;
    set_capabilities(None, sets)?;
    configure_capability_in_ambient_set(CapabilitySet::SYS_ADMIN, true)?;
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};

    pub(super) fn enter_user_namespace() -> std::io::Result<()> {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        unshare(CloneFlags::CLONE_NEWUSER)?;
        // `setgroups` must be denied before an unprivileged process may write its gid map.
        std::fs::write("/proc/self/setgroups", "deny")?;
        std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        Ok(())
    }

    pub(super) fn mount_own_proc() -> nix::Result<()> {
        crate::landlock::private_mount_namespace()?;
        mount(
            Some("proc"),
            "/proc",
            Some("proc"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            None::<&str>,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_round_trips_through_json_with_snake_case_names() {
        let report = ContainmentReport {
            mechanism: Mechanism::PidNamespace,
            own_proc: true,
            reason: None,
            tree_mark: None,
        };
        let json = serde_json::to_string(&report).expect("serialises");
        assert_eq!(json, r#"{"mechanism":"pid_namespace","own_proc":true}"#);
        let back: ContainmentReport = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, report);
        let sweep = ContainmentReport::sweep("no PID namespace (EPERM)");
        let back: ContainmentReport =
            serde_json::from_str(&serde_json::to_string(&sweep).expect("serialises"))
                .expect("parses");
        assert_eq!(back.mechanism, Mechanism::ProcessSweep);
        assert_eq!(back.reason.as_deref(), Some("no PID namespace (EPERM)"));
    }

    #[test]
    fn portable_is_on_for_any_value_but_empty_or_zero() {
        assert!(!portable_value(None));
        assert!(!portable_value(Some("".as_ref())));
        assert!(!portable_value(Some("0".as_ref())));
        assert!(portable_value(Some("1".as_ref())));
        assert!(portable_value(Some("yes".as_ref())));
    }
}
