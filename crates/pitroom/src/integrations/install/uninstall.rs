//! `pitroom uninstall`: reverses the manifest's entries, newest first, each only if what is
//! there is still what `install` made.

use std::io::ErrorKind;

use pitroom_core::exit::Exit;

use super::manifest::io_error;
use super::{hash, Entry, Layout, Manifest, UninstallArgs};
use crate::commands::Outcome;
use crate::error::CliError;
use crate::output;
use crate::output::say;

pub(crate) fn uninstall(args: UninstallArgs) -> Outcome {
    let layout = Layout::from_env(&crate::commands::env_lookup).map_err(CliError::refused)?;
    let manifest = match Manifest::load(&layout.manifest()).map_err(CliError::refused)? {
        Some(m) => m,
        None => {
            say!(
                "pitroom: nothing to uninstall (no manifest at {})",
                layout.show(&layout.manifest())
            );
            return Ok(Exit::Ok);
        }
    };
    if args.dry_run {
        say!("pitroom uninstall --dry-run: nothing is changed");
        for entry in manifest.entries.iter().rev() {
            say!("  {}", describe(&layout, entry));
        }
        return Ok(Exit::Ok);
    }
    let manifest_path = layout.manifest();
    if let Err(e) = std::fs::remove_file(&manifest_path) {
        return Err(CliError::refused(io_error("remove", &manifest_path, &e)));
    }
    let mut left = 0;
    for entry in manifest.entries.iter().rev() {
        if let Err(why) = undo(entry) {
            output::warning(format!("left {}: {why}", layout.show(entry.path())));
            left += 1;
        }
    }
    if left == 0 {
        say!("pitroom: uninstalled; everything install made is gone");
    } else {
        say!(
            "pitroom: uninstalled; {left} path(s) changed since install were left as they are (see above)"
        );
    }
    Ok(Exit::Ok)
}

fn describe(layout: &Layout, entry: &Entry) -> String {
    match entry {
        Entry::Dir { path } => format!("remove dir {}", layout.show(path)),
        Entry::File { path, .. } => format!("remove {}", layout.show(path)),
        Entry::Link { path, .. } => format!("remove link {}", layout.show(path)),
        Entry::Edited { path, backup, .. } => {
            format!("restore {} from {}", layout.show(path), layout.show(backup))
        }
        Entry::MovedAside { path, backup } => {
            format!("move {} back to {}", layout.show(backup), layout.show(path))
        }
    }
}

/// Reverses one entry, only if what is there is still what install made.
fn undo(entry: &Entry) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    match entry {
        Entry::Dir { path } => match std::fs::remove_dir(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(_) => Err("it holds files install did not make".into()),
        },
        Entry::File { path, hash: h } => match std::fs::read(path) {
            Ok(now) if hash(&now) == *h => std::fs::remove_file(path).map_err(io),
            Ok(_) => Err("changed since install".into()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.to_string()),
        },
        Entry::Link { path, target } => match std::fs::read_link(path) {
            Ok(now) if now == *target => std::fs::remove_file(path).map_err(io),
            Ok(_) => Err("now points elsewhere".into()),
            Err(_) if std::fs::symlink_metadata(path).is_err() => Ok(()),
            Err(_) => Err("no longer the link install made".into()),
        },
        Entry::Edited {
            path,
            backup,
            hash: h,
        } => match std::fs::read(path) {
            Ok(now) if hash(&now) == *h => std::fs::rename(backup, path).map_err(io),
            _ => Err(format!(
                "changed since install; the original is at {}",
                backup.display()
            )),
        },
        Entry::MovedAside { path, backup } => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(format!(
                    "something new is there; the original is at {}",
                    backup.display()
                ));
            }
            std::fs::rename(backup, path).map_err(io)
        }
    }
}
