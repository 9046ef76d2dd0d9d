//! Text on its way to a terminal, made inert: a worker's patch, answer, file names or error
//! must not be able to drive the terminal that shows them (an `ESC [1A ESC [2K` erases the
//! line above, a lone CR lets a line overwrite itself, a right-to-left override reorders what
//! the reader sees). [`neutralise`] is the one function every front end's terminal text goes
//! through; JSON output does not need it (JSON escapes control characters itself) and stays
//! byte-exact.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character that could move the cursor, erase, retitle or reorder the
/// display written as a visible escape instead: C0 controls but `\n` and `\t` (`\x1b`, `\x08`,
/// `\x00`), DEL (`\x7f`), C1 controls (`\u{9b}`, a one-character CSI on some terminals) and
/// the Unicode bidirectional controls (`\u{202e}`). A CR right before a LF stays: it is a
/// CRLF line ending, which moves nothing a LF alone would not. Text with none of these is
/// returned as is, without a copy.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    let Some(first) = text.char_indices().find(|&(i, c)| needs_escape(text, i, c)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first.0]);
    for (i, c) in text[first.0..].char_indices() {
        let at = first.0 + i;
        if needs_escape(text, at, c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether the character `c` at byte `at` of `text` must be escaped.
fn needs_escape(text: &str, at: usize, c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\r' => text.as_bytes().get(at + 1) != Some(&b'\n'),
        c if c.is_ascii_control() => true,
        '\u{80}'..='\u{9f}' => true,
        c => is_bidi_control(c),
    }
}

/// The Unicode characters that reorder the text around them (the "Trojan Source" set).
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// The visible form of an escaped character: `\xNN` for ASCII, `\u{NNNN}` beyond.
fn push_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    let _ = if code < 0x80 {
        write!(out, "\\x{code:02x}")
    } else {
        write!(out, "\\u{{{code:x}}}")
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_that_erase_the_line_above_become_visible_text() {
        let hostile = "ok line\n\x1b[1A\x1b[2Kfake: all tests passed";
        let shown = neutralise(hostile);
        assert_eq!(shown, "ok line\n\\x1b[1A\\x1b[2Kfake: all tests passed");
        assert!(!shown.contains('\x1b'));
    }

    #[test]
    fn carriage_return_backspace_nul_and_del_are_escaped_but_newline_and_tab_stay() {
        assert_eq!(
            neutralise("a\rb\x08c\x00d\x7fe\tf\ng"),
            "a\\x0db\\x08c\\x00d\\x7fe\tf\ng"
        );
    }

    #[test]
    fn a_crlf_line_ending_stays_but_a_lone_cr_does_not() {
        assert_eq!(neutralise("one\r\ntwo\r"), "one\r\ntwo\\x0d");
        assert_eq!(neutralise("x\r\r\n"), "x\\x0d\r\n");
    }

    #[test]
    fn c1_controls_and_bidi_overrides_are_escaped() {
        assert_eq!(
            neutralise("a\u{9b}2Jb \u{202e}cba\u{2069} é ✔"),
            "a\\u{9b}2Jb \\u{202e}cba\\u{2069} é ✔"
        );
    }

    #[test]
    fn plain_text_comes_back_borrowed() {
        let text = "pitroom ✔ done · run 1\n\tdiff --git a/x b/x\r\n";
        assert!(matches!(neutralise(text), Cow::Borrowed(t) if t == text));
    }
}
