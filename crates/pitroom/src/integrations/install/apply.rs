//! Making what the plan wants: skill files, links and settings, each recorded in the
//! manifest; with `--force`, what was there first moved aside into Pitroom's data dir.

use std::path::{Path, PathBuf};

use super::manifest::{ensure_dir, io_error};
use super::plan::{Step, Want};
use super::settings::write_settings;
use super::{hash, Entry, Layout, Manifest};

pub(super) fn apply_steps(
    layout: &Layout,
    steps: &[(Want, Step)],
    manifest: &mut Manifest,
) -> Result<(), String> {
    // Names backups that must not overwrite each other: the wall clock, not a fixed one.
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    for (want, step) in steps {
        match step {
            Step::Keep => {}
            Step::Make | Step::Refresh => make(layout, want, manifest, None)?,
            Step::Foreign => {
                let backup = layout
                    .data
                    .join("backups")
                    .join(&stamp)
                    .join(relative(layout, want.path()));
                make(layout, want, manifest, Some(backup))?;
            }
        }
    }
    Ok(())
}

/// The path below the home (or the root), for a backup's place.
fn relative(layout: &Layout, path: &Path) -> PathBuf {
    path.strip_prefix(&layout.home)
        .map(|p| Path::new("home").join(p))
        .unwrap_or_else(|_| Path::new("root").join(path.strip_prefix("/").unwrap_or(path)))
}

/// Makes one wanted item; with `backup`, what is there is first kept at that path.
fn make(
    layout: &Layout,
    want: &Want,
    manifest: &mut Manifest,
    backup: Option<PathBuf>,
) -> Result<(), String> {
    let path = want.path();
    if let Some(parent) = path.parent() {
        ensure_dir(parent, manifest)?;
    }
    if let Want::Settings { path, want } = want {
        return write_settings(layout, path, *want, manifest, backup);
    }
    if let Some(backup) = &backup {
        if let Some(dir) = backup.parent() {
            ensure_dir(dir, manifest)?;
        }
        std::fs::rename(path, backup).map_err(|e| io_error("move aside", path, &e))?;
        manifest.entries.push(Entry::MovedAside {
            path: path.to_path_buf(),
            backup: backup.clone(),
        });
    }
    match want {
        Want::File { path, contents } => {
            let fresh = manifest.owns(path).is_none() || backup.is_some();
            std::fs::write(path, contents).map_err(|e| io_error("write", path, &e))?;
            let h = hash(contents);
            match manifest.entries.iter_mut().rev().find(|e| e.path() == path) {
                Some(Entry::File { hash, .. }) if !fresh => *hash = h,
                _ => manifest.entries.push(Entry::File {
                    path: path.clone(),
                    hash: h,
                }),
            }
        }
        Want::Link { path, target } => {
            std::os::unix::fs::symlink(target, path).map_err(|e| io_error("link", path, &e))?;
            manifest.entries.push(Entry::Link {
                path: path.clone(),
                target: target.clone(),
            });
        }
        Want::Settings { .. } => {}
    }
    Ok(())
}
