//! The install manifest (`install.json` in Pitroom's data dir): every directory, file and link
//! `install` made, so `uninstall` removes exactly those; with the file helpers that record
//! what they make.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Host, Layout};

/// One thing `install` made, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Entry {
    /// A directory that did not exist.
    Dir { path: PathBuf },
    /// A file written where there was none; `hash` of what was written.
    File { path: PathBuf, hash: String },
    /// A symlink made where there was nothing.
    Link { path: PathBuf, target: PathBuf },
    /// A file Pitroom did not write, rewritten with `--force`; the original is at `backup`.
    Edited {
        path: PathBuf,
        backup: PathBuf,
        hash: String,
    },
    /// Something Pitroom did not make, moved to `backup` with `--force` to make room.
    MovedAside { path: PathBuf, backup: PathBuf },
}

impl Entry {
    pub(super) fn path(&self) -> &Path {
        match self {
            Entry::Dir { path }
            | Entry::File { path, .. }
            | Entry::Link { path, .. }
            | Entry::Edited { path, .. }
            | Entry::MovedAside { path, .. } => path,
        }
    }
}

/// The install manifest: what `uninstall` removes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub version: u32,
    pub pitroom: String,
    pub hosts: Vec<Host>,
    pub entries: Vec<Entry>,
}

impl Manifest {
    pub(crate) fn load(path: &Path) -> Result<Option<Manifest>, String> {
        match std::fs::read(path) {
            Ok(raw) => serde_json::from_slice(&raw).map(Some).map_err(|e| {
                format!(
                    "{} is not a Pitroom install manifest ({e}); move it away to start afresh",
                    path.display()
                )
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    pub(super) fn owns(&self, path: &Path) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.path() == path)
    }
}

/// A stable content hash (FNV-1a, 64 bits): enough to tell "still what we wrote" from "changed".
pub(crate) fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Creates `dir` and any missing parents, recording each one made (outermost first).
pub(super) fn ensure_dir(dir: &Path, manifest: &mut Manifest) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.exists() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d).map_err(|e| io_error("create", &d, &e))?;
        manifest.entries.push(Entry::Dir { path: d });
    }
    Ok(())
}

pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    pitroom_core::record::write_atomic(path, bytes).map_err(|e| io_error("write", path, &e))
}

pub(super) fn save_manifest(layout: &Layout, manifest: &mut Manifest) -> Result<(), String> {
    let path = layout.manifest();
    ensure_dir(&layout.data, manifest)?;
    let mut raw = serde_json::to_vec_pretty(manifest).map_err(|e| e.to_string())?;
    raw.push(b'\n');
    write_atomically(&path, &raw)
}

pub(super) fn io_error(what: &str, path: &Path, e: &std::io::Error) -> String {
    format!("could not {what} {}: {e}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_is_stable() {
        assert_eq!(hash(b""), "cbf29ce484222325");
        assert_ne!(hash(b"a"), hash(b"b"));
    }
}
