//! macOS: `libproc` and `sysctl` for the process table; no pidfds, no subreaper, no
//! parent-death signal and no `sigtimedwait`, so each is replaced by what macOS offers.

use std::time::{Duration, Instant};

use nix::sys::event::{EventFilter, EventFlag, FilterFlag, KEvent, Kqueue};
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::Pid;

use super::ProcStat;

/// `proc_pidinfo(PROC_PIDTBSDINFO)` for `pid`; `None` when it is gone or not ours to see.
fn bsd_info(pid: i32) -> Option<libc::proc_bsdinfo> {
    // SAFETY: proc_bsdinfo is plain data; all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a proc_bsdinfo of exactly `size` bytes.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (got == size).then_some(info)
}

/// Parent, start time (microseconds since the epoch) and state of `pid`.
pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let info = bsd_info(pid)?;
    Some(ProcStat {
        ppid: i32::try_from(info.pbi_ppid).ok()?,
        start: info
            .pbi_start_tvsec
            .saturating_mul(1_000_000)
            .saturating_add(info.pbi_start_tvusec),
        zombie: info.pbi_status == libc::SZOMB,
    })
}

/// Every pid on the system (`proc_listallpids`; it answers how many it wrote).
pub(crate) fn all_pids() -> Vec<i32> {
    // The table grows between the two calls: room for a few more than were counted.
    // SAFETY: a null buffer asks for the count only.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else {
        return Vec::new();
    };
    let mut pids = vec![0i32; count + 64];
    let bytes = libc::c_int::try_from(pids.len() * std::mem::size_of::<i32>()).unwrap_or(0);
    // SAFETY: the buffer holds `bytes` bytes of pids.
    let written = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(usize::try_from(written).unwrap_or(0));
    pids.retain(|pid| *pid > 0);
    pids
}

/// `argv[1]` of `pid`, from `sysctl(KERN_PROCARGS2)`: an `int` argc, the executable's path,
/// NUL padding, then the arguments, each NUL-terminated.
pub(crate) fn second_arg(pid: i32) -> Option<Vec<u8>> {
    let buf = procargs(pid)?;
    let rest = buf.get(std::mem::size_of::<libc::c_int>()..)?;
    // The executable's path, then the padding, then argv[0], argv[1], …
    let mut fields = rest.split(|b| *b == 0).filter(|f| !f.is_empty());
    let _exec_path = fields.next()?;
    let _argv0 = fields.next()?;
    Some(fields.next().unwrap_or_default().to_vec())
}

/// Whether `entry` (`NAME=value`) is one of the NUL-separated strings `sysctl(KERN_PROCARGS2)`
/// gives for `pid`: its arguments, then its environment as it was started with.
pub(crate) fn env_has(pid: i32, entry: &[u8]) -> bool {
    procargs(pid).is_some_and(|buf| {
        buf.get(std::mem::size_of::<libc::c_int>()..)
            .is_some_and(|rest| rest.split(|b| *b == 0).any(|f| f == entry))
    })
}

/// The `sysctl(KERN_PROCARGS2)` buffer of `pid` (the caller's own processes only).
fn procargs(pid: i32) -> Option<Vec<u8>> {
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // Asked first with no buffer, the kernel says how much room the arguments need.
    let mut len: libc::size_t = 0;
    // SAFETY: `mib` names three levels; a null buffer asks for the size only.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `mib` names three levels; `buf` holds `len` bytes and `len` is updated.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    buf.truncate(len);
    Some(buf)
}

/// Sends `signal` to `pid` only if it is still the process that started at `start`. macOS has
/// no pidfds: the start time is checked right before `kill`, which leaves the narrow window
/// Linux closes with a pidfd.
pub(crate) fn signal_exact(pid: i32, start: u64, signal: Signal) {
    if proc_stat(pid).map(|s| s.start) == Some(start) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
    }
}

/// Sleeps until the child `pid` exits or `limit` passes (at most 100 ms: see below); returns at
/// once if it has exited already. A kqueue `EVFILT_PROC`/`NOTE_EXIT` wakes the sleep, as a pidfd
/// does on Linux. The wait is capped: a child that exits between the caller's look and the
/// registration may leave nothing to wake on. Where kqueue fails, a 10 ms slice. Reaps nothing.
pub(crate) fn sleep_until_exit(pid: i32, limit: Duration) {
    let limit = limit.min(Duration::from_millis(100));
    let slice = || std::thread::sleep(limit.min(Duration::from_millis(10)));
    let (Ok(queue), Ok(ident)) = (Kqueue::new(), usize::try_from(pid)) else {
        return slice();
    };
    let exit = KEvent::new(
        ident,
        EventFilter::EVFILT_PROC,
        EventFlag::EV_ADD | EventFlag::EV_ONESHOT,
        FilterFlag::NOTE_EXIT,
        0,
        0,
    );
    let mut fired = [exit];
    let timeout = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    match queue.kevent(&[exit], &mut fired, Some(timeout)) {
        // Woken, timed out, or the process is gone already (ESRCH): the caller looks again.
        Ok(_) | Err(nix::errno::Errno::ESRCH) | Err(nix::errno::Errno::EINTR) => {}
        Err(_) => slice(),
    }
}

/// Whether this process has no child at all, running or exited and unreaped (`waitid` says
/// ECHILD). Only looks: an exited child stays to be reaped by its owner.
pub(crate) fn has_no_children() -> bool {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let peek = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: a valid siginfo out-parameter.
    let rc = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, peek) };
    rc == -1 && nix::errno::Errno::last() == nix::errno::Errno::ECHILD
}

/// macOS has no subreaper: an orphan of the worker's tree goes to launchd. The sweep finds it
/// by its session instead ([`super::remember_session`]).
pub(crate) fn become_subreaper() {}

/// No subreaper on macOS.
pub(crate) fn has_subreaper() -> bool {
    false
}

/// macOS has no parent-death signal: the keeper notices its supervisor's death through the
/// lifeline pipe and the parent pid (checked every 250 ms).
pub(crate) fn die_with_parent(_signal: Signal) {}

/// Waits for one of `signals` (blocked in this thread) for at most `limit`. macOS has no
/// `sigtimedwait`: the pending set is looked at every few milliseconds, and a pending signal is
/// taken with `sigwait`, which then returns at once.
pub(crate) fn wait_for_signal(signals: &SigSet, limit: Duration) -> Option<i32> {
    keep_sigchld_pending();
    let deadline = Instant::now() + limit;
    loop {
        if let Some(signo) = take_pending(signals) {
            return Some(signo);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(left.min(Duration::from_millis(5)));
    }
}

/// A BSD kernel drops a signal whose action is to be ignored, blocked or not, and SIGCHLD's
/// default action is to be ignored: with a handler of its own (which never runs: the signal is
/// blocked, and taken with `sigwait`) it stays pending like on Linux. Without it a worker's exit
/// would only be seen at the end of the wait's slice.
fn keep_sigchld_pending() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn ignore(_: libc::c_int) {}
    ONCE.call_once(|| {
        let action = nix::sys::signal::SigAction::new(
            nix::sys::signal::SigHandler::Handler(ignore),
            nix::sys::signal::SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: the handler does nothing, so it is async-signal-safe; exec resets it in
        // every child.
        let _ = unsafe { nix::sys::signal::sigaction(Signal::SIGCHLD, &action) };
    });
}

/// One of `signals` that is pending, taken off the pending set.
fn take_pending(signals: &SigSet) -> Option<i32> {
    // SAFETY: sigset_t is plain data; sigpending fills it.
    let mut pending: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid sigset_t out-parameter.
    if unsafe { libc::sigpending(&mut pending) } != 0 {
        return None;
    }
    // SAFETY: `pending` was filled by sigpending; sigismember only reads it.
    let is_pending = |s: Signal| unsafe { libc::sigismember(&pending, s as libc::c_int) } == 1;
    if !signals.iter().any(is_pending) {
        return None;
    }
    let mut signo: libc::c_int = 0;
    // SAFETY: a valid signal set, one of whose signals is pending, and an int out-parameter.
    let rc = unsafe { libc::sigwait(signals.as_ref(), &mut signo) };
    (rc == 0).then_some(signo)
}
