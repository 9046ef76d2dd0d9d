//! Anywhere: re-reads each watched directory every [`INTERVAL`] and compares it with what it
//! saw last (the entries' names, inodes, sizes and modification times). Like kqueue it says
//! *that* a directory changed, not which entry; it sees a file written but not one closed
//! unchanged. Used when Pitroom runs portable (`PITROOM_PORTABLE`), so the nameless-change
//! paths macOS takes are run on Linux too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Change, Interest, WatchId};

/// How often a waiting watch re-reads its directories.
pub(super) const INTERVAL: Duration = Duration::from_millis(25);

/// A watch is named by the order it was added in.
pub(super) type Id = u32;

/// What one look at a watched path saw: for a directory, each entry's (inode, size, mtime);
/// for a file, its own under the empty name.
type Seen = BTreeMap<OsString, (u64, u64, i64, i64)>;

struct Watched {
    id: Id,
    path: PathBuf,
    seen: Seen,
}

#[derive(Default)]
struct State {
    watched: Vec<Watched>,
    /// Changes a `wait` found, kept for the next `read`.
    pending: Vec<Change>,
    next: Id,
}

pub(super) struct Watcher(Mutex<State>);

impl Watcher {
    pub(super) fn new() -> io::Result<Watcher> {
        Ok(Watcher(Mutex::new(State::default())))
    }

    fn state(&self) -> io::Result<std::sync::MutexGuard<'_, State>> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("a watcher's lock was poisoned"))
    }

    pub(super) fn add(&self, path: &Path, interest: Interest) -> io::Result<Id> {
        let meta = std::fs::metadata(path)?;
        if interest.only_dir && !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", path.display()),
            ));
        }
        let seen = look(path)?;
        let mut state = self.state()?;
        let id = state.next;
        state.next += 1;
        state.watched.push(Watched {
            id,
            path: path.to_path_buf(),
            seen,
        });
        Ok(id)
    }

    pub(super) fn wait(&self, limit: Duration) -> io::Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            {
                let mut state = self.state()?;
                let found = scan(&mut state);
                state.pending.extend(found);
                if !state.pending.is_empty() {
                    return Ok(());
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            std::thread::sleep(INTERVAL.min(deadline - now));
        }
    }

    pub(super) fn read(&self) -> io::Result<Vec<Change>> {
        let mut state = self.state()?;
        let mut changes = std::mem::take(&mut state.pending);
        changes.extend(scan(&mut state));
        Ok(changes)
    }
}

/// Re-reads every watched path: one nameless change per path that differs from its last look;
/// a path that is gone reports its watch ignored, once, and is dropped.
fn scan(state: &mut State) -> Vec<Change> {
    let mut changes = Vec::new();
    state.watched.retain_mut(|w| match look(&w.path) {
        Ok(seen) => {
            if seen != w.seen {
                w.seen = seen;
                changes.push(nameless(w.id, false));
            }
            true
        }
        Err(_) => {
            changes.push(nameless(w.id, true));
            false
        }
    });
    changes
}

fn nameless(id: Id, ignored: bool) -> Change {
    Change {
        watch: WatchId(super::Id::Polling(id)),
        name: None,
        is_dir: false,
        deleted: false,
        ignored,
    }
}

fn stamp(meta: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec())
}

fn look(path: &Path) -> io::Result<Seen> {
    let meta = std::fs::metadata(path)?;
    let mut seen = Seen::new();
    if !meta.is_dir() {
        seen.insert(OsString::new(), stamp(&meta));
        return Ok(seen);
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        // An entry removed between the listing and its stat is simply not there.
        if let Ok(meta) = entry.metadata() {
            seen.insert(entry.file_name(), stamp(&meta));
        }
    }
    Ok(seen)
}
