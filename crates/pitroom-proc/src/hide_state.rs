//! Hides Pitroom's state dir from a worker, in its private mount namespace: an empty tmpfs is
//! mounted over the dir, the run's own parts (its run dir, copy, CLI state, the guard's
//! links) are bound back at their places, and the tmpfs is made read-only. Other runs'
//! stored patches (kept byte for byte, since `apply` lands them), their copies and every
//! other CLI state are then simply not there, whatever the worker's rights to read them.
//!
//! By construction rather than by list: a run started later, or a file Pitroom adds to its
//! state dir one day, is hidden too, since only what is kept is shown.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};

/// Hides `state_dir` but for `kept` (canonical paths beneath it). On an error nothing stays
/// hidden: the tmpfs is taken away again, so the worker keeps what it needs to run.
pub(crate) fn hide(state_dir: &Path, kept: &[PathBuf]) -> Result<(), String> {
    let handles = open_kept(state_dir, kept)?;
    let cwd = std::env::current_dir().map_err(|e| format!("the working dir: {e}"))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("tmpfs"),
        state_dir,
        Some("tmpfs"),
        flags,
        Some("mode=0755,size=1m"),
    )
    .map_err(|e| format!("tmpfs over it: {e}"))?;
    let kept_back = bind_back(&handles)
        .and_then(|()| {
            mount(
                None::<&str>,
                state_dir,
                None::<&str>,
                flags | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                None::<&str>,
            )
            .map_err(|e| format!("read-only remount: {e}"))
        })
        .and_then(|()| enter_again(&cwd, state_dir));
    if let Err(e) = kept_back {
        // MNT_DETACH takes the tmpfs and every bind made on it away at once.
        if let Err(undo) = umount2(state_dir, MntFlags::MNT_DETACH) {
            return Err(format!(
                "{e}; and the tmpfs could not be taken away ({undo})"
            ));
        }
        return Err(e);
    }
    Ok(())
}

/// Looks `cwd` up again when it lies beneath the state dir. The process still stands in the
/// dir on the mount the tmpfs now hides, where a relative path (`.git/…`, `../other-run`)
/// would pass by every mount made from here on, and by the tmpfs itself; looked up by its
/// path, it is the dir bound back (a cwd the run does not keep fails the hiding).
fn enter_again(cwd: &Path, state_dir: &Path) -> Result<(), String> {
    if !cwd.starts_with(state_dir) {
        return Ok(());
    }
    std::env::set_current_dir(cwd)
        .map_err(|e| format!("re-entering the working dir {}: {e}", cwd.display()))
}

/// One kept path, opened before the tmpfs hides it.
struct Kept {
    path: PathBuf,
    handle: OwnedFd,
    is_dir: bool,
}

/// Opens each kept path beneath `state_dir` without following a link (a worker may have
/// replaced a dir of its own by one); a path that does not exist is left out.
fn open_kept(state_dir: &Path, kept: &[PathBuf]) -> Result<Vec<Kept>, String> {
    let dir = rustix::fs::open(
        state_dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("opening it: {e}"))?;
    let mut handles = Vec::new();
    for path in kept {
        let Ok(rest) = path.strip_prefix(state_dir) else {
            continue;
        };
        let opened = openat2(
            &dir,
            rest,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH,
        );
        let handle = match opened {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(format!("opening {}: {e}", path.display())),
        };
        let is_dir = rustix::fs::fstat(&handle)
            .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir())
            .map_err(|e| format!("stat of {}: {e}", path.display()))?;
        handles.push(Kept {
            path: path.clone(),
            handle,
            is_dir,
        });
    }
    Ok(handles)
}

/// Makes a mount point for each kept path in the tmpfs and binds the real one over it,
/// through its descriptor (its path now leads into the tmpfs).
fn bind_back(handles: &[Kept]) -> Result<(), String> {
    for kept in handles {
        make_mount_point(kept).map_err(|e| format!("{}: {e}", kept.path.display()))?;
        let source = format!("/proc/self/fd/{}", kept.handle.as_raw_fd());
        mount(
            Some(source.as_str()),
            &kept.path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("binding {} back: {e}", kept.path.display()))?;
    }
    Ok(())
}

fn make_mount_point(kept: &Kept) -> std::io::Result<()> {
    if kept.is_dir {
        return std::fs::create_dir_all(&kept.path);
    }
    if let Some(parent) = kept.path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    File::create(&kept.path).map(drop)
}
