//! What `git apply` would do wrong or only half: the checks `apply` and `revert` run on a
//! patch before anything is written. A patch that passes lands byte for byte; one that does not
//! is refused whole, each problem naming its path, why and what to do.
//!
//! - a symlink whose target leaves the project (absolute, or `..` past the top) is not created;
//! - nothing is written or removed through a symlinked folder of the user's tree;
//! - a nested repository (a gitlink, mode 160000) is not "applied": the patch holds only its
//!   commit id, and git would leave an empty folder;
//! - a file under converting attributes (`filter`, `text`/`eol`, `ident`,
//!   `working-tree-encoding`, or `core.autocrlf`) must come out of the user's smudge/eol
//!   conversion as exactly the bytes the worker left, or it is refused.

use std::ffi::{OsStr, OsString};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::command::{Git, GitError};
use crate::diff::Direction;

const SYMLINK: u32 = 0o120000;
const GITLINK: u32 = 0o160000;

/// One file's section of a `git diff --binary --full-index` patch, read byte-exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchEntry {
    /// The path before (`None` for a new file) and after (`None` for a deletion).
    pub old_path: Option<Vec<u8>>,
    pub new_path: Option<Vec<u8>>,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub old_blob: Option<String>,
    pub new_blob: Option<String>,
    /// The whole content of each side, when a single text hunk holds it (a symlink's target).
    pub old_text: Option<Vec<u8>>,
    pub new_text: Option<Vec<u8>>,
    /// Where the section lies in the patch.
    pub range: Range<usize>,
}

/// One reason a patch cannot land exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeProblem {
    /// The path, quoted as git quotes it when it holds control characters.
    pub path: String,
    pub why: String,
    /// What the user can do.
    pub hint: String,
}

/// The outcome of [`check_edges`]: the problems (none: go ahead), and the sections to leave
/// out of the patch (a nested repository a revert would remove that the user already removed).
#[derive(Debug, Clone, Default)]
pub struct EdgeCheck {
    pub problems: Vec<EdgeProblem>,
    pub skip: Vec<Range<usize>>,
}

impl EdgeCheck {
    /// `patch` without the skipped sections.
    pub fn filtered(&self, patch: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(patch.len());
        let mut at = 0;
        for r in &self.skip {
            out.extend_from_slice(&patch[at..r.start]);
            at = r.end;
        }
        out.extend_from_slice(&patch[at..]);
        out
    }
}

/// Checks `patch`, about to be applied in `direction` to the work tree at `toplevel`.
/// `worker_tree` is the tree the worker left (an isolated run's copy): the bytes a converted
/// file must come out as. `inexact` are the files git's conversion cannot give back as they
/// were before the run ([`crate::inexact_paths`] of its "before" snapshot): a revert that would
/// restore one is refused. Nothing is written.
pub fn check_edges(
    toplevel: &Path,
    patch: &[u8],
    direction: Direction,
    worker_tree: Option<&Path>,
    inexact: &[Vec<u8>],
) -> Result<EdgeCheck, GitError> {
    let mut entries = parse_patch(patch);
    if direction == Direction::Reverse {
        for e in &mut entries {
            std::mem::swap(&mut e.old_path, &mut e.new_path);
            std::mem::swap(&mut e.old_mode, &mut e.new_mode);
            std::mem::swap(&mut e.old_blob, &mut e.new_blob);
            std::mem::swap(&mut e.old_text, &mut e.new_text);
        }
    }
    let mut check = EdgeCheck::default();
    for e in &entries {
        nested_repository(toplevel, e, direction, worker_tree, &mut check);
        through_symlink(toplevel, e, &entries, &mut check.problems);
        if direction == Direction::Forward {
            escaping_symlink(e, &mut check.problems);
        }
        let restores = matches!(e.new_mode, Some(0o100644 | 0o100755));
        if let (Direction::Reverse, true, Some(path)) = (direction, restores, &e.new_path) {
            if inexact.contains(path) {
                check.problems.push(EdgeProblem {
                    path: quote_path(path),
                    why: "your .gitattributes/config convert it (filter or eol), and its bytes before the run were not in git's converted form, so revert would write git's form instead of them".into(),
                    hint: "undo the run by hand from its patch (pitroom show --patch), keeping that file's own bytes".into(),
                });
            }
        }
    }
    if let (Direction::Forward, Some(tree)) = (direction, worker_tree) {
        converted_files(toplevel, tree, &entries, &mut check.problems)?;
    }
    Ok(check)
}

/// A gitlink on either side: git writes an empty folder for one and removes nothing for the
/// other. Only a nested repository the run added and the user has since removed passes (its
/// section is skipped).
fn nested_repository(
    toplevel: &Path,
    e: &PatchEntry,
    direction: Direction,
    worker_tree: Option<&Path>,
    check: &mut EdgeCheck,
) {
    let old_link = e.old_mode == Some(GITLINK);
    let new_link = e.new_mode == Some(GITLINK);
    if !old_link && !new_link {
        return;
    }
    let path = e.new_path.as_ref().or(e.old_path.as_ref());
    let shown = quote_path(path.map(Vec::as_slice).unwrap_or_default());
    match direction {
        Direction::Forward => check.problems.push(EdgeProblem {
            path: shown.clone(),
            why: "a nested git repository (gitlink) the worker created or changed; the patch holds only its commit id, not its files, so applying it would leave an empty folder".into(),
            hint: match (worker_tree, path) {
                (Some(tree), Some(p)) => format!(
                    "copy it by hand from the run's copy ({}) if you want it, or re-run the task asking the worker not to create repositories",
                    join(tree, p).display()
                ),
                _ => "re-run the task asking the worker not to create repositories".into(),
            },
        }),
        Direction::Reverse => {
            // Reversed: `old` is what the tree has now.
            let removing_added = old_link && e.new_path.is_none();
            let exists = e
                .old_path
                .as_ref()
                .is_some_and(|p| std::fs::symlink_metadata(join(toplevel, p)).is_ok());
            if removing_added && !exists {
                check.skip.push(e.range.clone());
            } else if removing_added {
                check.problems.push(EdgeProblem {
                    path: shown.clone(),
                    why: "a nested git repository the run created; revert does not delete repositories".into(),
                    hint: format!("remove it yourself if you do not want it (rm -rf {shown}), then revert again"),
                });
            } else {
                check.problems.push(EdgeProblem {
                    path: shown,
                    why: "a nested git repository the run removed or changed; the patch holds only its commit id, so revert cannot bring its files back".into(),
                    hint: "restore that repository by hand (from its own remote or a backup)".into(),
                });
            }
        }
    }
}

/// A path the patch writes or removes whose folder is a symlink in the user's tree (unless the
/// patch itself removes that symlink first): git refuses it, and Pitroom never writes through one.
fn through_symlink(
    toplevel: &Path,
    e: &PatchEntry,
    entries: &[PatchEntry],
    problems: &mut Vec<EdgeProblem>,
) {
    let mut paths: Vec<&Vec<u8>> = e.old_path.iter().chain(e.new_path.iter()).collect();
    paths.dedup();
    for path in paths {
        let mut prefix_end = 0;
        while let Some(offset) = path[prefix_end..].iter().position(|b| *b == b'/') {
            let prefix = &path[..prefix_end + offset];
            prefix_end += offset + 1;
            let removed_first = entries.iter().any(|other| {
                other.old_path.as_deref() == Some(prefix)
                    && other.old_mode == Some(SYMLINK)
                    && other.new_path.as_deref() != Some(prefix)
            });
            let is_link = std::fs::symlink_metadata(join(toplevel, prefix))
                .is_ok_and(|m| m.file_type().is_symlink());
            if is_link && !removed_first {
                problems.push(EdgeProblem {
                    path: quote_path(path),
                    why: format!(
                        "its folder {} is a symlink in your tree; Pitroom never writes through a symlink",
                        quote_path(prefix)
                    ),
                    hint: format!(
                        "replace the symlink {} with a real folder, or re-run the task on the current tree",
                        quote_path(prefix)
                    ),
                });
                break;
            }
            if std::fs::symlink_metadata(join(toplevel, prefix)).is_err() {
                break;
            }
        }
    }
}

/// A symlink the patch creates whose target is absolute or climbs out of the project.
fn escaping_symlink(e: &PatchEntry, problems: &mut Vec<EdgeProblem>) {
    let (Some(path), Some(SYMLINK)) = (&e.new_path, e.new_mode) else {
        return;
    };
    let hint = "re-run the task asking for a relative link inside the project, or create the link yourself".to_string();
    let Some(target) = &e.new_text else {
        problems.push(EdgeProblem {
            path: quote_path(path),
            why: "a symlink whose target cannot be read from the patch".into(),
            hint,
        });
        return;
    };
    let escapes = target.starts_with(b"/") || {
        let mut depth: i64 = path.iter().filter(|b| **b == b'/').count() as i64;
        let mut out = false;
        for part in target.split(|b| *b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => depth -= 1,
                _ => depth += 1,
            }
            if depth < 0 {
                out = true;
                break;
            }
        }
        out
    };
    if escapes {
        problems.push(EdgeProblem {
            path: quote_path(path),
            why: format!(
                "a symlink pointing outside the project, to {}",
                quote_path(target)
            ),
            hint,
        });
    }
}

/// Files whose bytes the user's attributes would convert on the way in: each must come out of
/// the conversion exactly as the worker left it in `worker_tree`.
fn converted_files(
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
fn autocrlf(git: &Git) -> String {
    git.output(["config", "--get", "core.autocrlf"], None)
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Which of `paths` git converts on the way in and out, with the attributes (or config) that
/// say so: `filter`, `text`, `eol`, `crlf`, `ident`, `working-tree-encoding`, or every path
/// when `core.autocrlf` is on.
fn converting_paths(
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
fn anything_converts(git: &Git, git_dir: &Path) -> Result<bool, GitError> {
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
pub(crate) fn inexact_paths(
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
fn blob_size(header: &[u8]) -> Option<usize> {
    let header = std::str::from_utf8(header).ok()?;
    let mut parts = header.split(' ');
    let (_, kind, size) = (parts.next()?, parts.next()?, parts.next()?);
    (kind == "blob").then(|| size.parse().ok()).flatten()
}

/// How git's checkout converts line endings for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    /// Written as staged.
    Lf,
    /// Each lone LF written as CRLF; `auto` leaves binary content and content that already
    /// has CRs as it is.
    Crlf { auto: bool },
}

impl Eol {
    /// From a path's converting attributes; `None` for what is not judged (filters, ident,
    /// working-tree-encoding) or not converted.
    fn of(attrs: &[String], autocrlf: &str) -> Option<Eol> {
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
    fn checkout(self, blob: &[u8]) -> Vec<u8> {
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

fn join(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

/// A path as git shows it: as is, or C-quoted when it holds control characters, quotes or
/// backslashes (bytes that are not UTF-8 are shown as octal escapes).
pub fn quote_path(path: &[u8]) -> String {
    let plain = std::str::from_utf8(path)
        .ok()
        .filter(|s| !s.chars().any(|c| c.is_control() || c == '"' || c == '\\'));
    if let Some(s) = plain {
        return s.to_string();
    }
    let mut out = String::from("\"");
    for chunk in path.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\{:03o}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out.push('"');
    out
}

/// Undoes git's C-style quoting of a path (`"a\tb"`); a path without quotes is returned as is.
fn unquote(raw: &[u8]) -> Option<Vec<u8>> {
    let Some(inner) = raw.strip_prefix(b"\"") else {
        return Some(raw.to_vec());
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'"' => return Some(out),
            b'\\' => {
                let c = *inner.get(i + 1)?;
                i += 2;
                out.push(match c {
                    b'a' => 7,
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 11,
                    b'f' => 12,
                    b'r' => b'\r',
                    b'0'..=b'7' => {
                        let digits = inner.get(i - 1..i + 2)?;
                        i += 2;
                        digits
                            .iter()
                            .try_fold(0u32, |n, d| {
                                (b'0'..=b'7')
                                    .contains(d)
                                    .then(|| n * 8 + u32::from(d - b'0'))
                            })
                            .and_then(|n| u8::try_from(n).ok())?
                    }
                    other => other,
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// A name from a `---`/`+++`/`rename` line: unquoted, its `a/`/`b/` prefix removed when
/// `prefix` says, and git's trailing tab (after a name with spaces) dropped.
fn header_name(raw: &[u8], prefix: Option<&[u8]>) -> Option<Vec<u8>> {
    let quoted = raw.starts_with(b"\"");
    let mut name = unquote(raw)?;
    if !quoted && name.last() == Some(&b'\t') {
        name.pop();
    }
    match prefix {
        Some(p) => name.strip_prefix(p).map(<[u8]>::to_vec),
        None => Some(name),
    }
}

/// The name on a `diff --git a/X b/X` line, for sections without `---`/`+++` (binary files,
/// mode changes): both names are the same there unless a rename line says otherwise.
fn git_line_name(rest: &[u8]) -> Option<Vec<u8>> {
    if rest.starts_with(b"\"") {
        let end = closing_quote(rest)?;
        return header_name(&rest[..=end], Some(b"a/"));
    }
    // "a/N b/N": N is half of what remains.
    let n = rest.len().checked_sub(5)? / 2;
    let (a, b) = (rest.get(2..2 + n)?, rest.get(2 + n + 3..)?);
    (rest.starts_with(b"a/") && rest.get(2 + n..2 + n + 3) == Some(b" b/") && a == b)
        .then(|| a.to_vec())
}

fn closing_quote(s: &[u8]) -> Option<usize> {
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn mode(raw: &[u8]) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(raw).ok()?.trim(), 8).ok()
}

/// Reads every file section of `patch`. Unknown lines are ignored; a section whose names cannot
/// be read has none.
pub fn parse_patch(patch: &[u8]) -> Vec<PatchEntry> {
    let mut entries: Vec<PatchEntry> = Vec::new();
    let mut offset = 0;
    let mut current: Option<Section> = None;
    for line in patch.split_inclusive(|b| *b == b'\n') {
        let start = offset;
        offset += line.len();
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if let Some(rest) = body.strip_prefix(b"diff --git ") {
            if let Some(done) = current.take() {
                entries.push(done.finish(start));
            }
            current = Some(Section::new(rest, start));
            continue;
        }
        if let Some(section) = current.as_mut() {
            section.line(body);
        }
    }
    if let Some(done) = current.take() {
        entries.push(done.finish(offset));
    }
    entries
}

/// A file section being read.
struct Section {
    entry: PatchEntry,
    git_name: Option<Vec<u8>>,
    in_header: bool,
    new_file: bool,
    deleted: bool,
    hunks: usize,
    old_text: Vec<u8>,
    new_text: Vec<u8>,
    whole: bool,
    /// Which side(s) the last content line went to: for "\ No newline at end of file".
    last: (bool, bool),
}

impl Section {
    fn new(rest: &[u8], start: usize) -> Section {
        Section {
            entry: PatchEntry {
                range: start..start,
                ..PatchEntry::default()
            },
            git_name: git_line_name(rest),
            in_header: true,
            new_file: false,
            deleted: false,
            hunks: 0,
            old_text: Vec::new(),
            new_text: Vec::new(),
            whole: true,
            last: (false, false),
        }
    }

    fn line(&mut self, body: &[u8]) {
        let e = &mut self.entry;
        if self.in_header {
            if let Some(m) = body.strip_prefix(b"new file mode ") {
                self.new_file = true;
                e.new_mode = mode(m);
            } else if let Some(m) = body.strip_prefix(b"deleted file mode ") {
                self.deleted = true;
                e.old_mode = mode(m);
            } else if let Some(m) = body.strip_prefix(b"old mode ") {
                e.old_mode = mode(m);
            } else if let Some(m) = body.strip_prefix(b"new mode ") {
                e.new_mode = mode(m);
            } else if let Some(idx) = body.strip_prefix(b"index ") {
                let mut parts = idx.split(|b| *b == b' ');
                let ids = parts.next().unwrap_or_default();
                if let Some(dots) = ids.windows(2).position(|w| w == b"..") {
                    e.old_blob = Some(String::from_utf8_lossy(&ids[..dots]).into_owned());
                    e.new_blob = Some(String::from_utf8_lossy(&ids[dots + 2..]).into_owned());
                }
                if let Some(m) = parts.next().and_then(mode) {
                    e.old_mode.get_or_insert(m);
                    e.new_mode.get_or_insert(m);
                }
            } else if let Some(n) = body
                .strip_prefix(b"rename from ")
                .or_else(|| body.strip_prefix(b"copy from "))
            {
                e.old_path = header_name(n, None);
            } else if let Some(n) = body
                .strip_prefix(b"rename to ")
                .or_else(|| body.strip_prefix(b"copy to "))
            {
                e.new_path = header_name(n, None);
            } else if let Some(n) = body.strip_prefix(b"--- ") {
                if n != b"/dev/null" {
                    e.old_path = header_name(n, Some(b"a/"));
                }
            } else if let Some(n) = body.strip_prefix(b"+++ ") {
                if n != b"/dev/null" {
                    e.new_path = header_name(n, Some(b"b/"));
                }
            } else if body.starts_with(b"@@ ") {
                self.in_header = false;
                self.hunk(body);
            } else if body.starts_with(b"GIT binary patch") || body.starts_with(b"Binary files ") {
                self.in_header = false;
                self.whole = false;
            }
            return;
        }
        match body.first() {
            Some(b'@') if body.starts_with(b"@@ ") => self.hunk(body),
            Some(b' ') => {
                self.old_text.extend_from_slice(&body[1..]);
                self.old_text.push(b'\n');
                self.new_text.extend_from_slice(&body[1..]);
                self.new_text.push(b'\n');
                self.last = (true, true);
            }
            Some(b'-') => {
                self.old_text.extend_from_slice(&body[1..]);
                self.old_text.push(b'\n');
                self.last = (true, false);
            }
            Some(b'+') => {
                self.new_text.extend_from_slice(&body[1..]);
                self.new_text.push(b'\n');
                self.last = (false, true);
            }
            Some(b'\\') => {
                if self.last.0 {
                    self.old_text.pop();
                }
                if self.last.1 {
                    self.new_text.pop();
                }
            }
            _ => {}
        }
    }

    /// A hunk header: only a single hunk from the first line holds a side whole.
    fn hunk(&mut self, body: &[u8]) {
        self.hunks += 1;
        let from_top = body
            .split(|b| *b == b' ')
            .nth(2)
            .is_some_and(|new| new.starts_with(b"+1") || new.starts_with(b"+0,0"));
        if self.hunks > 1 || !from_top {
            self.whole = false;
        }
    }

    fn finish(mut self, end: usize) -> PatchEntry {
        let e = &mut self.entry;
        e.range.end = end;
        if e.old_path.is_none() && !self.new_file {
            e.old_path = self.git_name.clone();
        }
        if e.new_path.is_none() && !self.deleted {
            e.new_path = self.git_name.clone();
        }
        if self.new_file {
            e.old_path = None;
            e.old_mode = None;
        }
        if self.deleted {
            e.new_path = None;
            e.new_mode = None;
        }
        if self.whole {
            e.old_text = (!self.new_file).then_some(self.old_text);
            e.new_text = (!self.deleted).then_some(self.new_text);
        }
        self.entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_with_newlines_tabs_quotes_and_octal_bytes_are_read_exactly() {
        assert_eq!(
            unquote(br#""a\nb\tc\"d\\e\377f""#).unwrap(),
            b"a\nb\tc\"d\\e\xfff".to_vec()
        );
        assert_eq!(unquote(b"plain name").unwrap(), b"plain name".to_vec());
        assert_eq!(
            header_name(b"a/with space\t", Some(b"a/")).unwrap(),
            b"with space".to_vec()
        );
        assert_eq!(git_line_name(b"a/x y b/x y").unwrap(), b"x y".to_vec());
        assert_eq!(
            git_line_name(br#""a/n\nl" "b/n\nl""#).unwrap(),
            b"n\nl".to_vec()
        );
    }

    #[test]
    fn a_new_symlink_carries_its_mode_and_target() {
        let patch = b"diff --git a/l b/l\nnew file mode 120000\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\ndiff --git a/sub b/sub\nnew file mode 160000\nindex 0000000000000000000000000000000000000000..2222222222222222222222222222222222222222\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 2222222222222222222222222222222222222222\n";
        let entries = parse_patch(patch);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].new_path.as_deref(), Some(&b"l"[..]));
        assert_eq!(entries[0].new_mode, Some(SYMLINK));
        assert_eq!(entries[0].new_text.as_deref(), Some(&b"/etc/passwd"[..]));
        assert_eq!(entries[0].old_path, None);
        assert_eq!(entries[1].new_mode, Some(GITLINK));
        assert_eq!(&patch[entries[1].range.clone()][..15], b"diff --git a/su");
    }

    #[test]
    fn binary_and_mode_only_sections_take_their_name_from_the_git_line() {
        let patch = b"diff --git a/bad\xff.bin b/bad\xff.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333\nGIT binary patch\nliteral 1\nIcmZpc000310RR91\n\nliteral 0\nHcmV?d00001\n\ndiff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
        let entries = parse_patch(patch);
        assert_eq!(entries[0].new_path.as_deref(), Some(&b"bad\xff.bin"[..]));
        assert_eq!(entries[0].new_text, None, "binary content is not read");
        assert_eq!(entries[1].old_path.as_deref(), Some(&b"run.sh"[..]));
        assert_eq!(
            (entries[1].old_mode, entries[1].new_mode),
            (Some(0o100644), Some(0o100755))
        );
    }

    #[test]
    fn symlink_targets_escape_when_absolute_or_climbing_past_the_top() {
        let link = |path: &[u8], target: &[u8]| PatchEntry {
            new_path: Some(path.to_vec()),
            new_mode: Some(SYMLINK),
            new_text: Some(target.to_vec()),
            ..PatchEntry::default()
        };
        let escapes = |e: PatchEntry| {
            let mut p = Vec::new();
            escaping_symlink(&e, &mut p);
            !p.is_empty()
        };
        assert!(escapes(link(b"a", b"/etc/passwd")));
        assert!(escapes(link(b"a", b"../x")));
        assert!(escapes(link(b"d/a", b"../../x")));
        assert!(escapes(link(b"d/a", b"x/../../../y")));
        assert!(!escapes(link(b"d/a", b"../README.md")));
        assert!(!escapes(link(b"a", b"./src/./lib.rs")));
    }

    /// Names git must quote, read back exactly from a real `diff_trees` patch.
    #[test]
    fn real_patches_with_quoted_names_parse_to_the_exact_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path();
        let git = |args: &[&str]| pitroom_testkit::repo::git_ok(top, args);
        git(&["init", "-q"]);
        std::fs::write(top.join("keep"), "k").expect("w");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "c"]);
        let before = git(&["rev-parse", "HEAD^{tree}"]).trim().to_string();
        let names: [&[u8]; 6] = [
            b"new\nline.txt",
            b"tab\there",
            b"quo\"te",
            b"back\\slash",
            b"bad\xff\xfe.bin",
            b"with space",
        ];
        for name in names {
            std::fs::write(top.join(OsStr::from_bytes(name)), "x\n").expect("w");
        }
        std::fs::write(top.join("binary"), b"\0\x01").expect("w");
        std::os::unix::fs::symlink("keep", top.join("link")).expect("link");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "d"]);
        let after = git(&["rev-parse", "HEAD^{tree}"]).trim().to_string();
        let changes = crate::diff_trees(&top.join(".git"), &before, &after, false).expect("diff");
        let entries = parse_patch(&changes.patch);
        let mut seen: Vec<Vec<u8>> = entries.iter().filter_map(|e| e.new_path.clone()).collect();
        seen.sort();
        let mut want: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
        want.extend([b"binary".to_vec(), b"link".to_vec()]);
        want.sort();
        assert_eq!(seen, want);
        let link = entries
            .iter()
            .find(|e| e.new_path.as_deref() == Some(&b"link"[..]))
            .expect("link");
        assert_eq!(
            (link.new_mode, link.new_text.as_deref()),
            (Some(SYMLINK), Some(&b"keep"[..]))
        );
        assert!(entries
            .iter()
            .all(|e| e.old_path.is_none() && e.new_blob.is_some()));
    }

    #[test]
    fn checkout_eol_follows_the_attributes() {
        let attrs = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let crlf = Eol::of(&attrs(&["text=set", "eol=crlf"]), "").unwrap();
        assert_eq!(crlf.checkout(b"a\nb\r\nc"), b"a\r\nb\r\nc".to_vec());
        let auto = Eol::of(&attrs(&["text=auto"]), "").unwrap();
        assert_eq!(auto, Eol::Lf, "native LF: written as staged");
        let auto_crlf = Eol::of(&attrs(&[]), "true").unwrap();
        assert_eq!(auto_crlf.checkout(b"bin\0\n"), b"bin\0\n".to_vec());
        assert_eq!(auto_crlf.checkout(b"x\n"), b"x\r\n".to_vec());
        assert_eq!(Eol::of(&attrs(&["filter=lfs", "text=set"]), ""), None);
    }

    #[test]
    fn paths_are_shown_quoted_only_when_they_need_it() {
        assert_eq!(quote_path(b"src/a b.rs"), "src/a b.rs");
        assert_eq!(quote_path("déjà".as_bytes()), "déjà");
        assert_eq!(quote_path(b"new\nline"), "\"new\\nline\"");
        assert_eq!(quote_path(b"bad\xff"), "\"bad\\377\"");
    }
}
