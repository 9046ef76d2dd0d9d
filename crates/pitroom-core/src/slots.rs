//! Worker slots: at most `max_parallel` workers at once across every Pitroom process, the rest
//! queued in order of arrival.
//!
//! Everything is an OS lock the kernel releases when its holder dies, so a crash never leaves a
//! stale slot or a stuck queue, and there are no pid files:
//!
//! - A **slot** is a file `slots/slot-N` locked with `flock`. A run holds one while its worker runs.
//! - A **ticket** is a file `queue/<run id>` its run keeps locked while it waits. Run ids sort by
//!   creation time, so the queue's order is the order in which runs were created, whichever
//!   process created them. A ticket whose lock is free belongs to a dead process and is removed.
//! - Deciding who may take a free slot happens under one short lock (`queue/.decide`), so a
//!   waiter that only probes a slot never hides it from the waiter whose turn it is.
//!
//! - A **lane** (`max_parallel_per`: a backend or `backend:model` with its own limit) is a set of
//!   files `slots/lane-<key>-N`; a run of a lane holds one of them too. Its ticket names its lane,
//!   so the decision sees which waiters ahead are held back by a full lane: those do not hold
//!   back the runs behind them, which go ahead on other targets.
//!
//! Waiters sleep on inotify: a holder closing its slot file (`IN_CLOSE_WRITE`, also when the
//! kernel closes it for a dead process) and a ticket leaving the queue (`IN_DELETE`) wake them,
//! so a queued run starts within milliseconds of a slot freeing. Probing opens nothing in the
//! watched directories, so waiters never wake each other in a loop.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::fs_watch::{Interest, Watch};

/// The default number of workers that may run at once.
pub const DEFAULT_MAX_PARALLEL: usize = 20;
/// The most `max_parallel` may be set to.
pub const MAX_PARALLEL_CAP: usize = 30;

/// How long a waiter sleeps between checks when no event arrives: a safety net for a ticket
/// whose process died (that leaves no event) and the moment to look at the stop flag.
const RECHECK: Duration = Duration::from_millis(250);

/// A target's own limit (`max_parallel_per`): at most `slots` of its runs at once, within the
/// overall count.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lane {
    /// The configured key: a backend (`gemini`) or `backend:model`.
    pub key: String,
    pub slots: usize,
}

impl Lane {
    /// The lane's files' names in `slots/`: the key's characters a file name may not hold
    /// (`/`, and anything past plain ASCII) hex-escaped, so two keys never share files.
    fn file_stem(&self) -> String {
        let mut stem = String::from("lane-");
        for b in self.key.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':') {
                stem.push(b as char);
            } else {
                stem.push_str(&format!("%{b:02x}"));
            }
        }
        stem
    }

    fn file(&self, slots_dir: &Path, index: usize) -> PathBuf {
        slots_dir.join(format!("{}-{index}", self.file_stem()))
    }

    /// How a ticket names its lane: `<slots> <key>` (the key last: it may hold spaces).
    fn to_ticket(&self) -> String {
        format!("{} {}", self.slots, self.key)
    }

    fn from_ticket(text: &str) -> Option<Lane> {
        let (slots, key) = text.trim_end_matches('\n').split_once(' ')?;
        Some(Lane {
            key: key.to_string(),
            slots: slots.parse().ok().filter(|n| *n > 0)?,
        })
    }
}

/// The scheduler's directories under the state dir.
#[derive(Debug, Clone)]
pub struct Slots {
    slots_dir: PathBuf,
    queue_dir: PathBuf,
    count: usize,
    /// The lane of the runs this scheduler queues, if their target has a limit of its own.
    lane: Option<Lane>,
    /// The safety-net re-check for a dead waiter's ticket (events do the real waking).
    recheck: Duration,
}

/// A place in the queue. Dropping it leaves the queue.
#[derive(Debug)]
pub struct Ticket {
    file: File,
    path: PathBuf,
    /// Whether dropping it leaves the queue (false once handed down to another process).
    owned: bool,
}

/// A held slot. Dropping it frees the slot (and wakes the next waiter).
#[derive(Debug)]
pub struct Slot {
    index: usize,
    grant: u64,
    _file: File,
    /// The lane's file, for a run of a lane.
    _lane: Option<File>,
}

impl Slot {
    pub fn index(&self) -> usize {
        self.index
    }

    /// The slot's place in the order the scheduler granted slots in this state directory
    /// (1, 2, 3, …, across processes): the fact that says which run was let go first, where
    /// start times taken a moment later may not.
    pub fn grant(&self) -> u64 {
        self.grant
    }
}

/// What one decision granted: the slot's index, the lane file's (for a run of a lane), and the
/// grant number.
struct Taken {
    slot: usize,
    lane: Option<usize>,
    grant: u64,
}

impl Taken {
    /// The held slot: the granted files taken out of the waiter's open ones (still locked).
    fn into_slot(self, slot_files: &mut Vec<File>, lane_files: &mut Vec<File>) -> Slot {
        Slot {
            index: self.slot,
            grant: self.grant,
            _file: slot_files.swap_remove(self.slot),
            _lane: self.lane.map(|i| lane_files.swap_remove(i)),
        }
    }
}

/// Locks every free file of `files` (non-blocking) and returns their indexes.
fn take_free(files: &[File]) -> io::Result<Vec<usize>> {
    let mut free = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if lock(f, libc::LOCK_EX | libc::LOCK_NB)? {
            free.push(i);
        }
    }
    Ok(free)
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Removed before the descriptor closes: no waiter ever sees our ticket without its lock.
        if self.owned {
            crate::log::remove_file(&self.path, "the slot ticket");
        }
    }
}

impl AsRawFd for Ticket {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl Ticket {
    /// Adopts a ticket descriptor handed down by the process that queued the run.
    ///
    /// # Safety
    /// `fd` must be an open descriptor holding the ticket's lock, owned by nobody else here.
    pub unsafe fn from_raw_fd(fd: RawFd, slots: &Slots, run_id: &str) -> Ticket {
        // Keep it from leaking into the worker's processes.
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        Ticket {
            file: File::from_raw_fd(fd),
            path: slots.queue_dir.join(run_id),
            owned: true,
        }
    }

    /// Lets go of the ticket without leaving the queue: another process holds the same lock
    /// (a supervisor the descriptor was handed down to).
    pub fn forget(mut self) {
        self.owned = false;
    }

    fn name(&self) -> Option<&str> {
        self.path.file_name().and_then(|n| n.to_str())
    }
}

/// The clamped number of slots for a configured `max_parallel`.
pub fn clamp_parallel(requested: usize) -> usize {
    requested.clamp(1, MAX_PARALLEL_CAP)
}

impl Slots {
    /// The scheduler under `state_dir` with `count` slots (clamped to 1..=30).
    pub fn new(state_dir: &Path, count: usize) -> Slots {
        Slots {
            slots_dir: state_dir.join("slots"),
            queue_dir: state_dir.join("queue"),
            count: clamp_parallel(count),
            lane: None,
            recheck: RECHECK,
        }
    }

    /// The same slots for runs of `lane` (a target with a limit of its own), if any.
    pub fn in_lane(mut self, lane: Option<Lane>) -> Slots {
        self.lane = lane.map(|l| Lane {
            slots: clamp_parallel(l.slots),
            ..l
        });
        self
    }

    /// The same slots with another safety-net re-check (tests switch it off to prove that the
    /// file-system events alone wake a waiter).
    pub fn with_recheck(mut self, recheck: Duration) -> Slots {
        self.recheck = recheck;
        self
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Joins the queue as `run_id`. The ticket is locked before it becomes visible (it is
    /// created under a temporary name and renamed), so no waiter mistakes it for a dead one.
    pub fn enqueue(&self, run_id: &str) -> io::Result<Ticket> {
        std::fs::create_dir_all(&self.queue_dir)?;
        let staging = self
            .queue_dir
            .join(format!(".new-{run_id}-{}", std::process::id()));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&staging)?;
        lock(&file, libc::LOCK_EX | libc::LOCK_NB)?;
        if let Some(lane) = &self.lane {
            use std::io::Write;
            file.write_all(lane.to_ticket().as_bytes())?;
        }
        let path = self.queue_dir.join(run_id);
        std::fs::rename(&staging, &path)?;
        Ok(Ticket {
            file,
            path,
            owned: true,
        })
    }

    /// Waits for this ticket's turn and a free slot. Returns `None` when `stop` is set first.
    pub fn acquire(&self, ticket: Ticket, stop: &AtomicBool) -> io::Result<Option<Slot>> {
        std::fs::create_dir_all(&self.slots_dir)?;
        // Opened once and kept: opening a slot file while waiting would wake the others.
        let mut slot_files = (0..self.count)
            .map(|i| self.open_slot(i))
            .collect::<io::Result<Vec<File>>>()?;
        let mut lane_files = self.open_lane()?;
        // The watch is made only for a run that has to wait: closing an inotify descriptor
        // waits for the kernel's grace period (6–15 ms seen here), which a run granted a slot
        // at once would otherwise pay before its tree is prepared. A slot freed between the
        // first look and the watch is seen by the look that follows the watch.
        // Dropped on every way out, it is closed off the run's path (`fs_watch::Watch`).
        let mut watch: Option<Watch> = None;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            if let Some(taken) = self.try_take(&ticket, &slot_files, &lane_files)? {
                let slot = taken.into_slot(&mut slot_files, &mut lane_files);
                drop(ticket);
                return Ok(Some(slot));
            }
            match &watch {
                Some(watch) => wait_for_event(watch, self.recheck)?,
                None => watch = Some(self.watch_for_turns()?),
            }
        }
    }

    /// The events that may give a waiter its turn: a slot file closed by its holder, a ticket
    /// leaving the queue.
    /// (kqueue on macOS sees no file being closed: there a freed slot is seen by the re-check
    /// every `recheck`; a ticket leaving the queue still wakes the waiters.)
    fn watch_for_turns(&self) -> io::Result<Watch> {
        let watch = Watch::new()?;
        watch.add(&self.slots_dir, Interest::CLOSE_WRITE)?;
        watch.add(&self.queue_dir, Interest::DELETE)?;
        Ok(watch)
    }

    /// Takes a slot without queueing, if one is free (for tests and tools).
    pub fn try_acquire_now(&self, run_id: &str) -> io::Result<Option<Slot>> {
        let ticket = self.enqueue(run_id)?;
        std::fs::create_dir_all(&self.slots_dir)?;
        let mut files = (0..self.count)
            .map(|i| self.open_slot(i))
            .collect::<io::Result<Vec<File>>>()?;
        let mut lane_files = self.open_lane()?;
        Ok(self
            .try_take(&ticket, &files, &lane_files)?
            .map(|taken| taken.into_slot(&mut files, &mut lane_files)))
    }

    /// One decision, under the queue's decision lock: the slot (and lane file) this ticket may
    /// keep, locked, with its grant number; `None` when it is not its turn or nothing is free.
    ///
    /// The waiters ahead are served first, in order, each as far as the slots let it: one whose
    /// lane is full is passed over (it cannot start, so it holds no one back), and each one that
    /// could start takes a free slot, and a place in its lane, before this ticket gets any.
    fn try_take(
        &self,
        ticket: &Ticket,
        slot_files: &[File],
        lane_files: &[File],
    ) -> io::Result<Option<Taken>> {
        let mut decide = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(self.queue_dir.join(".decide"))?;
        lock(&decide, libc::LOCK_EX)?;
        let ahead = self.live_tickets_ahead(ticket)?;
        let free = take_free(slot_files)?;
        let free_in_mine = take_free(lane_files)?;
        let mut lanes_free: Vec<(String, usize)> = Vec::new();
        if let Some(mine) = &self.lane {
            lanes_free.push((mine.key.clone(), free_in_mine.len()));
        }
        let mut slots_left = free.len();
        for lane in &ahead {
            if slots_left == 0 {
                break;
            }
            if let Some(lane) = lane {
                let at = match lanes_free.iter().position(|(k, _)| *k == lane.key) {
                    Some(at) => at,
                    None => {
                        lanes_free.push((lane.key.clone(), self.free_in(lane)?));
                        lanes_free.len() - 1
                    }
                };
                if lanes_free[at].1 == 0 {
                    continue;
                }
                lanes_free[at].1 -= 1;
            }
            slots_left -= 1;
        }
        let lane_ok = self.lane.is_none() || lanes_free.first().is_some_and(|(_, n)| *n > 0);
        let taken = (slots_left > 0 && lane_ok).then(|| Taken {
            slot: free[0],
            lane: free_in_mine.first().copied(),
            grant: 0,
        });
        for &i in free
            .iter()
            .filter(|&&i| taken.as_ref().map(|t| t.slot) != Some(i))
        {
            unlock(&slot_files[i]);
        }
        let kept_lane = taken.as_ref().and_then(|t| t.lane);
        for &i in free_in_mine.iter().filter(|&&i| kept_lane != Some(i)) {
            unlock(&lane_files[i]);
        }
        match taken {
            Some(t) => Ok(Some(Taken {
                grant: next_grant(&mut decide)?,
                ..t
            })),
            None => Ok(None),
        }
    }

    /// How many of `lane`'s files no run holds. Opened read-only, so closing them wakes no
    /// waiter (only a holder's close, `IN_CLOSE_WRITE`, does); one never created is free.
    fn free_in(&self, lane: &Lane) -> io::Result<usize> {
        let mut free = 0;
        for index in 0..clamp_parallel(lane.slots) {
            let file = match File::open(lane.file(&self.slots_dir, index)) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    free += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if lock(&file, libc::LOCK_SH | libc::LOCK_NB)? {
                free += 1;
            }
        }
        Ok(free)
    }

    /// The live tickets created before this one, oldest first, each with its lane; removes the
    /// tickets of dead waiters.
    fn live_tickets_ahead(&self, ticket: &Ticket) -> io::Result<Vec<Option<Lane>>> {
        let Some(mine) = ticket.name() else {
            return Ok(Vec::new());
        };
        let mut ahead: Vec<(String, Option<Lane>)> = Vec::new();
        for entry in std::fs::read_dir(&self.queue_dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') || name >= mine {
                continue;
            }
            if ticket_is_live(&entry.path())? {
                // A ticket with no lane, or one written before lanes, reads as none.
                let lane = std::fs::read_to_string(entry.path())
                    .ok()
                    .and_then(|text| Lane::from_ticket(&text));
                ahead.push((name.to_string(), lane));
            }
        }
        ahead.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(ahead.into_iter().map(|(_, lane)| lane).collect())
    }

    /// The queue: the run ids waiting, in order (dead waiters' tickets skipped).
    pub fn queued(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.queue_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| !n.starts_with('.'))
            .filter(|n| ticket_is_live(&self.queue_dir.join(n)).unwrap_or(false))
            .collect();
        ids.sort();
        ids
    }

    /// This scheduler's lane files, opened for writing and kept (a holder's close wakes the
    /// waiters); none without a lane.
    fn open_lane(&self) -> io::Result<Vec<File>> {
        let Some(lane) = &self.lane else {
            return Ok(Vec::new());
        };
        std::fs::create_dir_all(&self.slots_dir)?;
        (0..lane.slots)
            .map(|i| {
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(lane.file(&self.slots_dir, i))
            })
            .collect()
    }

    fn open_slot(&self, index: usize) -> io::Result<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.slots_dir.join(format!("slot-{index}")))
    }
}

/// Whether a ticket's owner still holds it; a dead owner's ticket is removed.
fn ticket_is_live(path: &Path) -> io::Result<bool> {
    // Read-only: closing it raises IN_CLOSE_NOWRITE, which no waiter listens to.
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if lock(&file, libc::LOCK_SH | libc::LOCK_NB)? {
        // Another waiter may remove it first; one left behind is unlocked, so dead all the same.
        crate::log::remove_file(path, "a dead run's slot ticket");
        return Ok(false);
    }
    Ok(true)
}

/// `flock`; `Ok(false)` when a non-blocking request would block.
/// Counts a grant in the decision file (held locked by the caller) and returns its number.
fn next_grant(decide: &mut File) -> io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut text = String::new();
    decide.seek(SeekFrom::Start(0))?;
    decide.read_to_string(&mut text)?;
    // A file from before grants were counted is empty: counting starts again at 1.
    let grant = text.trim().parse::<u64>().unwrap_or(0) + 1;
    decide.set_len(0)?;
    decide.seek(SeekFrom::Start(0))?;
    decide.write_all(grant.to_string().as_bytes())?;
    Ok(grant)
}

fn lock(file: &File, operation: i32) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(err),
        }
    }
}

fn unlock(file: &File) {
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// Sleeps until a watched event or `timeout`, then drains the events (their content does not
/// matter: every wake leads to one fresh decision).
fn wait_for_event(watch: &Watch, timeout: Duration) -> io::Result<()> {
    watch.wait(timeout)?;
    watch.drain()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn queued_runs_take_slots_in_arrival_order_and_never_exceed_the_count() {
        let dir = tempfile::tempdir().unwrap();
        let slots = Slots::new(dir.path(), 2);
        let ids: Vec<String> = (0..6).map(|i| format!("run-{i}")).collect();
        let tickets: Vec<Ticket> = ids.iter().map(|id| slots.enqueue(id).unwrap()).collect();
        let order = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, peak)
        let stop = Arc::new(AtomicBool::new(false));
        // Start the waiters in reverse, so arrival order is not thread start order.
        let handles: Vec<_> = ids
            .into_iter()
            .zip(tickets)
            .rev()
            .map(|(id, ticket)| {
                let (slots, order, running, stop) = (
                    slots.clone(),
                    Arc::clone(&order),
                    Arc::clone(&running),
                    Arc::clone(&stop),
                );
                std::thread::spawn(move || {
                    let slot = slots.acquire(ticket, &stop).unwrap().unwrap();
                    {
                        let mut r = running.lock().unwrap();
                        r.0 += 1;
                        r.1 = r.1.max(r.0);
                        order.lock().unwrap().push((slot.grant(), id.clone()));
                    }
                    // Hold the slot until the next waiters are surely queued behind it.
                    std::thread::sleep(Duration::from_millis(50));
                    running.lock().unwrap().0 -= 1;
                    drop(slot);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // The scheduler's own grant numbers, not the order the threads got to a mutex.
        let mut order = order.lock().unwrap().clone();
        order.sort();
        let (_, peak) = *running.lock().unwrap();
        assert!(peak <= 2, "at most two at once, saw {peak}");
        // When two slots are free at once the next two waiters are both entitled and either
        // may take its slot first; no waiter ever passes more than that (a ticket with k
        // tickets ahead needs more than k free slots), so with two slots each run's grant is
        // within one place of its arrival.
        for (grant, id) in &order {
            let arrival: u64 = id[4..].parse().unwrap();
            assert!(
                grant.abs_diff(arrival + 1) <= 1,
                "{id} let go {grant}th: {order:?}"
            );
        }
        let grants: Vec<u64> = order.iter().map(|(g, _)| *g).collect();
        assert_eq!(grants, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_freed_slot_wakes_the_next_waiter_by_its_close_event_alone() {
        let dir = tempfile::tempdir().unwrap();
        // No safety-net re-check within the test's life: only the close event can wake it.
        let slots = Slots::new(dir.path(), 1).with_recheck(Duration::from_secs(3600));
        let held = slots.try_acquire_now("a").unwrap().expect("a free slot");
        let ticket = slots.enqueue("b").unwrap();
        let (tried, first_try) = std::sync::mpsc::channel();
        let (got, slot_taken) = std::sync::mpsc::channel();
        let waiter = {
            let slots = slots.clone();
            std::thread::spawn(move || {
                let stop = AtomicBool::new(false);
                // The waiter's first decision happens inside acquire; say when it is queued.
                tried.send(()).unwrap();
                let slot = slots.acquire(ticket, &stop).unwrap().unwrap();
                got.send((slot.index(), slot.grant())).unwrap();
            })
        };
        first_try.recv().unwrap();
        // Until the holder lets go, the waiter cannot have it.
        while slots.queued() != ["b"] {
            std::thread::yield_now();
        }
        assert!(slot_taken.try_recv().is_err(), "taken while still held");
        drop(held);
        let (index, grant) = slot_taken
            .recv_timeout(Duration::from_secs(60))
            .expect("the close event woke the waiter (the re-check is an hour away)");
        assert_eq!((index, grant), (0, 2));
        waiter.join().unwrap();
    }

    #[test]
    fn a_dead_waiters_ticket_does_not_block_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let slots = Slots::new(dir.path(), 1);
        // A ticket file nobody holds: what a crashed process leaves behind.
        std::fs::create_dir_all(dir.path().join("queue")).unwrap();
        std::fs::write(dir.path().join("queue/run-0"), "").unwrap();
        let ticket = slots.enqueue("run-1").unwrap();
        let stop = AtomicBool::new(false);
        let slot = slots.acquire(ticket, &stop).unwrap();
        assert!(slot.is_some());
        assert!(!dir.path().join("queue/run-0").exists());
        assert!(slots.queued().is_empty());
    }

    #[test]
    fn a_stop_ends_the_wait_without_a_slot() {
        let dir = tempfile::tempdir().unwrap();
        let slots = Slots::new(dir.path(), 1);
        let _held = slots.try_acquire_now("a").unwrap().expect("a free slot");
        let ticket = slots.enqueue("b").unwrap();
        let stop = AtomicBool::new(true);
        assert!(slots.acquire(ticket, &stop).unwrap().is_none());
        assert!(slots.queued().is_empty(), "the stopped run left the queue");
    }

    #[test]
    fn a_later_arrival_waits_while_an_earlier_one_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let slots = Slots::new(dir.path(), 1);
        let first = slots.enqueue("run-1").unwrap();
        let second = slots.enqueue("run-2").unwrap();
        std::fs::create_dir_all(&slots.slots_dir).unwrap();
        let files: Vec<File> = vec![slots.open_slot(0).unwrap()];
        assert!(slots.try_take(&second, &files, &[]).unwrap().is_none());
        assert_eq!(slots.queued(), ["run-1", "run-2"]);
        drop(first);
        assert_eq!(
            slots
                .try_take(&second, &files, &[])
                .unwrap()
                .map(|t| t.slot),
            Some(0)
        );
    }

    #[test]
    fn max_parallel_is_clamped_to_the_hard_cap() {
        assert_eq!(clamp_parallel(0), 1);
        assert_eq!(clamp_parallel(20), 20);
        assert_eq!(clamp_parallel(500), MAX_PARALLEL_CAP);
    }

    fn lane(key: &str, slots: usize) -> Option<Lane> {
        Some(Lane {
            key: key.into(),
            slots,
        })
    }

    /// One decision for `ticket`, with files opened as a waiter opens them; what it took is
    /// kept until the returned slot is dropped.
    fn decide(slots: &Slots, ticket: &Ticket) -> Option<Slot> {
        std::fs::create_dir_all(&slots.slots_dir).unwrap();
        let mut files: Vec<File> = (0..slots.count)
            .map(|i| slots.open_slot(i))
            .collect::<io::Result<_>>()
            .unwrap();
        let mut lane_files = slots.open_lane().unwrap();
        slots
            .try_take(ticket, &files, &lane_files)
            .unwrap()
            .map(|t| t.into_slot(&mut files, &mut lane_files))
    }

    #[test]
    fn a_full_lane_holds_back_its_own_runs_and_lets_the_runs_behind_them_go_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let gemini = Slots::new(dir.path(), 3).in_lane(lane("gemini", 1));
        let other = Slots::new(dir.path(), 3);
        let first = gemini.enqueue("run-1").unwrap();
        let second = gemini.enqueue("run-2").unwrap();
        let third = other.enqueue("run-3").unwrap();
        let running = decide(&gemini, &first).expect("the lane's first run starts");
        drop(first);
        assert!(decide(&gemini, &second).is_none(), "its lane is full");
        let ahead = decide(&other, &third).expect("another target's run goes ahead of it");
        assert_eq!((running.grant(), ahead.grant()), (1, 2));
        drop(running);
        let next = decide(&gemini, &second).expect("the lane freed: its next run starts");
        assert_eq!(next.grant(), 3);
    }

    #[test]
    fn a_run_whose_lane_has_room_keeps_its_place_ahead_of_later_runs() {
        let dir = tempfile::tempdir().unwrap();
        let plain = Slots::new(dir.path(), 1);
        let gemini = Slots::new(dir.path(), 1).in_lane(lane("gemini", 2));
        let first = plain.enqueue("run-1").unwrap();
        let second = gemini.enqueue("run-2").unwrap();
        let third = plain.enqueue("run-3").unwrap();
        let running = decide(&plain, &first).expect("the first run starts");
        drop(first);
        assert!(decide(&gemini, &second).is_none(), "no slot is free");
        drop(running);
        assert!(
            decide(&plain, &third).is_none(),
            "the run ahead could start: its turn comes first"
        );
        assert!(decide(&gemini, &second).is_some());
    }

    #[test]
    fn lanes_are_named_in_tickets_and_files_apart_from_one_another() {
        let key = lane("opencode:groq/kimi k2", 2).unwrap();
        assert_eq!(Lane::from_ticket(&key.to_ticket()), Some(key.clone()));
        assert_eq!(
            Lane::from_ticket(""),
            None,
            "a ticket of a run without a lane"
        );
        assert_eq!(Lane::from_ticket("0 gemini"), None, "no lane of no slots");
        let slash = lane("a/b", 1).unwrap().file_stem();
        let escaped = lane("a%2fb", 1).unwrap().file_stem();
        assert!(!slash.contains('/'), "{slash}");
        assert_ne!(slash, escaped);
    }
}
