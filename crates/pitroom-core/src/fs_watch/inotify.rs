//! Linux: inotify.

use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::{millis, Change, Interest, WatchId};

pub(super) type Id = WatchDescriptor;

pub(super) struct Watcher(Inotify);

impl Watcher {
    pub(super) fn new() -> io::Result<Watcher> {
        Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map(Watcher)
            .map_err(io::Error::from)
    }

    pub(super) fn add(&self, path: &Path, interest: Interest) -> io::Result<Id> {
        self.0
            .add_watch(path, flags(interest))
            .map_err(io::Error::from)
    }

    pub(super) fn wait(&self, limit: Duration) -> io::Result<()> {
        let mut fds = [PollFd::new(self.0.as_fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, PollTimeout::from(millis(limit))) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn read(&self) -> io::Result<Vec<Change>> {
        match self.0.read_events() {
            Ok(events) => Ok(events
                .into_iter()
                .map(|event| Change {
                    watch: WatchId(super::Id::Native(event.wd)),
                    is_dir: event.mask.contains(AddWatchFlags::IN_ISDIR),
                    deleted: event.mask.contains(AddWatchFlags::IN_DELETE),
                    ignored: event.mask.contains(AddWatchFlags::IN_IGNORED),
                    name: event.name,
                })
                .collect()),
            Err(nix::errno::Errno::EAGAIN) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }
}

fn flags(interest: Interest) -> AddWatchFlags {
    let mut flags = AddWatchFlags::empty();
    for (wanted, flag) in [
        (interest.create, AddWatchFlags::IN_CREATE),
        (interest.moved_to, AddWatchFlags::IN_MOVED_TO),
        (interest.delete, AddWatchFlags::IN_DELETE),
        (interest.close_write, AddWatchFlags::IN_CLOSE_WRITE),
        (interest.modify, AddWatchFlags::IN_MODIFY),
        (interest.only_dir, AddWatchFlags::IN_ONLYDIR),
    ] {
        if wanted {
            flags |= flag;
        }
    }
    flags
}
