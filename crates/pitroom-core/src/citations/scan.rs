//! Scanning an answer for `path:line` references (pure, no I/O).

use super::vocab::{
    DOT_FILES, HOST_SUFFIXES, KNOWN_EXTENSIONS, KNOWN_NAMES, MAX_WORD_LOOKBACK, PRODUCT_NAMES,
};
use super::Citation;

/// A reference and where it sits, in char indices `[from, to)`.
pub(super) struct Found {
    pub(super) citation: Citation,
    pub(super) from: usize,
    pub(super) to: usize,
}

fn ch(cs: &[(usize, char)], i: usize) -> Option<char> {
    cs.get(i).map(|&(_, c)| c)
}

pub(super) fn byte_at(s: &str, cs: &[(usize, char)], i: usize) -> usize {
    cs.get(i).map_or(s.len(), |&(b, _)| b)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@' | '+' | '~')
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

pub(super) fn scan_refs(s: &str, cs: &[(usize, char)]) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        // A path never reaches back into the reference before it: references are disjoint.
        let floor = out.last().map_or(0, |f| f.to);
        match try_ref(s, cs, i, floor) {
            Some(found) => {
                i = found.to.max(i + 1);
                out.push(found);
            }
            None => i += 1,
        }
    }
    out
}

/// A reference whose path ends right before `i` (a `:` or the `#` of `#L`) and starts at or
/// after `floor`, if there is one.
fn try_ref(s: &str, cs: &[(usize, char)], i: usize, floor: usize) -> Option<Found> {
    let (start, end, to) = match ch(cs, i)? {
        ':' => colon_lines(cs, i + 1)?,
        '#' => hash_lines(cs, i + 1)?,
        _ => return None,
    };
    if !ends_cleanly(cs, to) {
        return None;
    }
    let mut from = i;
    while from > floor && is_path_char(cs[from - 1].1) {
        from -= 1;
    }
    while from < i && cs[from].1 == '-' {
        from += 1;
    }
    if from == i {
        return None;
    }
    // Anything with `://` before it in the same word is a URL.
    let mut word = from;
    while word > 0 && from - word < MAX_WORD_LOOKBACK && !cs[word - 1].1.is_whitespace() {
        word -= 1;
    }
    if s[byte_at(s, cs, word)..byte_at(s, cs, i)].contains("://") {
        return None;
    }
    let path = &s[byte_at(s, cs, from)..byte_at(s, cs, i)];
    if !plausible_path(path) {
        return None;
    }
    Some(Found {
        citation: Citation {
            text: s[byte_at(s, cs, from)..byte_at(s, cs, to)].to_string(),
            path: path.to_string(),
            start,
            end,
            symbol: None,
        },
        from,
        to,
    })
}

/// 1 to 9 ASCII digits at `k`: their value and the index after them.
fn digits(cs: &[(usize, char)], k: usize) -> Option<(u32, usize)> {
    let mut m = k;
    let mut value: u32 = 0;
    while let Some(c) = ch(cs, m).filter(char::is_ascii_digit) {
        if m - k == 9 {
            return None;
        }
        value = value * 10 + c.to_digit(10).unwrap_or(0);
        m += 1;
    }
    (m > k).then_some((value, m))
}

/// `-20`, `–20` or `-L20` after a start line.
fn range_end(cs: &[(usize, char)], k: usize) -> Option<(u32, usize)> {
    if !matches!(ch(cs, k), Some('-' | '–')) {
        return None;
    }
    let m = if ch(cs, k + 1) == Some('L') {
        k + 2
    } else {
        k + 1
    };
    digits(cs, m)
}

/// After `:`: `12`, `12-20`, `12:5` (column ignored), `L12`, `L12-L20`.
fn colon_lines(cs: &[(usize, char)], k: usize) -> Option<(u32, u32, usize)> {
    let l_prefix = ch(cs, k) == Some('L');
    let (start, k) = digits(cs, if l_prefix { k + 1 } else { k })?;
    if let Some((end, k)) = range_end(cs, k) {
        return Some((start, end, k));
    }
    if !l_prefix && ch(cs, k) == Some(':') {
        if let Some((_column, k)) = digits(cs, k + 1) {
            // `12:5-14:2`: a range of line:column positions.
            if let Some((end, k)) = range_end(cs, k) {
                let k = match ch(cs, k) {
                    Some(':') => digits(cs, k + 1).map_or(k, |(_, m)| m),
                    _ => k,
                };
                return Some((start, end, k));
            }
            return Some((start, start, k));
        }
    }
    Some((start, start, k))
}

/// After `#`: `L12`, `L12-L20`, `L12-20`, with optional GitHub columns (`L12C3-L20C9`).
fn hash_lines(cs: &[(usize, char)], k: usize) -> Option<(u32, u32, usize)> {
    if ch(cs, k) != Some('L') {
        return None;
    }
    let skip_column = |k: usize| match ch(cs, k) {
        Some('C') => digits(cs, k + 1).map_or(k, |(_, m)| m),
        _ => k,
    };
    let (start, k) = digits(cs, k + 1)?;
    let k = skip_column(k);
    match range_end(cs, k) {
        Some((end, k)) => Some((start, end, skip_column(k))),
        None => Some((start, start, k)),
    }
}

/// Whether the reference may end at `k`: end of text, space or closing punctuation — not the
/// middle of a longer token (`1.2.3:4.5`, `a.rs:12abc`, `a.rs:12/x`).
fn ends_cleanly(cs: &[(usize, char)], k: usize) -> bool {
    let Some(c) = ch(cs, k) else {
        return true;
    };
    if c.is_alphanumeric()
        || matches!(
            c,
            '_' | '/' | '\\' | '@' | '#' | '%' | '$' | '~' | '+' | '=' | '&'
        )
    {
        return false;
    }
    if matches!(c, '.' | ':' | '-' | '–') {
        return !ch(cs, k + 1).is_some_and(char::is_alphanumeric);
    }
    true
}

/// Whether a would-be path (the text before `:12`) names a file rather than a method call,
/// a host, a version, a time or a ratio.
fn plausible_path(path: &str) -> bool {
    if !path.chars().any(char::is_alphabetic) || path.ends_with('/') || path.contains("//") {
        return false;
    }
    if is_version(path) {
        return false;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.is_empty() || name == "." || name == ".." {
        return false;
    }
    match path.split_once('/') {
        Some((first, _)) => !is_host(first),
        None => is_known_file_name(name),
    }
}

/// `v1.2.3`, `1.2`, `V2.0.1-rc1`.
fn is_version(s: &str) -> bool {
    let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// `localhost`, `example.com`, `127.0.0.1` as the first segment of a path.
fn is_host(segment: &str) -> bool {
    if segment == "localhost" {
        return true;
    }
    if segment.starts_with('.') || !segment.contains('.') {
        return false;
    }
    if segment.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return true;
    }
    let tld = segment
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    HOST_SUFFIXES.contains(&tld.as_str())
}

pub(super) fn has_known_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !stem.ends_with('.') => {
            KNOWN_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        _ => false,
    }
}

/// A file name without `/` that is cited on its own: known extension, known extension-less
/// name (or `Name.suffix`), or known dot file — but not a product name (`Node.js:20`).
fn is_known_file_name(name: &str) -> bool {
    if PRODUCT_NAMES.contains(&name.to_ascii_lowercase().as_str()) {
        return false;
    }
    if let Some(rest) = name.strip_prefix('.') {
        let first = rest.split('.').next().unwrap_or("");
        if DOT_FILES.contains(&first) {
            return true;
        }
    }
    let stem = name.split('.').next().unwrap_or("");
    KNOWN_NAMES.contains(&name) || KNOWN_NAMES.contains(&stem) || has_known_extension(name)
}
