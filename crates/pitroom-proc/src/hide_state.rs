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
        let opened = match openat2(
            &dir,
            rest,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH,
        ) {
            // Kernels before 5.6, and qemu-user, have no openat2.
            Err(rustix::io::Errno::NOSYS) => open_beneath_by_components(&dir, rest),
            other => other,
        };
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

/// What `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` does, one component at a time: each
/// opened without following a link, a link anywhere (`ELOOP`) or a component other than a
/// plain name (`EXDEV`, as for an escape) refused.
fn open_beneath_by_components(dir: &OwnedFd, rest: &Path) -> rustix::io::Result<OwnedFd> {
    use rustix::fs::{fstat, openat, FileType};
    use std::path::Component;
    let mut current = openat(
        dir,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for component in rest.components() {
        let Component::Normal(name) = component else {
            return Err(rustix::io::Errno::XDEV);
        };
        current = openat(
            &current,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if FileType::from_raw_mode(fstat(&current)?.st_mode) == FileType::Symlink {
            return Err(rustix::io::Errno::LOOP);
        }
    }
    Ok(current)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_handle(path: &Path) -> OwnedFd {
        rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open")
    }

    #[test]
    fn the_fallback_opens_plain_paths_beneath_and_refuses_links_and_escapes() {
        let root = tempfile::tempdir().expect("tempdir");
        let state = root.path().join("state");
        std::fs::create_dir_all(state.join("runs/r1")).expect("mkdir");
        std::fs::write(state.join("runs/r1/record.json"), "{}").expect("file");
        std::os::unix::fs::symlink(root.path(), state.join("runs/out")).expect("link");
        std::os::unix::fs::symlink("r1/record.json", state.join("runs/file-link")).expect("link");
        let dir = dir_handle(&state);

        for plain in ["runs", "runs/r1", "runs/r1/record.json"] {
            assert!(
                open_beneath_by_components(&dir, Path::new(plain)).is_ok(),
                "{plain}"
            );
        }
        let refused = |p: &str| open_beneath_by_components(&dir, Path::new(p)).err();
        // A link as the last component, or on the way.
        assert_eq!(refused("runs/file-link"), Some(rustix::io::Errno::LOOP));
        assert_eq!(refused("runs/out"), Some(rustix::io::Errno::LOOP));
        assert!(refused("runs/out/state").is_some());
        assert_eq!(refused("../state/runs"), Some(rustix::io::Errno::XDEV));
        assert_eq!(refused("/etc"), Some(rustix::io::Errno::XDEV));
        assert_eq!(refused("runs/missing"), Some(rustix::io::Errno::NOENT));
    }
}
