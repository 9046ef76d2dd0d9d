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
