//! Text from files, made safe to print on a terminal. A name read from a `results.json`, a
//! trace or a snapshot can hold control characters: an escape sequence (`ESC ]0;…BEL` retitles
//! the window, `ESC [2J` clears it, others have rewritten a terminal's answerback), a carriage
//! return that overprints the line, a newline that forges a row. [`escape`] writes every such
//! character as a visible escape, so the terminal shows the bytes instead of obeying them.
//!
//! Escaped: the C0 controls and DEL (`\x1b`, `\t`, `\n`, `\r` among them), the C1 controls
//! (U+0080..=U+009F, which some terminals obey as the 8-bit forms of ESC sequences), and the
//! bidirectional overrides and isolates (U+202A..=U+202E, U+2066..=U+2069), which reorder the
//! text around them on screen ("Trojan Source"). Everything else, multi-byte characters
//! included, is left as it is.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character (and bidirectional override) written as a visible escape:
/// `\n`, `\r`, `\t`, `\x1b` for the C0 controls and DEL, `\u{9b}` beyond. Borrowed when there
/// is nothing to escape (the usual case), so a name costs one scan.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if !unsafe_char(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_overrides_are_escaped_the_rest_kept() {
        assert!(matches!(escape("drain avg ééé €"), Cow::Borrowed(_)));
        assert_eq!(
            escape("\x1b]0;pwned\x07\x1b[31mred"),
            "\\x1b]0;pwned\\x07\\x1b[31mred"
        );
        assert_eq!(escape("a\nb\rc\td\x7f"), "a\\nb\\rc\\td\\x7f");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("x\u{202e}y\u{2066}z"), "x\\u{202e}y\\u{2066}z");
        assert_eq!(escape("é\x1bé"), "é\\x1bé");
    }
}
