//! Directories a worker may write that Pitroom itself writes into too (a CLI's shared state,
//! a run's scratch dir), reached without following a single link.
//!
//! Pitroom runs unconfined; a worker does not. Were Pitroom to follow a path a worker could
//! have changed, a symlink planted there (`cache -> <repo>/.git`) would turn Pitroom's own
//! write, or the next run's sandbox rule, into a write wherever the link points. So each such
//! directory is walked down from a trusted *anchor* (a directory no worker may write: the
//! state dir's root, a run dir) one component at a time, every step opened relative to the
//! descriptor of the step before with `O_NOFOLLOW | O_DIRECTORY`. What is not a plain directory
//! — a symlink, a file, a fifo — is removed and a directory made in its place. Files are then
//! created, renamed and linked relative to the final descriptor, so nothing a worker does
//! between the walk and the write can redirect it.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};

/// A plain directory at `path`, open, reached from its anchor without following a link.
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Opens (creating what is missing) the plain directory `dir` beneath `anchor`, replacing any
/// component below the anchor that is not a plain directory. `dir` must be `anchor` itself or
/// lie beneath it, named by plain components (no `..`).
pub fn open_beneath(anchor: &Path, dir: &Path) -> io::Result<PrivateDir> {
    let relative = dir.strip_prefix(anchor).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not beneath {}", dir.display(), anchor.display()),
        )
    })?;
    std::fs::create_dir_all(anchor)?;
    let mut fd = rfs::open(
        anchor,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for component in relative.components() {
        let Component::Normal(name) = component else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain path", dir.display()),
            ));
        };
        fd = plain_subdir(fd.as_fd(), name)?;
    }
    Ok(PrivateDir {
        fd,
        path: dir.to_path_buf(),
    })
}

/// Opens `name` in `parent` as a plain directory, making it (or remaking it, after removing
/// whatever else stood there) when it is not one.
fn plain_subdir(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    // A worker racing us can swap the entry back and forth; a few rounds settle it or fail.
    for _ in 0..8 {
        match open_dir_nofollow(parent, name) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::NOENT) => {}
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                remove_entry(parent, name)?;
            }
            Err(e) => return Err(e.into()),
        }
        match rfs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!(
        "{} keeps being replaced while it is made",
        Path::new(name).display()
    )))
}

fn open_dir_nofollow(parent: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rfs::openat(
        parent,
        name,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Removes a non-directory entry (the link itself, never its target).
fn remove_entry(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    match rfs::unlinkat(parent, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl PrivateDir {
    /// The path the directory was asked for (its real place: no link was followed to reach it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file `name` whole with `content`, mode 0600: written to a fresh temporary
    /// file beside it (created exclusively, never through a link) and renamed over it, so a
    /// reader never sees half a file and a link standing at `name` is replaced, not followed.
    pub fn write_file(&self, name: &OsStr, content: &[u8]) -> io::Result<()> {
        let temp = format!(".{}.{}.tmp", Path::new(name).display(), std::process::id());
        remove_entry(self.fd.as_fd(), temp.as_ref())?;
        let fd = rfs::openat(
            self.fd.as_fd(),
            temp.as_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut file = std::fs::File::from(fd);
        let written = file
            .write_all(content)
            .and_then(|()| file.sync_data())
            .and_then(|()| {
                Ok(rfs::renameat(
                    self.fd.as_fd(),
                    temp.as_str(),
                    self.fd.as_fd(),
                    name,
                )?)
            });
        if written.is_err() {
            // Best effort: the error that matters is the write's.
            let _ = rfs::unlinkat(self.fd.as_fd(), temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Makes `name` a symlink to `target`, replacing whatever non-directory stood there.
    pub fn symlink(&self, name: &OsStr, target: &Path) -> io::Result<()> {
        if rfs::readlinkat(self.fd.as_fd(), name, Vec::new())
            .is_ok_and(|current| current.as_bytes() == target.as_os_str().as_encoded_bytes())
        {
            return Ok(());
        }
        remove_entry(self.fd.as_fd(), name)?;
        Ok(rfs::symlinkat(target, self.fd.as_fd(), name)?)
    }
}

/// Whether `path` names a plain directory reached without following a link at or below
/// `anchor`: what a sandbox rule may be granted on.
pub fn is_plain_beneath(anchor: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(anchor) else {
        return false;
    };
    let Ok(mut fd) = rfs::open(
        anchor,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    for component in relative.components() {
        let Component::Normal(name) = component else {
            return false;
        };
        match open_dir_nofollow(fd.as_fd(), name) {
            Ok(next) => fd = next,
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        (root, base)
    }

    #[test]
    fn a_symlink_planted_in_place_of_a_private_dir_is_replaced_not_followed() {
        let (_root, base) = anchor();
        let victim = base.join("victim");
        std::fs::create_dir(&victim).expect("mkdir");
        let state = base.join("state");
        std::fs::create_dir(&state).expect("mkdir");
        std::os::unix::fs::symlink(&victim, state.join("cache")).expect("symlink");

        let dir = open_beneath(&base, &state.join("cache/sub")).expect("opens");
        dir.write_file("settings.json".as_ref(), b"{}")
            .expect("writes");

        assert!(std::fs::symlink_metadata(state.join("cache"))
            .expect("exists")
            .is_dir());
        assert_eq!(
            std::fs::read(state.join("cache/sub/settings.json")).expect("read"),
            b"{}"
        );
        assert_eq!(
            std::fs::read_dir(&victim).expect("list").count(),
            0,
            "nothing was written through the link"
        );
    }

    #[test]
    fn a_file_named_like_the_settings_file_is_replaced_and_a_link_there_too() {
        let (_root, base) = anchor();
        let outside = base.join("outside.txt");
        std::fs::write(&outside, "keep").expect("write");
        let dir = open_beneath(&base, &base.join("d")).expect("opens");
        std::os::unix::fs::symlink(&outside, base.join("d/config.json")).expect("symlink");

        dir.write_file("config.json".as_ref(), b"new")
            .expect("writes");

        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "keep");
        let meta = std::fs::symlink_metadata(base.join("d/config.json")).expect("exists");
        assert!(meta.is_file());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_credential_link_is_made_in_the_real_dir() {
        let (_root, base) = anchor();
        let dir = open_beneath(&base, &base.join("data/cli")).expect("opens");
        let target = base.join("auth.json");
        dir.symlink("auth.json".as_ref(), &target).expect("links");
        dir.symlink("auth.json".as_ref(), &target)
            .expect("links again");
        assert_eq!(
            std::fs::read_link(base.join("data/cli/auth.json")).expect("link"),
            target
        );
    }

    #[test]
    fn a_path_outside_the_anchor_or_with_dot_dot_is_refused() {
        let (_root, base) = anchor();
        assert!(open_beneath(&base.join("a"), &base.join("b")).is_err());
        assert!(open_beneath(&base, &base.join("a/../b")).is_err());
    }

    #[test]
    fn a_rule_path_through_a_link_is_not_plain() {
        let (_root, base) = anchor();
        std::fs::create_dir_all(base.join("real/inner")).expect("mkdir");
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).expect("symlink");
        assert!(is_plain_beneath(&base, &base.join("real/inner")));
        assert!(!is_plain_beneath(&base, &base.join("link/inner")));
        assert!(!is_plain_beneath(&base, &base.join("link")));
        assert!(!is_plain_beneath(&base.join("real"), &base.join("other")));
    }
}
