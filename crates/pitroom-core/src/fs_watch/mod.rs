//! Watching state directories: the one type behind the slot queue, `wait`/`watch`, the MCP
//! server's notifications and the dashboard. inotify on Linux; kqueue (`EVFILT_VNODE`) on
//! macOS, which says *that* a watched directory changed but not which entry (every caller
//! re-reads on a change without a name) and does not see a file being closed (the slot queue's
//! re-check interval covers that). Not FSEvents: it needs Apple's frameworks, and the watched
//! directories are small. A third backend polls (`poll`: re-reads the watched directories every
//! 25 ms, with kqueue's nameless changes): chosen at run time when Pitroom runs portable
//! (`PITROOM_PORTABLE`), so Linux runs the paths macOS takes, and the one there is elsewhere.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::time::Duration;

#[cfg(target_os = "linux")]
mod inotify;
#[cfg(target_os = "linux")]
use inotify as native;

#[cfg(target_os = "macos")]
mod kqueue;
#[cfg(target_os = "macos")]
use kqueue as native;

mod poll;

/// The watch of one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Id {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    Native(native::Id),
    Polling(poll::Id),
}

/// The backend a [`Watch`] runs on.
enum Backend {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    Native(native::Watcher),
    Polling(poll::Watcher),
}

/// What a watch on a directory is for (on Linux, the inotify events of the same names; on
/// macOS every one of them is "the directory changed").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interest {
    pub create: bool,
    pub moved_to: bool,
    pub delete: bool,
    pub close_write: bool,
    pub modify: bool,
    /// Only if the path is a directory.
    pub only_dir: bool,
}

impl Interest {
    pub const CREATE: Interest = Interest::none().with_create();
    pub const MOVED_TO: Interest = Interest::none().with_moved_to();
    pub const DELETE: Interest = Interest::none().with_delete();
    pub const CLOSE_WRITE: Interest = Interest::none().with_close_write();
    pub const MODIFY: Interest = Interest::none().with_modify();

    const fn none() -> Interest {
        Interest {
            create: false,
            moved_to: false,
            delete: false,
            close_write: false,
            modify: false,
            only_dir: false,
        }
    }
    pub const fn with_create(mut self) -> Interest {
        self.create = true;
        self
    }
    pub const fn with_moved_to(mut self) -> Interest {
        self.moved_to = true;
        self
    }
    pub const fn with_delete(mut self) -> Interest {
        self.delete = true;
        self
    }
    pub const fn with_close_write(mut self) -> Interest {
        self.close_write = true;
        self
    }
    pub const fn with_modify(mut self) -> Interest {
        self.modify = true;
        self
    }
    pub const fn only_dir(mut self) -> Interest {
        self.only_dir = true;
        self
    }
}

/// One watch of a [`Watch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WatchId(Id);

/// Something that happened under a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub watch: WatchId,
    /// The entry of the watched directory it concerns; `None` when the platform does not say
    /// (kqueue): the caller re-reads the directory.
    pub name: Option<OsString>,
    /// The entry is a directory.
    pub is_dir: bool,
    /// The entry was deleted.
    pub deleted: bool,
    /// The watch itself is gone (its directory was removed).
    pub ignored: bool,
}

/// A set of directory watches, closed on a thread of its own when dropped. Closing an inotify
/// descriptor waits for the kernel's grace period (6–15 ms seen on the 2-core machine, more
/// under load), which whoever dropped it would otherwise spend: a run on its way to its
/// worker, an MCP answer on its way out.
pub struct Watch(Option<Backend>);

impl Watch {
    /// The platform's watch (inotify, kqueue), or the polling one where there is none or when
    /// Pitroom runs portable ([`pitroom_proc::PORTABLE_ENV`] in this process's environment).
    pub fn new() -> io::Result<Watch> {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if !pitroom_proc::portable() {
            return native::Watcher::new().map(|w| Watch(Some(Backend::Native(w))));
        }
        Watch::polling()
    }

    /// A watch that re-reads its directories every 25 ms and reports changes without names.
    pub fn polling() -> io::Result<Watch> {
        poll::Watcher::new().map(|w| Watch(Some(Backend::Polling(w))))
    }

    /// Whether this watch names the entries that changed (inotify); when not, every change
    /// has `name: None` and the caller re-reads the directory.
    pub fn names_entries(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            matches!(self.0, Some(Backend::Native(_)))
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    fn inner(&self) -> io::Result<&Backend> {
        // Only `drop` takes it out.
        self.0
            .as_ref()
            .ok_or_else(|| io::Error::other("a watch is used after it was dropped"))
    }

    /// Watches `path` for `interest`.
    pub fn add(&self, path: &Path, interest: Interest) -> io::Result<WatchId> {
        match self.inner()? {
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Backend::Native(w) => w.add(path, interest).map(|id| WatchId(Id::Native(id))),
            Backend::Polling(w) => w.add(path, interest).map(|id| WatchId(Id::Polling(id))),
        }
    }

    /// Sleeps until something is there to read, or `limit` passes (an interrupted sleep ends
    /// early and is no error).
    pub fn wait(&self, limit: Duration) -> io::Result<()> {
        match self.inner()? {
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Backend::Native(w) => w.wait(limit),
            Backend::Polling(w) => w.wait(limit),
        }
    }

    /// The changes ready now, without blocking; empty when there are none.
    pub fn read(&self) -> io::Result<Vec<Change>> {
        match self.inner()? {
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Backend::Native(w) => w.read(),
            Backend::Polling(w) => w.read(),
        }
    }

    /// Reads until nothing is left (the content does not matter to the caller).
    pub fn drain(&self) -> io::Result<()> {
        while !self.read()?.is_empty() {}
        Ok(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let Some(watcher) = self.0.take() else { return };
        // A thread that cannot start leaves the close here: slower, never wrong.
        if let Err(e) = std::thread::Builder::new()
            .name("fs-watch-close".into())
            .spawn(move || drop(watcher))
        {
            tracing::debug!("closing a file-system watch in place: {e}");
        }
    }
}

/// The milliseconds of `limit` as the poll-style timeouts take them (at most `u16::MAX`).
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn millis(limit: Duration) -> u16 {
    u16::try_from(limit.as_millis()).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits up to a few seconds for the changes of one step, collecting what comes.
    fn changes_within(watch: &Watch, limit: Duration) -> Vec<Change> {
        let deadline = std::time::Instant::now() + limit;
        let mut seen = Vec::new();
        while seen.is_empty() && std::time::Instant::now() < deadline {
            watch.wait(Duration::from_millis(100)).expect("waits");
            seen.extend(watch.read().expect("reads"));
        }
        seen
    }

    #[test]
    fn a_new_entry_and_a_rename_into_a_watched_directory_are_seen_on_their_watch() {
        a_new_entry_and_a_rename_are_seen(Watch::new().expect("a watch"));
    }

    #[test]
    fn the_polling_watch_sees_a_new_entry_and_a_rename_without_naming_them() {
        let watch = Watch::polling().expect("a watch");
        assert!(!watch.names_entries());
        a_new_entry_and_a_rename_are_seen(watch);
    }

    fn a_new_entry_and_a_rename_are_seen(watch: Watch) {
        let dir = tempfile::tempdir().expect("temp dir");
        let id = watch
            .add(dir.path(), Interest::CREATE.with_moved_to().only_dir())
            .expect("watched");
        assert!(watch.read().expect("reads").is_empty(), "nothing yet");
        std::fs::create_dir(dir.path().join("run-1")).expect("mkdir");
        let seen = changes_within(&watch, Duration::from_secs(5));
        assert!(seen.iter().all(|c| c.watch == id), "{seen:?}");
        // inotify names the entry; kqueue (macOS) and polling only say the directory changed.
        if watch.names_entries() {
            assert!(
                seen.iter()
                    .any(|c| c.name.as_deref() == Some("run-1".as_ref()) && c.is_dir),
                "{seen:?}"
            );
        } else {
            assert!(!seen.is_empty());
        }
        std::fs::write(dir.path().join(".tmp"), b"x").expect("write");
        std::fs::rename(dir.path().join(".tmp"), dir.path().join("record.json")).expect("mv");
        let seen = changes_within(&watch, Duration::from_secs(5));
        assert!(!seen.is_empty(), "the rename is seen");
        watch.drain().expect("drains");
    }

    #[test]
    fn a_missing_directory_cannot_be_watched() {
        let dir = tempfile::tempdir().expect("temp dir");
        for watch in [Watch::new(), Watch::polling()] {
            let watch = watch.expect("a watch");
            assert!(watch
                .add(&dir.path().join("absent"), Interest::MOVED_TO)
                .is_err());
        }
    }

    #[test]
    fn the_polling_watch_sees_a_file_rewritten_and_its_directory_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let watched = dir.path().join("groups");
        std::fs::create_dir(&watched).expect("mkdir");
        std::fs::write(watched.join("g.json"), b"{}").expect("write");
        let watch = Watch::polling().expect("a watch");
        let id = watch.add(&watched, Interest::MODIFY).expect("watched");
        // Nothing changed: a wait lasts its whole limit and finds nothing.
        let started = std::time::Instant::now();
        watch.wait(Duration::from_millis(120)).expect("waits");
        assert!(started.elapsed() >= Duration::from_millis(120));
        assert!(watch.read().expect("reads").is_empty());
        // A rewrite of an entry, in one step (written beside the watched directory, renamed
        // over the entry), so no poll can see it half done.
        std::fs::write(dir.path().join("g.tmp"), b"{\"a\": 1}").expect("write");
        std::fs::rename(dir.path().join("g.tmp"), watched.join("g.json")).expect("rewrite");
        let seen = changes_within(&watch, Duration::from_secs(5));
        assert_eq!(
            seen,
            vec![Change {
                watch: id,
                name: None,
                is_dir: false,
                deleted: false,
                ignored: false
            }]
        );
        // Seen once: the next read finds nothing new.
        assert!(watch.read().expect("reads").is_empty());
        std::fs::remove_dir_all(&watched).expect("rm");
        let seen = changes_within(&watch, Duration::from_secs(5));
        assert!(seen.iter().any(|c| c.watch == id && c.ignored), "{seen:?}");
        // The watch is gone with its directory: nothing more comes of it.
        assert!(watch.read().expect("reads").is_empty());
    }

    #[test]
    fn the_polling_watch_refuses_a_file_where_a_directory_is_asked_for() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("f"), b"x").expect("write");
        let watch = Watch::polling().expect("a watch");
        assert!(watch
            .add(&dir.path().join("f"), Interest::CREATE.only_dir())
            .is_err());
    }
}
