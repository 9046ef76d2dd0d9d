//! Reading a patch as git writes it: entries, modes, C-quoted names.

use super::*;

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
pub(super) fn unquote(raw: &[u8]) -> Option<Vec<u8>> {
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
pub(super) fn header_name(raw: &[u8], prefix: Option<&[u8]>) -> Option<Vec<u8>> {
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
pub(super) fn git_line_name(rest: &[u8]) -> Option<Vec<u8>> {
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

pub(super) fn closing_quote(s: &[u8]) -> Option<usize> {
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

pub(super) fn mode(raw: &[u8]) -> Option<u32> {
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
pub(super) struct Section {
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
                e.binary = true;
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
