//! Whether the user's attributes (`filter`, `text`/`eol`, `ident`, `working-tree-encoding`,
//! `core.autocrlf`) would turn a file into other bytes than the worker left.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::command::{Git, GitError};

use super::*;

/// Files whose bytes the user's attributes would convert on the way in: each must come out of
/// the conversion exactly as the worker left it in `worker_tree`.
pub(super) fn converted_files(
    toplevel: &Path,
    worker_tree: &Path,
    entries: &[PatchEntry],
    problems: &mut Vec<EdgeProblem>,
) -> Result<(), GitError> {
    let written: Vec<(&Vec<u8>, &str)> = entries
        .iter()
        .filter(|e| matches!(e.new_mode, Some(0o100644 | 0o100755)))
        .filter_map(|e| Some((e.new_path.as_ref()?, e.new_blob.as_deref()?)))
        .collect();
    if written.is_empty() {
        return Ok(());
    }
    let git = Git::in_dir(toplevel);
    let paths: Vec<&[u8]> = written.iter().map(|(p, _)| p.as_slice()).collect();
    let converting = converting_paths(&git, &paths, &autocrlf(&git))?;
    let objects = worker_tree.join(".git/objects");
    let reader = Git::in_dir(toplevel).with_alternate_objects(&objects);
    for (path, attrs) in converting {
        let Some((_, blob)) = written.iter().find(|(p, _)| **p == path) else {
            continue;
        };
        let mut path_arg = OsString::from("--path=");
        path_arg.push(OsStr::from_bytes(&path));
        let args: [&OsStr; 4] = [
            "cat-file".as_ref(),
            "--filters".as_ref(),
            path_arg.as_os_str(),
            blob.as_ref(),
        ];
        let landed = reader.output(args, None)?;
        let worker = std::fs::read(join(worker_tree, &path));
        let exact = landed.code == 0 && worker.as_ref().is_ok_and(|w| *w == landed.stdout);
        if !exact {
            let why = match worker {
                Err(e) => format!(
                    "converted by your git attributes ({}), and the worker's copy cannot be read to check it ({e})",
                    attrs.join(", ")
                ),
                Ok(_) if landed.code != 0 => format!(
                    "converted by your git attributes ({}), and the conversion failed: {}",
                    attrs.join(", "),
                    landed.stderr.trim()
                ),
                Ok(w) => format!(
                    "your .gitattributes/config convert it ({}): applying would write {} bytes that differ from the {} bytes the worker left",
                    attrs.join(", "),
                    landed.stdout.len(),
                    w.len()
                ),
            };
            problems.push(EdgeProblem {
                path: quote_path(&path),
                why,
                hint: format!(
                    "copy the file from the run's copy by hand ({}), or change the attribute and re-run",
                    join(worker_tree, &path).display()
                ),
            });
        }
    }
    Ok(())
}

/// A path git converts, with the attributes (`name=value`) or config that say so.
type Converting = (Vec<u8>, Vec<String>);

/// `core.autocrlf` as the user's config sets it (`""` when unset).
pub(super) fn autocrlf(git: &Git) -> String {
    git.output(["config", "--get", "core.autocrlf"], None)
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Which of `paths` git converts on the way in and out, with the attributes (or config) that
/// say so: `filter`, `text`, `eol`, `crlf`, `ident`, `working-tree-encoding`, or every path
/// when `core.autocrlf` is on.
pub(super) fn converting_paths(
    git: &Git,
    paths: &[&[u8]],
    autocrlf: &str,
) -> Result<Vec<Converting>, GitError> {
    let mut input = Vec::new();
    for path in paths {
        input.extend_from_slice(path);
        input.push(0);
    }
    let out = git.output(
        [
            "check-attr",
            "-z",
            "--stdin",
            "filter",
            "text",
            "eol",
            "crlf",
            "ident",
            "working-tree-encoding",
        ],
        Some(&input),
    )?;
    if out.code != 0 {
        return Err(out.into_error());
    }
    let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    let mut converting: Vec<Converting> = Vec::new();
    for triple in fields.chunks(3) {
        let [path, attr, value] = triple else {
            continue;
        };
        let value = String::from_utf8_lossy(value);
        if value == "unspecified" || value == "unset" {
            continue;
        }
        let said = format!("{}={value}", String::from_utf8_lossy(attr));
        match converting.iter_mut().find(|(p, _)| p.as_slice() == *path) {
            Some((_, attrs)) => attrs.push(said),
            None => converting.push((path.to_vec(), vec![said])),
        }
    }
    if matches!(autocrlf, "true" | "input") {
        for path in paths {
            if !converting.iter().any(|(p, _)| p.as_slice() == *path) {
                converting.push((path.to_vec(), vec![format!("core.autocrlf={autocrlf}")]));
            }
        }
    }
    Ok(converting)
}

/// Whether any attributes or config could convert a file of this repository at all: a
/// `.gitattributes` in the index, `info/attributes`, a global attributes file, or
/// `core.autocrlf`. When none does (the common case), nothing more is looked at.
pub(super) fn anything_converts(git: &Git, git_dir: &Path) -> Result<bool, GitError> {
    let listed = git.run(["ls-files", "-z", "--", ":(glob)**/.gitattributes"])?;
    if !listed.is_empty() {
        return Ok(true);
    }
    let config = git.output(
        [
            "config",
            "-z",
            "--get-regexp",
            r"^core\.(autocrlf|attributesfile)$",
        ],
        None,
    )?;
    for entry in config.stdout.split(|b| *b == 0) {
        let text = String::from_utf8_lossy(entry).to_lowercase();
        if text.starts_with("core.attributesfile")
            || text == "core.autocrlf\ntrue"
            || text == "core.autocrlf\ninput"
        {
            return Ok(true);
        }
    }
    let mut places: Vec<PathBuf> = vec![git_dir.join("info/attributes")];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        places.push(git_dir.join(common.trim()).join("info/attributes"));
    }
    if let Some(config) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        places.push(PathBuf::from(config).join("git/attributes"));
    } else if let Some(home) = std::env::var_os("HOME") {
        places.push(PathBuf::from(home).join(".config/git/attributes"));
    }
    Ok(places
        .iter()
        .any(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0)))
}

/// The files of the index `git` points at whose work-tree bytes git's checkout would not give
/// back from their staged blobs (an LF file under `eol=crlf`, a CRLF file under `text=auto`):
/// a revert restores files through that conversion, so for these it cannot be exact. Only eol
/// conversion is judged, by its rules, without running anything: a file under a `filter`,
/// `ident` or `working-tree-encoding` is taken to round-trip (a filter's smudge undoes its
/// clean), since judging it would run the user's filters (git-lfs fetches) on every file.
pub(crate) fn find_inexact_paths(
    git: &Git,
    git_dir: &Path,
    work_tree: &Path,
) -> Result<Vec<Vec<u8>>, GitError> {
    if !anything_converts(git, git_dir)? {
        return Ok(Vec::new());
    }
    let listed = git.run(["ls-files", "-z", "--stage"])?;
    let mut blobs: Vec<(Vec<u8>, String)> = Vec::new();
    for entry in listed.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        // "MODE OBJECT STAGE\tPATH"
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let meta = String::from_utf8_lossy(&entry[..tab]);
        let mut parts = meta.split(' ');
        let (Some(mode), Some(oid)) = (parts.next(), parts.next()) else {
            continue;
        };
        if mode == "100644" || mode == "100755" {
            blobs.push((entry[tab + 1..].to_vec(), oid.to_string()));
        }
    }
    let autocrlf = autocrlf(git);
    let paths: Vec<&[u8]> = blobs.iter().map(|(p, _)| p.as_slice()).collect();
    let converting = converting_paths(git, &paths, &autocrlf)?;
    let oids: std::collections::HashMap<&[u8], &str> = blobs
        .iter()
        .map(|(p, o)| (p.as_slice(), o.as_str()))
        .collect();
    let mut inexact = Vec::new();
    // Written as staged (LF): exact exactly when the clean step removed nothing, which the
    // sizes tell without reading a byte. Only CRLF checkouts need the content.
    let mut crlf: Vec<(&Vec<u8>, &str, Eol)> = Vec::new();
    let mut lf: Vec<(&Vec<u8>, &str)> = Vec::new();
    for (path, attrs) in &converting {
        let (Some(oid), Some(eol)) = (oids.get(path.as_slice()), Eol::of(attrs, &autocrlf)) else {
            continue;
        };
        match eol {
            Eol::Lf => lf.push((path, oid)),
            Eol::Crlf { .. } => crlf.push((path, oid, eol)),
        }
    }
    if !lf.is_empty() {
        let input: Vec<u8> = lf
            .iter()
            .flat_map(|(_, oid)| format!("{oid}\n").into_bytes())
            .collect();
        let out = git.output(["cat-file", "--batch-check"], Some(&input))?;
        if out.code != 0 {
            return Err(out.into_error());
        }
        for ((path, _), header) in lf.iter().zip(out.stdout.split(|b| *b == b'\n')) {
            let Some(size) = blob_size(header) else {
                continue;
            };
            let on_disk = std::fs::symlink_metadata(join(work_tree, path)).map(|m| m.len());
            if on_disk.is_ok_and(|n| n != size as u64) {
                inexact.push((*path).clone());
            }
        }
    }
    for chunk in crlf.chunks(64) {
        let input: Vec<u8> = chunk
            .iter()
            .flat_map(|(_, oid, _)| format!("{oid}\n").into_bytes())
            .collect();
        // Raw blobs: "<oid> blob <size>\n<content>\n", or "<oid> missing\n".
        let out = git.output(["cat-file", "--batch"], Some(&input))?;
        if out.code != 0 {
            return Err(out.into_error());
        }
        let mut rest: &[u8] = &out.stdout;
        for (path, _, eol) in chunk {
            let Some(end) = rest.iter().position(|b| *b == b'\n') else {
                break;
            };
            let size = blob_size(&rest[..end]);
            rest = &rest[end + 1..];
            let Some(size) = size else {
                continue;
            };
            let Some(blob) = rest.get(..size) else {
                break;
            };
            rest = rest.get(size + 1..).unwrap_or_default();
            let Ok(bytes) = std::fs::read(join(work_tree, path)) else {
                continue;
            };
            if eol.checkout(blob) != bytes {
                inexact.push((*path).clone());
            }
        }
    }
    Ok(inexact)
}

/// The size in a `cat-file --batch` header (`<oid> blob <size>`); `None` for anything else.
pub(super) fn blob_size(header: &[u8]) -> Option<usize> {
    let header = std::str::from_utf8(header).ok()?;
    let mut parts = header.split(' ');
    let (_, kind, size) = (parts.next()?, parts.next()?, parts.next()?);
    (kind == "blob").then(|| size.parse().ok()).flatten()
}

/// How git's checkout converts line endings for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eol {
    /// Written as staged.
    Lf,
    /// Each lone LF written as CRLF; `auto` leaves binary content and content that already
    /// has CRs as it is.
    Crlf { auto: bool },
}

impl Eol {
    /// From a path's converting attributes; `None` for what is not judged (filters, ident,
    /// working-tree-encoding) or not converted.
    pub(super) fn of(attrs: &[String], autocrlf: &str) -> Option<Eol> {
        let get = |name: &str| {
            attrs
                .iter()
                .find_map(|a| a.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        };
        if get("filter").is_some()
            || get("ident").is_some()
            || get("working-tree-encoding").is_some()
        {
            return None;
        }
        let text = get("text");
        let auto = match (text, get("crlf")) {
            (Some("auto"), _) => true,
            (Some(_), _) => false,
            (None, Some(_)) => false,
            (None, None) if get("eol").is_some() => false,
            (None, None) => true,
        };
        let crlf = match get("eol") {
            Some("crlf") => true,
            Some(_) => false,
            None => match get("crlf") {
                Some("input") => false,
                Some(_) => true,
                None => autocrlf == "true",
            },
        };
        Some(if crlf { Eol::Crlf { auto } } else { Eol::Lf })
    }

    /// The bytes checkout writes for `blob`.
    pub(super) fn checkout(self, blob: &[u8]) -> Vec<u8> {
        match self {
            Eol::Lf => blob.to_vec(),
            Eol::Crlf { auto } if auto && (blob.contains(&0) || blob.contains(&b'\r')) => {
                blob.to_vec()
            }
            Eol::Crlf { .. } => {
                let mut out = Vec::with_capacity(blob.len() + blob.len() / 16);
                let mut previous = 0u8;
                for &b in blob {
                    if b == b'\n' && previous != b'\r' {
                        out.push(b'\r');
                    }
                    out.push(b);
                    previous = b;
                }
                out
            }
        }
    }
}
