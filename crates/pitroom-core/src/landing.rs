//! What `apply` would land that its preview does not show: files whose shown (redacted) patch
//! differs from the stored one, and files whose content lands as binary (unreadable in any
//! preview). `show --patch`, the review package and `apply` all read the patch through
//! [`shown_patch`], so the refusal compares the very text the user was shown.

use std::path::Path;

use pitroom_git::{parse_patch, quote_path, PatchEntry};

use crate::record::RunRecord;
use crate::redact::Redactor;

/// The redactor a run's patch is shown through: the well-known formats and the values of the
/// secret files at the top of its repository.
pub fn redactor_for(record: &RunRecord) -> Redactor {
    let dirs: Vec<&Path> = record.repo.iter().map(|p| p.as_path()).collect();
    Redactor::for_dirs(&dirs)
}

/// The patch as it is shown: its text with secrets redacted. Redaction keeps every line
/// (`redact::mask`), so line `n` here is line `n` of the stored patch.
pub fn shown_patch(patch: &[u8], redactor: &Redactor) -> String {
    redactor.redact(&String::from_utf8_lossy(patch))
}

/// The files (as git quotes their names) with a line whose shown form differs from what
/// would land (an added or removed line, or a header), in patch order. Should the shown text
/// ever lose a line, every file counts.
pub fn redacted_files(patch: &[u8], redactor: &Redactor) -> Vec<String> {
    let raw = String::from_utf8_lossy(patch);
    let shown = redactor.redact(&raw);
    if shown == raw {
        return Vec::new();
    }
    let entries = parse_patch(patch);
    let raw_lines: Vec<&str> = raw.split('\n').collect();
    let shown_lines: Vec<&str> = shown.split('\n').collect();
    if raw_lines.len() != shown_lines.len() {
        return entries.iter().map(entry_name).collect();
    }
    // A context line (a leading blank) lands nothing: it is already in the user's file, so a
    // secret masked there hides no change.
    let changed: Vec<usize> = (0..raw_lines.len())
        .filter(|&i| raw_lines[i] != shown_lines[i] && !raw_lines[i].starts_with(' '))
        .collect();
    entries
        .iter()
        .filter(|e| {
            let lines = line_span(patch, e);
            changed.iter().any(|i| lines.contains(i))
        })
        .map(entry_name)
        .collect()
}

/// A file whose new content the patch carries unreadably.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnseenFile {
    /// As git quotes it.
    pub path: String,
    /// A file the patch creates (not one it changes).
    pub new: bool,
    /// Lands with mode 100755.
    pub executable: bool,
    /// Its content starts with `#!`: the kernel runs it as a script.
    pub script: bool,
}

impl UnseenFile {
    /// `new executable script, binary`-style words for a report or a refusal.
    pub fn describe(&self) -> String {
        let mut words = vec![if self.new { "new" } else { "changed" }];
        if self.executable {
            words.push("executable");
        }
        if self.script {
            words.push("#! script");
        }
        format!("{} (binary: not shown)", words.join(", "))
    }
}

/// The files whose content lands as binary: sections git wrote as a binary patch, and text
/// sections holding a NUL byte (a terminal shows nothing of it, and git calls such a file
/// binary). Deletions land nothing and are not listed.
pub fn unseen_files(patch: &[u8]) -> Vec<UnseenFile> {
    parse_patch(patch)
        .iter()
        .filter(|e| e.new_path.is_some())
        .filter_map(|e| {
            let section = patch.get(e.range.clone())?;
            let nul = section.contains(&0);
            (e.binary || nul).then(|| UnseenFile {
                path: entry_name(e),
                new: e.old_path.is_none(),
                executable: e.new_mode == Some(0o100755),
                script: starts_with_shebang(e, section),
            })
        })
        .collect()
}

/// The name a refusal gives an entry: its new path, else its old one.
fn entry_name(e: &PatchEntry) -> String {
    let path = e.new_path.as_ref().or(e.old_path.as_ref());
    path.map(|p| quote_path(p)).unwrap_or_default()
}

/// The lines (0-based) of the patch that entry `e` spans.
fn line_span(patch: &[u8], e: &PatchEntry) -> std::ops::Range<usize> {
    let count = |end: usize| {
        patch
            .get(..end)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
    };
    count(e.range.start)..count(e.range.end)
}

/// Whether the new content of `e` starts with `#!`: read from a binary section's literal, or
/// from the first added line of a new text file.
fn starts_with_shebang(e: &PatchEntry, section: &[u8]) -> bool {
    if e.binary {
        return binary_literal_head(section).is_some_and(|head| head.starts_with(b"#!"));
    }
    if e.old_path.is_some() {
        // A changed file's first hunk need not start at its first line.
        return false;
    }
    let mut lines = section.split(|&b| b == b'\n');
    lines.any(|l| l.starts_with(b"@@ "))
        && lines.next().is_some_and(|first| first.starts_with(b"+#!"))
}

/// The first bytes of the new content of a `GIT binary patch` section written as a `literal`
/// (always so for a new file; a `delta` needs the old content and gives `None`).
fn binary_literal_head(section: &[u8]) -> Option<Vec<u8>> {
    let mut lines = section.split(|&b| b == b'\n');
    lines.find(|l| l.starts_with(b"GIT binary patch"))?;
    lines.next()?.strip_prefix(b"literal ")?;
    let mut deflated = Vec::new();
    // The first lines hold the stream's first block header and its first bytes: a file of
    // 100 MB is not decoded whole to read two.
    for line in lines.take_while(|l| !l.is_empty()).take(HEAD_LINES) {
        deflated.extend(base85_line(line)?);
    }
    // Enough to read a `#!`; a partial inflate is no error here.
    let head = match miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&deflated, 64) {
        Ok(all) => all,
        Err(partial) => partial.output,
    };
    Some(head)
}

/// How many lines of a binary literal (52 bytes each) are decoded to read its first bytes.
const HEAD_LINES: usize = 64;

/// Git's base85 alphabet (`base85.c`).
const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// One line of a git binary patch: a length letter (`A`–`Z` 1–26 bytes, `a`–`z` 27–52), then
/// groups of five base85 characters, four bytes each.
fn base85_line(line: &[u8]) -> Option<Vec<u8>> {
    let (&len, data) = line.split_first()?;
    let len = match len {
        b'A'..=b'Z' => usize::from(len - b'A') + 1,
        b'a'..=b'z' => usize::from(len - b'a') + 27,
        _ => return None,
    };
    let mut out = Vec::with_capacity(data.len() / 5 * 4);
    for group in data.chunks(5) {
        let mut value: u32 = 0;
        for &c in group {
            let digit = BASE85.iter().position(|&a| a == c)?;
            value = value
                .checked_mul(85)?
                .checked_add(u32::try_from(digit).ok()?)?;
        }
        out.extend_from_slice(&value.to_be_bytes());
    }
    out.truncate(len);
    Some(out)
}

#[cfg(test)]
mod tests;
