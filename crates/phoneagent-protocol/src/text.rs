//! Making untrusted text inert before a terminal or a prompt shows it (SPEC S14).
//!
//! Text from a model (`target_description`, `reason`, a finish message), from the screen (OCR)
//! or from the task may carry terminal control: escape sequences that clear the screen, move
//! the cursor, set the window title or draw a fake approval prompt, a carriage return that
//! overwrites the line, bidirectional overrides that reorder what is shown. [`inert_line`] and
//! [`inert_block`] remove all of them; what is left can only print as itself.
//!
//! Removed: every escape sequence introduced by ESC (CSI `ESC [ … final`, OSC `ESC ] … BEL|ST`,
//! DCS/SOS/PM/APC `ESC P|X|^|_ … ST`, and two-character `ESC x`), their 8-bit C1 forms (U+0080
//! –U+009F, incl. CSI U+009B and OSC U+009D with their parameters), every other C0 control and
//! DEL, and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
//! U+2066–U+2069). Line breaks (`\n`, `\r\n`, `\r`, U+2028, U+2029) become a space in
//! [`inert_line`] and `\n` in [`inert_block`]; a tab becomes a space.
//!
//! Also [`is_han`], the one test of "a Chinese character" that redaction and the gate's screen
//! reading share.

/// True for a Han ideograph: the CJK Unified Ideographs (U+4E00–U+9FFF), Extension A
/// (U+3400–U+4DBF), the Compatibility Ideographs (U+F900–U+FAFF) and the supplementary planes'
/// ideographs (U+20000–U+2FFFF). Kana, hangul and punctuation are not Han.
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
}

/// `s` as one inert line: no control characters, no escape sequences, no line breaks
/// (each becomes a space), no bidi overrides. Printable text, CJK and emoji are kept as is.
pub fn inert_line(s: &str) -> String {
    clean(s, false)
}

/// `s` as inert text that may span lines: like [`inert_line`], but line breaks are kept as `\n`
/// (a lone `\r` becomes `\n` too, so it cannot overwrite a line).
pub fn inert_block(s: &str) -> String {
    clean(s, true)
}

/// True when `s` holds nothing that [`inert_block`] would remove or change.
pub fn is_inert(s: &str) -> bool {
    !s.chars().any(|c| {
        (c.is_control() && c != '\n') || is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}')
    })
}

fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Where the scanner is inside an escape sequence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    /// After ESC: the next character picks the sequence.
    Escape,
    /// Inside a CSI (`ESC [` or U+009B): parameters and intermediates until a final byte.
    Csi,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC) until BEL or ST (`ESC \` or U+009C).
    Str,
    /// ESC seen inside a string sequence: `\` ends it.
    StrEscape,
}

fn clean(s: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut st = State::Text;
    let mut chars = s.chars().peekable();
    let newline = |out: &mut String| {
        if keep_lines {
            out.push('\n');
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    };
    while let Some(c) = chars.next() {
        match st {
            State::Text => match c {
                '\u{1b}' => st = State::Escape,
                '\u{9b}' => st = State::Csi,
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => st = State::Str,
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    newline(&mut out);
                }
                '\n' | '\u{2028}' | '\u{2029}' | '\u{0b}' | '\u{0c}' | '\u{85}' => {
                    newline(&mut out)
                }
                '\t' => out.push(' '),
                c if c.is_control() || is_bidi_control(c) => {}
                c => out.push(c),
            },
            State::Escape => {
                st = match c {
                    '[' => State::Csi,
                    ']' | 'P' | 'X' | '^' | '_' => State::Str,
                    // `ESC (`, `ESC )`, `ESC #`, … take one more character.
                    '\u{20}'..='\u{2f}' => {
                        chars.next();
                        State::Text
                    }
                    _ => State::Text,
                }
            }
            State::Csi => {
                // Parameter bytes 0x30–0x3F and intermediates 0x20–0x2F continue; a final byte
                // 0x40–0x7E ends it; anything else (a control, non-ASCII) aborts it.
                match c {
                    '\u{20}'..='\u{3f}' => {}
                    '\u{40}'..='\u{7e}' => st = State::Text,
                    '\u{1b}' => st = State::Escape,
                    _ => st = State::Text,
                }
            }
            State::Str => match c {
                '\u{07}' | '\u{9c}' => st = State::Text,
                '\u{1b}' => st = State::StrEscape,
                _ => {}
            },
            State::StrEscape => st = if c == '\\' { State::Text } else { State::Str },
        }
    }
    if keep_lines {
        out
    } else {
        out.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csi_osc_and_c1_sequences_are_removed() {
        assert_eq!(inert_line("\u{1b}[2J\u{1b}[Hhello"), "hello");
        assert_eq!(inert_line("a\u{1b}]0;pwned\u{7}b"), "ab");
        assert_eq!(
            inert_line("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b"),
            "alinkb"
        );
        assert_eq!(inert_line("x\u{9b}31mred"), "xred");
        assert_eq!(inert_line("x\u{9d}0;t\u{9c}y"), "xy");
        assert_eq!(inert_line("\u{1b}(Bok"), "ok");
        assert_eq!(inert_line("\u{1b}Pq#0;2;0;0;0\u{1b}\\z"), "z");
    }

    #[test]
    fn a_fake_prompt_cannot_overwrite_or_start_a_line() {
        let attack = "关闭通知\r⏸ Approve tap → 「关闭通知」?\n\u{1b}[1A";
        let l = inert_line(attack);
        assert!(is_inert(&l));
        assert!(!l.contains('\n') && !l.contains('\r'));
        assert_eq!(l, "关闭通知 ⏸ Approve tap → 「关闭通知」?");
        let b = inert_block("one\r\ntwo\rthree");
        assert_eq!(b, "one\ntwo\nthree");
    }

    #[test]
    fn bidi_overrides_and_other_controls_go_text_stays() {
        assert_eq!(inert_line("pay\u{202e}lanigiro"), "paylanigiro");
        assert_eq!(inert_line("a\u{0}b\u{7f}c\u{8}d"), "abcd");
        assert_eq!(inert_line("确认支付 ✅ Pay now"), "确认支付 ✅ Pay now");
        assert_eq!(inert_line("tab\there"), "tab here");
    }

    #[test]
    fn unterminated_sequences_swallow_only_themselves() {
        // An OSC with no terminator removes the rest: nothing of it may reach the terminal.
        assert_eq!(inert_line("ok\u{1b}]0;never ends"), "ok");
        assert_eq!(inert_line("ok\u{1b}"), "ok");
        assert_eq!(inert_line("ok\u{1b}[12"), "ok");
    }

    proptest::proptest! {
        #[test]
        fn output_is_always_inert(s in ".*") {
            let l = inert_line(&s);
            proptest::prop_assert!(is_inert(&l) && !l.contains('\n'));
            proptest::prop_assert!(is_inert(&inert_block(&s)));
        }

        #[test]
        fn printable_text_is_unchanged(s in "[a-zA-Z0-9 .,!?确认支付送出订单]*") {
            proptest::prop_assert_eq!(inert_line(&s), s.trim_end().to_string());
        }
    }
}
