//! Finding and ending a process tree through the platform's process table (`/proc` on
//! Linux, `libproc` on macOS: the `platform` module).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::platform;

/// A process seen in the process table: its pid and start time. The start time
/// tells a process from a later one that reused its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

/// `(ppid, start time)` of `pid`, from the platform's process table.
fn stat(pid: i32) -> Option<(i32, u64)> {
    platform::proc_stat(pid).map(|s| (s.ppid, s.start))
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
    let Some(second) = platform::second_arg(pid) else {
        return false;
    };
    second == crate::keeper::KEEPER_SUBCOMMAND.as_bytes()
        || second == crate::init::INIT_SUBCOMMAND.as_bytes()
}

/// Whether `pid` is running (exists and is not a zombie waiting to be reaped).
pub fn is_running(pid: i32) -> bool {
    platform::proc_stat(pid).is_some_and(|s| !s.zombie)
}

/// Every live descendant of `root`, parents before children.
pub fn descendants(root: i32) -> Vec<ProcId> {
    let mut children: HashMap<i32, Vec<ProcId>> = HashMap::new();
    for pid in platform::all_pids() {
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

/// Sends `signal` to `proc` only if it is still the process that was scanned (on Linux through
/// a pidfd, so a reused pid is never hit).
fn signal_exact(proc: ProcId, signal: Signal) {
    platform::signal_exact(proc.pid, proc.start, signal);
}

/// Sleeps until the child `pid` exits or `limit` passes, whichever is first; returns at once if
/// it has exited already (on Linux a pidfd wakes the sleep; elsewhere it sleeps a short slice
/// and the caller checks again). Reaps nothing.
pub(crate) fn sleep_until_exit(pid: i32, limit: Duration) {
    platform::sleep_until_exit(pid, limit);
}

/// Sends SIGTERM to the process `pid` only if it is still the one that started at `start`
/// (through a pidfd, so a reused pid is never hit).
pub fn terminate_exact(pid: i32, start: u64) {
    signal_exact(ProcId { pid, start }, Signal::SIGTERM);
}

/// Ends what a dead keeper's worker tree left behind, where only the sweep held it (no PID
/// namespace): every process of this user that carries the tree's `PITROOM_TREE` mark (see
/// [`crate::ContainmentReport::tree_mark`]). Nothing is done while the keeper that made the mark
/// (`<pid>-<start>`) still runs: its own sweep is on the way. Returns how many were killed.
pub fn sweep_marked_orphans(mark: &str) -> usize {
    let keeper = mark
        .split_once('-')
        .and_then(|(pid, start)| Some((pid.parse::<i32>().ok()?, start.parse::<u64>().ok()?)));
    let Some((keeper_pid, keeper_start)) = keeper else {
        return 0;
    };
    if platform::proc_stat(keeper_pid).is_some_and(|s| s.start == keeper_start && !s.zombie) {
        return 0;
    }
    let entry = format!("{}={mark}", crate::platform::TREE_MARK_ENV).into_bytes();
    let me = std::process::id() as i32;
    let marked: Vec<ProcId> = crate::platform::all_pids()
        .into_iter()
        .filter(|pid| *pid != me && crate::platform::env_has(*pid, &entry))
        .filter_map(|pid| {
            let stat = platform::proc_stat(pid).filter(|s| !s.zombie)?;
            Some(ProcId {
                pid,
                start: stat.start,
            })
        })
        .collect();
    for proc in &marked {
        signal_exact(*proc, Signal::SIGKILL);
    }
    marked.len()
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
    // (Without a subreaper — macOS — an orphan of the tree has another parent: it is found
    // by the worker's session instead, `platform::session_members`.)
    if has_no_children() && platform::session_members(me).is_empty() {
        return Vec::new();
    }
    let mut reaped = Vec::new();
    let mut frozen: Vec<ProcId> = Vec::new();
    for _ in 0..20 {
        let fresh: Vec<ProcId> = tree_of(me)
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
        if live(tree_of(me)).is_empty() {
            return reaped;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..200 {
        let left = tree_of(me);
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

/// Whether this process has no child at all, running or exited and unreaped. Only looks: an
/// exited child stays to be reaped by its owner.
pub(crate) fn has_no_children() -> bool {
    platform::has_no_children()
}

/// What the sweep ends: every descendant of `me`, and (where there is no subreaper) every
/// process left in the sessions of the worker trees `me` started.
fn tree_of(me: i32) -> Vec<ProcId> {
    let mut procs = descendants(me);
    for (pid, start) in platform::session_members(me) {
        let proc = ProcId { pid, start };
        if !procs.contains(&proc) {
            procs.push(proc);
        }
    }
    procs
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

    // `waitid` with `WNOWAIT` (to see the exit without reaping it) is Linux's in `nix`.
    #[cfg(target_os = "linux")]
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
