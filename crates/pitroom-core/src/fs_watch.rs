//! File-system watches (inotify) that cost their owner nothing to close.

use nix::sys::inotify::Inotify;

/// Closes `watch` on a thread of its own. Closing an inotify descriptor waits for the kernel's
/// grace period (6–15 ms seen on the 2-core machine, more under load), which whoever dropped it
/// would otherwise spend: a run on its way to its worker, an MCP answer on its way out.
pub fn close_off_the_path(watch: Inotify) {
    // A thread that cannot start leaves the close here: slower, never wrong.
    if let Err(e) = std::thread::Builder::new()
        .name("inotify-close".into())
        .spawn(move || drop(watch))
    {
        tracing::debug!("closing an inotify watch in place: {e}");
    }
}
