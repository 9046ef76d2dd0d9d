//! Linux: `/proc`, pidfds, `prctl`, `sigtimedwait`.

use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::WaitPidFlag;
use nix::unistd::Pid;

use super::ProcStat;

/// The fields of `/proc/<pid>/stat` after the command name, which is in parentheses and may
/// itself contain spaces and parentheses.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Parent, start time (clock ticks since boot) and state from `/proc/<pid>/stat`.
pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let fields = stat_fields(pid)?;
    Some(ProcStat {
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: fields.first()? == "Z",
    })
}

/// Every pid in `/proc`.
pub(crate) fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// `argv[1]` of `pid`, from `/proc/<pid>/cmdline`.
pub(crate) fn second_arg(pid: i32) -> Option<Vec<u8>> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        cmdline
            .split(|b| *b == 0)
            .nth(1)
            .unwrap_or_default()
            .to_vec(),
    )
}

/// Whether `entry` (`NAME=value`) is in the environment `pid` was started with
/// (`/proc/<pid>/environ`: the caller's own processes only).
pub(crate) fn env_has(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|b| *b == 0).any(|f| f == entry))
}

/// Sends `signal` to `pid` only if it is still the process that started at `start`: the signal
/// goes through a pidfd opened and then checked against the start time, so a reused pid is
/// never hit.
pub(crate) fn signal_exact(pid: i32, start: u64, signal: Signal) {
    let same = || proc_stat(pid).map(|s| s.start) == Some(start);
    // SAFETY: plain syscalls with integer arguments; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        // Kernels before 5.3 have no pidfds: fall back to a start-time check and kill().
        if same() {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
        }
        return;
    }
    if same() {
        // SAFETY: fd is a valid pidfd; a null siginfo is allowed.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                signal as i32,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }
    // SAFETY: fd was returned by pidfd_open above.
    unsafe { libc::close(fd) };
}

/// Sleeps until the child `pid` exits or `limit` passes, whichever is first. The exit wakes
/// the sleep through a pidfd; on kernels before 5.3 (no pidfds) it sleeps a short slice (at
/// most 10 ms) and the caller checks again. Reaps nothing.
pub(crate) fn sleep_until_exit(pid: i32, limit: Duration) {
    // SAFETY: a plain syscall with integer arguments; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        std::thread::sleep(limit.min(Duration::from_millis(10)));
        return;
    }
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd; an interrupted or failed poll only ends the sleep early.
    unsafe { libc::poll(&mut poll, 1, ms) };
    // SAFETY: fd was returned by pidfd_open above.
    unsafe { libc::close(fd) };
}

/// Whether this process has no child at all, running or exited and unreaped (`waitid` says
/// ECHILD: it knows of none). Only looks: an exited child stays to be reaped by its owner.
pub(crate) fn has_no_children() -> bool {
    let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    matches!(
        nix::sys::wait::waitid(nix::sys::wait::Id::All, peek),
        Err(nix::errno::Errno::ECHILD)
    )
}

/// Makes this process the subreaper of everything it starts: an orphan in its tree is handed
/// to it, not to PID 1, so the sweep still finds it. Not when portable (`PITROOM_PORTABLE`):
/// then, as on macOS, the sweep finds orphans by the worker's session.
pub(crate) fn become_subreaper() {
    if has_subreaper() {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }
}

/// Whether processes here become subreapers of what they start: yes, unless Pitroom runs
/// portable.
pub(crate) fn has_subreaper() -> bool {
    !crate::portable()
}

/// Has the kernel send `signal` to this process when its parent dies. Not when portable: as
/// on macOS, the keeper then notices through the lifeline pipe and the parent pid.
pub(crate) fn die_with_parent(signal: Signal) {
    if !crate::portable() {
        let _ = nix::sys::prctl::set_pdeathsig(signal);
    }
}

/// Waits for one of `signals` (blocked in this thread) for at most `limit`.
pub(crate) fn wait_for_signal(signals: &SigSet, limit: Duration) -> Option<i32> {
    let timeout = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a valid signal set and timeout; the siginfo out-parameter may be null.
    let signo = unsafe { libc::sigtimedwait(signals.as_ref(), std::ptr::null_mut(), &timeout) };
    (signo > 0).then_some(signo)
}
