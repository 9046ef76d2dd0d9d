//! The operating-system mechanisms under the keeper, the init and the process sweep, behind
//! one small interface: everything above this module is the same code on every platform.
//!
//! - **Linux**: `/proc` for the process table, pidfds for exact signals and exit waits,
//!   `prctl` for the subreaper and the parent-death signal, `sigtimedwait`.
//! - **macOS**: `libproc` (`proc_pidinfo`, `proc_listallpids`) and `sysctl(KERN_PROCARGS2)`
//!   for the process table; no pidfds (a start-time check before `kill`, kqueue `EVFILT_PROC`
//!   for a child's exit); no subreaper and no parent-death signal, so the sweep also hunts the
//!   worker's session (`remember_session`); signals waited with `sigpending`/`sigwait` in short
//!   slices.
//!
//! With `PITROOM_PORTABLE` Linux goes without the subreaper and the parent-death signal too,
//! and hunts the worker's session like macOS (`remember_session`, shared by both).
//!
//! What a platform lacks is said where it is reported (`ContainmentReport`, `SandboxReport`).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub(crate) use macos::*;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!("Pitroom builds for Linux and macOS only (on Windows, WSL2 runs the Linux build)");

/// A process as the process table shows it: its parent, its start time (an opaque number that,
/// with the pid, names one process even after the pid is reused) and whether it is a zombie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub ppid: i32,
    pub start: u64,
    pub zombie: bool,
}

/// The sessions of the worker trees this process started: without a subreaper (macOS, or
/// Linux running portable), their orphans are found by session id.
static SESSIONS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// The variable the keeper puts in its worker's environment where there is no subreaper: an
/// orphan of the tree that left the worker's session (a tool's detached shell whose background
/// job outlived it) still carries it, and the sweep finds it by it.
pub(crate) const TREE_MARK_ENV: &str = pitroom_env::PITROOM_TREE;

/// The `PITROOM_TREE=…` entry this process marks its worker trees with.
static MARK: std::sync::Mutex<Option<Vec<u8>>> = std::sync::Mutex::new(None);

/// The value of [`TREE_MARK_ENV`] for the trees this process starts, once there is no subreaper
/// (`None` where there is one): this process's pid and start time, which name it alone.
pub(crate) fn tree_mark() -> Option<String> {
    if has_subreaper() {
        return None;
    }
    let me = std::process::id() as i32;
    let value = format!("{me}-{}", proc_stat(me)?.start);
    if let Ok(mut mark) = MARK.lock() {
        *mark = Some(format!("{TREE_MARK_ENV}={value}").into_bytes());
    }
    Some(value)
}

/// Notes the session `sid` (a worker started as a session leader) for the sweep, where there
/// is no subreaper to hand the tree's orphans back (with one, they are all descendants).
pub(crate) fn remember_session(sid: i32) {
    if has_subreaper() {
        return;
    }
    if let Ok(mut sessions) = SESSIONS.lock() {
        sessions.push(sid);
    }
}

/// Every live process (pid, start time) in a remembered session or carrying this process's
/// [`TREE_MARK_ENV`], other than `me`.
pub(crate) fn session_members(me: i32) -> Vec<(i32, u64)> {
    let sessions = match SESSIONS.lock() {
        Ok(s) => s.clone(),
        Err(_) => return Vec::new(),
    };
    let mark = MARK.lock().ok().and_then(|m| m.clone());
    if sessions.is_empty() && mark.is_none() {
        return Vec::new();
    }
    all_pids()
        .into_iter()
        .filter(|pid| *pid != me)
        .filter(|pid| {
            nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(*pid)))
                .is_ok_and(|sid| sessions.contains(&sid.as_raw()))
                || mark.as_deref().is_some_and(|mark| env_has(*pid, mark))
        })
        .filter_map(|pid| Some((pid, proc_stat(pid).filter(|s| !s.zombie)?.start)))
        .collect()
}
