//! Whether a cited identifier is where the answer says: near the lines, or defined around them.

use super::files::FileData;
use super::scan::is_ident_char;
use super::vocab::{CONTROL_WORDS, DEFINITION_REACH, DEF_KEYWORDS, SYMBOL_SLACK};

/// The name checked for `symbol`: the last segment of `A::b`, `a.b`, `A#b`.
pub(super) fn last_segment(symbol: &str) -> &str {
    symbol
        .rsplit([':', '.', '#'])
        .find(|s| !s.is_empty())
        .unwrap_or(symbol)
}

/// Byte offsets where `name` occurs in `line` as a whole word.
pub(super) fn word_positions<'a>(line: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(name).map(|(p, _)| p).filter(move |&p| {
        let before = line[..p].chars().next_back();
        let after = line[p + name.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// Whether `symbol` appears within a few lines of the range, or is defined on a line above it
/// that may enclose it.
pub(super) fn symbol_near(data: &FileData, symbol: &str, start: u32, end: u32) -> bool {
    let name = last_segment(symbol);
    if name.is_empty() {
        return true;
    }
    let lines = data.line_count().unwrap_or(0);
    let low = start.saturating_sub(SYMBOL_SLACK).max(1);
    let high = end.saturating_add(SYMBOL_SLACK).min(lines);
    if (low..=high).any(|n| word_positions(data.line(n), name).next().is_some()) {
        return true;
    }
    let floor = start.saturating_sub(DEFINITION_REACH).max(1);
    (floor..start).rev().any(|n| defines(data.line(n), name))
}

/// Whether `symbol` is defined on the cited lines, or by a definition above them whose indented
/// body still runs at the first cited line: a stronger clue than a mention nearby, which is what
/// tells apart files that all use the name.
pub(super) fn defined_at_or_enclosing(data: &FileData, symbol: &str, start: u32, end: u32) -> bool {
    let name = last_segment(symbol);
    if name.is_empty() || start == 0 {
        return false;
    }
    let lines = data.line_count().unwrap_or(0);
    let last = end.min(lines).min(start.saturating_add(DEFINITION_REACH));
    if (start..=last).any(|n| defines(data.line(n), name)) {
        return true;
    }
    let floor = start.saturating_sub(DEFINITION_REACH).max(1);
    (floor..start)
        .rev()
        .any(|n| defines(data.line(n), name) && body_reaches(data, n, start))
}

/// Whether the block a definition opens on line `def` still runs at line `target`: every
/// non-blank line in between is indented deeper than the definition, but for a signature's
/// closing bracket or an opening brace on its own line; the block's own closing line (`}`,
/// `end`) may be `target` itself.
fn body_reaches(data: &FileData, def: u32, target: u32) -> bool {
    let depth = indentation(data.line(def));
    for n in def + 1..=target {
        let line = data.line(n);
        let text = line.trim();
        if text.is_empty() || indentation(line) > depth {
            continue;
        }
        let same_depth = indentation(line) == depth;
        if same_depth && text.starts_with([')', ']', '{']) {
            continue;
        }
        let closes = text.starts_with('}') || text == "end" || text.starts_with("end ");
        return same_depth && closes && n == target;
    }
    true
}

/// The width of a line's leading whitespace, a tab counting as four columns.
fn indentation(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// `impl<T: Clone>` → `impl`: drops a trailing generic parameter list.
fn strip_generics(text: &str) -> &str {
    if !text.ends_with('>') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            '>' if !text[..i].ends_with('-') => depth += 1,
            '<' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    text
}

/// Whether `line` defines `name`: `fn name`, `class name`, `impl X for name`, `name(…) {`,
/// `name = function`, `name: (…) =>` and the like.
pub(super) fn defines(line: &str, name: &str) -> bool {
    let trimmed = line.trim();
    let first_word = trimmed.split_whitespace().next().unwrap_or("");
    for p in word_positions(line, name) {
        let before = line[..p].trim_end();
        let after = line[p + name.len()..].trim_start();
        let last_word = strip_generics(before)
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or("");
        let keyword = last_word.trim_end_matches(['*', '&']);
        if DEF_KEYWORDS.contains(&keyword)
            || (keyword == "for" && before.split_whitespace().any(|w| w.starts_with("impl")))
        {
            return true;
        }
        if after.starts_with('(') {
            let prev = before.chars().next_back();
            let prev_ok =
                prev.is_none_or(|c| is_ident_char(c) || matches!(c, ')' | '*' | '&' | '>' | ']'));
            let no_expression =
                !before.contains('=') && (!before.contains('(') || first_word == "func");
            if prev_ok
                && no_expression
                && !CONTROL_WORDS.contains(&first_word)
                && !trimmed.ends_with([';', ','])
            {
                return true;
            }
        }
        let assigned =
            (after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>"))
                || (after.starts_with(':') && !after.starts_with("::"));
        if assigned {
            let value = &after[1..];
            if ["function", "=>", "lambda", "fn", "|"]
                .iter()
                .any(|marker| value.contains(marker))
            {
                return true;
            }
        }
    }
    false
}
