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

/// A session of a worker tree this process started: its id and the start time of its leader
/// (the worker), so that a stranger who later gets the same number is told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session {
    pub sid: i32,
    pub leader_start: u64,
}

/// The sessions of the worker trees this process started: without a subreaper (macOS, or
/// Linux running portable), their orphans are found by session id.
static SESSIONS: std::sync::Mutex<Vec<Session>> = std::sync::Mutex::new(Vec::new());

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
    let Some(leader) = proc_stat(sid) else {
        return;
    };
    if let Ok(mut sessions) = SESSIONS.lock() {
        sessions.push(Session {
            sid,
            leader_start: leader.start,
        });
    }
}

/// A live process as the sweep sees it: its pid, start time and session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    pub pid: i32,
    pub start: u64,
    pub sid: i32,
}

/// Whether `session` is still the worker tree's, given every process now in a session of that
/// id. A session only gains members by a member's fork, so one found empty can never hold
/// anything of the tree again; and its id stays taken while it has members, so a process whose
/// pid is the id but which is not the leader that started then is a stranger who got the number
/// after the tree's session emptied. Either way the id is dropped for good: a sweep must never
/// reach a process that is not the tree's.
pub(crate) fn session_is_still_the_trees(session: Session, members: &[Member]) -> bool {
    !members.is_empty()
        && !members
            .iter()
            .any(|m| m.pid == session.sid && m.start != session.leader_start)
}

/// Every live process (pid, start time) in a remembered session or carrying this process's
/// [`TREE_MARK_ENV`], other than `me`. Sessions that emptied or were taken by a stranger are
/// forgotten here ([`session_is_still_the_trees`]).
pub(crate) fn session_members(me: i32) -> Vec<(i32, u64)> {
    let Ok(mut sessions) = SESSIONS.lock() else {
        return Vec::new();
    };
    let mark = MARK.lock().ok().and_then(|m| m.clone());
    if sessions.is_empty() && mark.is_none() {
        return Vec::new();
    }
    let live: Vec<(Member, bool)> = all_pids()
        .into_iter()
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let stat = proc_stat(pid).filter(|s| !s.zombie)?;
            let sid = nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).ok()?;
            let marked = mark.as_deref().is_some_and(|mark| env_has(pid, mark));
            let member = Member {
                pid,
                start: stat.start,
                sid: sid.as_raw(),
            };
            Some((member, marked))
        })
        .collect();
    sessions.retain(|session| {
        let members: Vec<Member> = live
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| m.sid == session.sid)
            .collect();
        session_is_still_the_trees(*session, &members)
    });
    live.into_iter()
        .filter(|(m, marked)| *marked || sessions.iter().any(|s| s.sid == m.sid))
        .map(|(m, _)| (m.pid, m.start))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: Session = Session {
        sid: 700,
        leader_start: 5_000,
    };

    fn member(pid: i32, start: u64, sid: i32) -> Member {
        Member { pid, start, sid }
    }

    #[test]
    fn a_session_with_its_leader_or_its_orphans_is_still_the_trees() {
        assert!(session_is_still_the_trees(TREE, &[member(700, 5_000, 700)]));
        assert!(session_is_still_the_trees(
            TREE,
            &[member(731, 5_100, 700), member(732, 5_200, 700)]
        ));
    }

    #[test]
    fn an_emptied_session_is_forgotten_for_good() {
        assert!(!session_is_still_the_trees(TREE, &[]));
    }

    #[test]
    fn a_stranger_that_got_the_session_id_after_it_emptied_is_never_the_trees() {
        // Pid 700 again, started later: a new session leader (`setsid`) that only shares the
        // number; its own children share its session id too.
        let stranger = [member(700, 9_000, 700), member(701, 9_001, 700)];
        assert!(!session_is_still_the_trees(TREE, &stranger));
    }
}
