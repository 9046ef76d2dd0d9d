//! Identifiers cited next to references: the backticked name an answer puts beside `a.rs:3`.

use super::scan::{byte_at, has_known_extension, is_ident_char, Found};
use super::vocab::{KNOWN_NAMES, LINKING_WORDS, MAX_GAP_WORDS, SYMBOL_PREFIX_WORDS};

/// An inline code span holding an identifier, in char indices `[from, to)` (backticks included).
pub(super) struct Span {
    from: usize,
    to: usize,
    ident: String,
}

fn code_spans(cs: &[(usize, char)]) -> Vec<Span> {
    let run_at = |k: usize| cs[k..].iter().take_while(|&&(_, c)| c == '`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if cs[i].1 != '`' {
            i += 1;
            continue;
        }
        let run = run_at(i);
        let open_end = i + run;
        let inline = run <= 2;
        let mut j = open_end;
        let mut close = None;
        while j < cs.len() {
            match cs[j].1 {
                '`' => {
                    let r = run_at(j);
                    if r == run {
                        close = Some(j);
                        break;
                    }
                    j += r;
                }
                '\n' if inline => break,
                _ => j += 1,
            }
        }
        match close {
            Some(j) => {
                if inline {
                    let content: String = cs[open_end..j].iter().map(|&(_, c)| c).collect();
                    if let Some(ident) = normalize_symbol(&content) {
                        out.push(Span {
                            from: i,
                            to: j + run,
                            ident,
                        });
                    }
                }
                i = j + run;
            }
            None => i = open_end,
        }
    }
    out
}

/// The identifier a code span names (`parse_config`, `Session::new`, `fn load` → `load`,
/// `run()` → `run`), or `None` for code that is not one identifier (paths, file names,
/// expressions).
fn normalize_symbol(content: &str) -> Option<String> {
    // Drop argument lists and generics.
    let mut called = false;
    let mut depth = 0usize;
    let mut flat = String::new();
    for c in content.trim().replace("->", ".").chars() {
        match c {
            '(' | '<' => {
                called |= c == '(';
                depth += 1;
            }
            ')' | '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => flat.push(c),
            _ => {}
        }
    }
    if depth > 0 {
        return None; // `a < b`: an expression, not a name
    }
    let words: Vec<&str> = flat.split_whitespace().collect();
    let (last, prefix) = words.split_last()?;
    if !prefix.iter().all(|w| SYMBOL_PREFIX_WORDS.contains(w)) {
        return None;
    }
    let token = last
        .trim_end_matches(['!', '?'])
        .trim_start_matches(['&', '*']);
    let segments: Vec<&str> = token
        .split("::")
        .flat_map(|s| s.split(['.', '#']))
        .collect();
    let is_ident = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && chars.all(is_ident_char)
    };
    if !segments.iter().all(|s| is_ident(s)) {
        return None;
    }
    if !called && (has_known_extension(token) || KNOWN_NAMES.contains(&token)) {
        return None;
    }
    Some(token.to_string())
}

/// Whether `gap` crosses a line or sentence boundary.
fn crosses_sentence(gap: &str) -> bool {
    let mut chars = gap.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            return true;
        }
        if matches!(c, '.' | '!' | '?' | ';') && chars.peek().is_some_and(|n| n.is_whitespace()) {
            return true;
        }
    }
    false
}

fn gap_words(gap: &str) -> Vec<String> {
    gap.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '\'' {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Gives each reference the nearest adjacent backticked identifier of its sentence.
///
/// An identifier between two references goes to the nearer one, unless the words between it
/// and the next reference end with "at", "in", "on"… (`parse` at a.rs:3): then it goes to that
/// one. A reference with several identifiers keeps the nearest.
pub(super) fn attach_symbols(s: &str, cs: &[(usize, char)], found: &mut [Found]) {
    if found.is_empty() {
        return;
    }
    let text = |from: usize, to: usize| &s[byte_at(s, cs, from)..byte_at(s, cs, to)];
    let adjacent = |gap: &str| !crosses_sentence(gap) && gap_words(gap).len() <= MAX_GAP_WORDS;
    // Per reference: the nearest identifier claimed so far and its distance.
    let mut best: Vec<Option<(usize, String)>> = vec![None; found.len()];
    for span in code_spans(cs) {
        // `found` is sorted and disjoint: references ending by the span start come first.
        let split = found.partition_point(|f| f.to <= span.from);
        if found.get(split).is_some_and(|f| f.from < span.to) {
            continue; // the span overlaps a reference
        }
        let prev = split.checked_sub(1).and_then(|p| {
            let gap = text(found[p].to, span.from);
            adjacent(gap).then_some((p, span.from - found[p].to))
        });
        let next = found.get(split).and_then(|f| {
            let gap = text(span.to, f.from);
            let linked = gap_words(gap)
                .last()
                .is_some_and(|w| LINKING_WORDS.contains(&w.as_str()));
            adjacent(gap).then_some((split, f.from - span.to, linked))
        });
        let choice = match (prev, next) {
            (_, Some((n, d, true))) => Some((n, d)),
            (Some((p, dp)), Some((n, dn, false))) => Some(if dn < dp { (n, dn) } else { (p, dp) }),
            (Some(p), None) => Some(p),
            (None, Some((n, d, false))) => Some((n, d)),
            (None, None) => None,
        };
        if let Some((r, d)) = choice {
            if best[r].as_ref().is_none_or(|(bd, _)| d < *bd) {
                best[r] = Some((d, span.ident));
            }
        }
    }
    for (f, b) in found.iter_mut().zip(best) {
        f.citation.symbol = b.map(|(_, ident)| ident);
    }
}
