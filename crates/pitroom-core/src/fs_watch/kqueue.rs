//! macOS: kqueue `EVFILT_VNODE` on each watched directory's descriptor. A directory's vnode
//! reports a write when an entry is created, renamed in or out, or deleted; which entry, it
//! does not say.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use nix::fcntl::{open, OFlag};
use nix::sys::event::{EventFilter, EventFlag, FilterFlag, KEvent, Kqueue};
use nix::sys::stat::Mode;

use super::{Change, Interest, WatchId};

/// A watch is named by its directory's descriptor.
pub(super) type Id = i32;

pub(super) struct Watcher {
    queue: Kqueue,
    /// The watched directories' descriptors: a kqueue watch lives as long as its descriptor.
    dirs: Mutex<Vec<OwnedFd>>,
}

impl Watcher {
    pub(super) fn new() -> io::Result<Watcher> {
        Ok(Watcher {
            queue: Kqueue::new()?,
            dirs: Mutex::new(Vec::new()),
        })
    }

    pub(super) fn add(&self, path: &Path, interest: Interest) -> io::Result<Id> {
        // O_EVTONLY: a descriptor for events only, which does not keep a volume from being
        // unmounted.
        let mut oflags = OFlag::from_bits_retain(libc::O_EVTONLY) | OFlag::O_CLOEXEC;
        if interest.only_dir {
            oflags |= OFlag::O_DIRECTORY;
        }
        let raw = open(path, oflags, Mode::empty())?;
        // SAFETY: `open` just returned this descriptor and nothing else owns it.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        let change = KEvent::new(
            fd.as_raw_fd() as usize,
            EventFilter::EVFILT_VNODE,
            EventFlag::EV_ADD | EventFlag::EV_CLEAR,
            FilterFlag::NOTE_WRITE
                | FilterFlag::NOTE_EXTEND
                | FilterFlag::NOTE_ATTRIB
                | FilterFlag::NOTE_DELETE
                | FilterFlag::NOTE_RENAME,
            0,
            0,
        );
        self.queue.kevent(&[change], &mut [], None)?;
        let id = fd.as_raw_fd();
        self.dirs
            .lock()
            .map_err(|_| io::Error::other("a watcher's lock was poisoned"))?
            .push(fd);
        Ok(id)
    }

    pub(super) fn wait(&self, limit: Duration) -> io::Result<()> {
        // Peeks only: the events stay queued for `read` (EV_CLEAR keeps one per vnode, so a
        // second look sees the same ones). A kqueue descriptor is pollable.
        let mut fds = [nix::poll::PollFd::new(
            std::os::fd::AsFd::as_fd(&self.queue),
            nix::poll::PollFlags::POLLIN,
        )];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(super::millis(limit))) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn read(&self) -> io::Result<Vec<Change>> {
        let empty = KEvent::new(
            0,
            EventFilter::EVFILT_VNODE,
            EventFlag::empty(),
            FilterFlag::empty(),
            0,
            0,
        );
        let mut got = [empty; 32];
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let n = match self.queue.kevent(&[], &mut got, Some(zero)) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(e.into()),
        };
        Ok(got.iter().take(n).map(change_of).collect())
    }
}

fn change_of(event: &KEvent) -> Change {
    let gone = event
        .fflags()
        .intersects(FilterFlag::NOTE_DELETE | FilterFlag::NOTE_REVOKE);
    Change {
        watch: WatchId(super::Id::Native(event.ident() as i32)),
        name: None,
        is_dir: false,
        deleted: false,
        ignored: gone,
    }
}
