//! File-system watches (inotify) that cost their owner nothing to close.

use std::ops::Deref;

use nix::sys::inotify::Inotify;

/// An inotify instance closed on a thread of its own when dropped. Closing an inotify
/// descriptor waits for the kernel's grace period (6–15 ms seen on the 2-core machine, more
/// under load), which whoever dropped it would otherwise spend: a run on its way to its worker,
/// an MCP answer on its way out.
pub struct Watch(Option<Inotify>);

impl Watch {
    pub fn new(inotify: Inotify) -> Watch {
        Watch(Some(inotify))
    }
}

impl Deref for Watch {
    type Target = Inotify;

    fn deref(&self) -> &Inotify {
        match &self.0 {
            Some(inotify) => inotify,
            // Only `drop` takes it out.
            None => unreachable!("a watch is used after it was dropped"),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let Some(inotify) = self.0.take() else { return };
        // A thread that cannot start leaves the close here: slower, never wrong.
        if let Err(e) = std::thread::Builder::new()
            .name("inotify-close".into())
            .spawn(move || drop(inotify))
        {
            tracing::debug!("closing an inotify watch in place: {e}");
        }
    }
}
