//! Finding and ending a process tree through `/proc`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// A process seen in `/proc`: its pid and start time (clock ticks since boot). The start time
/// tells a process from a later one that reused its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

/// The fields of `/proc/<pid>/stat` after the command name, which is in parentheses and may
/// itself contain spaces and parentheses.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// `(ppid, starttime)` from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(i32, u64)> {
    let fields = stat_fields(pid)?;
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// A process's start time in clock ticks since boot: with the pid, it names one process even
/// after the pid is reused.
pub fn process_start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// The nearest ancestor of this process that is a Pitroom keeper or init — the process that
/// holds a worker's tree — or `None` outside every worker tree. A worker can unset any
/// variable, but not re-parent itself out of its keeper's tree (the keeper is its subreaper,
/// the init its namespace's PID 1) nor rewrite an ancestor's command line, so this is what
/// refuses a Pitroom started by a worker.
pub fn worker_tree_holder() -> Option<i32> {
    let mut pid = std::process::id() as i32;
    // Bounded: a chain of parents ends at PID 1 (or 0) long before this.
    for _ in 0..256 {
        let (parent, _) = stat(pid)?;
        if parent <= 0 || parent == pid {
            return None;
        }
        if is_worker_holder(parent) {
            return Some(parent);
        }
        pid = parent;
    }
    None
}

/// Whether `pid` runs `<exe> __keeper …` or `<exe> __init …`.
fn is_worker_holder(pid: i32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let second = cmdline.split(|b| *b == 0).nth(1).unwrap_or_default();
    second == crate::keeper::KEEPER_SUBCOMMAND.as_bytes()
        || second == crate::init::INIT_SUBCOMMAND.as_bytes()
}

/// Whether `pid` is running (exists and is not a zombie waiting to be reaped).
pub fn is_running(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|state| state != "Z"))
}

/// Every live descendant of `root`, parents before children.
pub fn descendants(root: i32) -> Vec<ProcId> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<ProcId>> = HashMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some((ppid, start)) = stat(pid) {
            children
                .entry(ppid)
                .or_default()
                .push(ProcId { pid, start });
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            found.push(*child);
            queue.push(child.pid);
        }
    }
    found
}

/// Sends `signal` to `proc` only if it is still the process that was scanned: the signal goes
/// through a pidfd opened and then checked against the start time, so a reused pid is never hit.
fn signal_exact(proc: ProcId, signal: Signal) {
    // SAFETY: plain syscalls with integer arguments; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, proc.pid, 0) } as i32;
    if fd < 0 {
        // Kernels before 5.3 have no pidfds: fall back to a start-time check and kill().
        if stat(proc.pid).map(|(_, s)| s) == Some(proc.start) {
            let _ = nix::sys::signal::kill(Pid::from_raw(proc.pid), signal);
        }
        return;
    }
    if stat(proc.pid).map(|(_, s)| s) == Some(proc.start) {
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

/// Sleeps until the child `pid` exits or `limit` passes, whichever is first; returns at once if
/// it has exited already. The exit wakes the sleep through a pidfd, so the caller learns of it
/// without polling; on kernels before 5.3 (no pidfds) it sleeps a short slice (at most 10 ms)
/// and the caller checks again. Reaps nothing.
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

/// Sends SIGTERM to the process `pid` only if it is still the one that started at `start`
/// (through a pidfd, so a reused pid is never hit).
pub fn terminate_exact(pid: i32, start: u64) {
    signal_exact(ProcId { pid, start }, Signal::SIGTERM);
}

/// Reaps every exited child of this process without blocking; returns `(pid, status)` pairs.
pub(crate) fn reap_children() -> Vec<(i32, WaitStatus)> {
    let mut reaped = Vec::new();
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => break,
            Ok(status) => {
                if let Some(pid) = status.pid() {
                    reaped.push((pid.as_raw(), status));
                }
            }
        }
    }
    reaped
}

/// Ends every descendant of this process: freeze them all (so none forks while we sweep),
/// TERM, continue, wait up to `grace`, then KILL until a rescan finds nothing. Reaps as it goes
/// (this process is their subreaper). Returns the statuses it reaped.
pub fn terminate_descendants(grace: Duration) -> Vec<(i32, WaitStatus)> {
    let me = std::process::id() as i32;
    // Every descendant has a parent chain up to us, and an orphan within our tree is handed
    // to us (the subreaper): with no child at all there is no descendant to end, and the scans
    // of every process in `/proc` below (most of a run's end on a busy machine) are skipped.
    if has_no_children() {
        return Vec::new();
    }
    let mut reaped = Vec::new();
    let mut frozen: Vec<ProcId> = Vec::new();
    for _ in 0..20 {
        let fresh: Vec<ProcId> = descendants(me)
            .into_iter()
            .filter(|p| !frozen.contains(p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for p in &fresh {
            signal_exact(*p, Signal::SIGSTOP);
        }
        frozen.extend(fresh);
    }
    for p in &frozen {
        signal_exact(*p, Signal::SIGTERM);
        signal_exact(*p, Signal::SIGCONT);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        reaped.extend(reap_children());
        if live(descendants(me)).is_empty() {
            return reaped;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..200 {
        let left = descendants(me);
        if live(left.clone()).is_empty() {
            break;
        }
        for p in left {
            signal_exact(p, Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
        reaped.extend(reap_children());
    }
    reaped.extend(reap_children());
    reaped
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

/// Drops zombies: they are dead and only wait to be reaped.
fn live(procs: Vec<ProcId>) -> Vec<ProcId> {
    procs.into_iter().filter(|p| is_running(p.pid)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_a_command_name_with_spaces_and_parens() {
        // Our own stat line is real; the parser must find ppid and a start time.
        let me = std::process::id() as i32;
        let (ppid, start) = stat(me).expect("own stat");
        assert_eq!(ppid, nix::unistd::getppid().as_raw());
        assert!(start > 0);
    }

    #[test]
    fn a_child_that_exited_counts_as_a_child_and_is_left_to_be_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        // Wait for its exit without reaping it.
        nix::sys::wait::waitid(
            nix::sys::wait::Id::Pid(pid),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        )
        .unwrap();
        assert!(!has_no_children(), "an unreaped child is a child");
        assert!(child.wait().unwrap().success(), "its status is still there");
    }

    #[test]
    fn descendants_include_grandchildren() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let child_pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        let me = std::process::id() as i32;
        // Only this test's processes: other tests of this process start children of their own,
        // which must be neither counted nor killed here.
        let mut grandchildren = Vec::new();
        let mut seen_from_me = Vec::new();
        while Instant::now() < deadline {
            grandchildren = descendants(child_pid);
            seen_from_me = descendants(me)
                .into_iter()
                .filter(|p| p.pid == child_pid || grandchildren.contains(p))
                .collect();
            if !grandchildren.is_empty() && seen_from_me.len() > grandchildren.len() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for p in &grandchildren {
            let _ = nix::sys::signal::kill(Pid::from_raw(p.pid), Signal::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            seen_from_me.len() >= 2,
            "child and grandchild, from this process: {seen_from_me:?}"
        );
    }
}
