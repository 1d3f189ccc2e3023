//! Text input encodings (SPEC D4): the ADB Keyboard base64 broadcast and the ASCII-only
//! `input text` fallback with device-shell escaping.

use base64::Engine as _;

/// The ADB Keyboard IME id.
pub const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";

/// Largest UTF-8 chunk sent in one broadcast (keeps the request far below adb's 64 KiB limit).
pub const BROADCAST_CHUNK_BYTES: usize = 2048;

/// Quote one argument for the device's `/system/bin/sh`: every byte that is not plainly safe is
/// backslash-escaped (`a b&c` → `a\ b\&c`). Backslash-escaping works for every printable ASCII
/// byte in POSIX sh, so `'`, `"`, `&`, `|`, `;`, `<`, `>`, `(`, `)`, `$`, `` ` ``, `\`, `*`,
/// `~`, `#`, `?`, `[`, `]`, `{`, `}`, `!` and spaces all reach the command literally.
pub fn shell_escape(arg: &str) -> String {
    if arg.is_empty() {
        return "''".into();
    }
    let mut out = String::with_capacity(arg.len() * 2);
    for c in arg.chars() {
        if c.is_ascii_alphanumeric()
            || matches!(c, '%' | '.' | ',' | '-' | '_' | '/' | ':' | '@' | '=' | '+')
        {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

/// `am broadcast` commands that type `text` through ADB Keyboard, one per chunk of at most
/// [`BROADCAST_CHUNK_BYTES`] UTF-8 bytes (split on char boundaries). Base64 carries any Unicode
/// (CJK, emoji, newlines, quotes, `%`) through the shell untouched.
pub fn adb_keyboard_commands(text: &str) -> Vec<String> {
    let mut cmds = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + BROADCAST_CHUNK_BYTES).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(&text.as_bytes()[start..end]);
        cmds.push(format!("am broadcast -a ADB_INPUT_B64 --es msg {b64}"));
        start = end;
    }
    cmds
}

/// One step of the ASCII fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsciiStep {
    /// `input text ARG` (already escaped).
    Text(String),
    /// `input keyevent N` (ENTER for `\n`, TAB for `\t`).
    Key(u32),
}

impl AsciiStep {
    /// The shell command for this step.
    pub fn command(&self) -> String {
        match self {
            Self::Text(arg) => format!("input text {arg}"),
            Self::Key(k) => format!("input keyevent {k}"),
        }
    }
}

/// Plan `input text` commands for ASCII `text`. `None` when the text has characters `input
/// text` cannot type (non-ASCII, control characters other than `\n`/`\t`).
///
/// `input text` turns `%s` into a space, so spaces are sent as `%s`, and a literal `%` that is
/// followed by `s` ends its command so the two never meet in one argument.
pub fn ascii_input_steps(text: &str) -> Option<Vec<AsciiStep>> {
    if !text
        .chars()
        .all(|c| c == '\n' || c == '\t' || (c.is_ascii() && !c.is_ascii_control()))
    {
        return None;
    }
    let mut steps = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, steps: &mut Vec<AsciiStep>| {
        if !cur.is_empty() {
            steps.push(AsciiStep::Text(shell_escape(cur)));
            cur.clear();
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\n' => {
                flush(&mut cur, &mut steps);
                steps.push(AsciiStep::Key(66));
            }
            '\t' => {
                flush(&mut cur, &mut steps);
                steps.push(AsciiStep::Key(61));
            }
            ' ' => cur.push_str("%s"),
            '%' => {
                cur.push('%');
                if chars.get(i + 1) == Some(&'s') {
                    flush(&mut cur, &mut steps);
                }
            }
            c => cur.push(c),
        }
    }
    flush(&mut cur, &mut steps);
    Some(steps)
}

/// Undo [`shell_escape`] (test helper, mirrors what sh does with backslashes).
#[cfg(test)]
pub(crate) fn shell_unescape(s: &str) -> String {
    if s == "''" {
        return String::new();
    }
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            if let Some(n) = it.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_specials() {
        let nasty = "a b'c\"d&e|f;g<h>i(j)k$l`m\\n*o~p#q?r[s]t{u}v!w";
        let e = shell_escape(nasty);
        for c in [
            '\'', '"', '&', '|', ';', '<', '>', '(', ')', '$', '`', '*', '~', '#', ' ',
        ] {
            assert!(e.contains(&format!("\\{c}")), "{c} not escaped in {e}");
        }
        assert_eq!(shell_unescape(&e), nasty);
        assert_eq!(shell_escape("hello"), "hello");
        assert_eq!(shell_escape(""), "''");
    }

    #[test]
    fn ascii_steps_spaces_and_percent() {
        let s = ascii_input_steps("hi there").unwrap();
        assert_eq!(s, vec![AsciiStep::Text("hi%sthere".into())]);
        assert_eq!(s[0].command(), "input text hi%sthere");
        // A literal "%s" must not become a space: split after the '%'.
        let s = ascii_input_steps("100%sure").unwrap();
        assert_eq!(
            s,
            vec![
                AsciiStep::Text("100%".into()),
                AsciiStep::Text("sure".into())
            ]
        );
        let s = ascii_input_steps("50% off").unwrap();
        assert_eq!(s, vec![AsciiStep::Text("50%%soff".into())]);
    }

    #[test]
    fn ascii_steps_newline_and_quotes() {
        let s = ascii_input_steps("it's\n\"ok\"\tdone").unwrap();
        assert_eq!(
            s,
            vec![
                AsciiStep::Text("it\\'s".into()),
                AsciiStep::Key(66),
                AsciiStep::Text("\\\"ok\\\"".into()),
                AsciiStep::Key(61),
                AsciiStep::Text("done".into()),
            ]
        );
        assert_eq!(ascii_input_steps("").unwrap(), vec![]);
    }

    #[test]
    fn ascii_refuses_non_ascii() {
        assert_eq!(ascii_input_steps("你好"), None);
        assert_eq!(ascii_input_steps("caf\u{e9}"), None);
        assert_eq!(ascii_input_steps("bell\u{7}"), None);
        assert_eq!(ascii_input_steps("😀"), None);
    }

    #[test]
    fn broadcast_base64_roundtrip() {
        let text = "你好, world! 😀\n\"quoted\" 100% 'single' $HOME `x`";
        let cmds = adb_keyboard_commands(text);
        assert_eq!(cmds.len(), 1);
        let b64 = cmds[0]
            .strip_prefix("am broadcast -a ADB_INPUT_B64 --es msg ")
            .unwrap();
        assert!(
            b64.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c))
        );
        let back = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), text);
    }

    #[test]
    fn broadcast_chunks_on_char_boundaries() {
        let text = "汉".repeat(2000); // 6000 bytes
        let cmds = adb_keyboard_commands(&text);
        assert_eq!(cmds.len(), 3);
        let mut back = String::new();
        for c in &cmds {
            let b64 = c.rsplit(' ').next().unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            assert!(bytes.len() <= BROADCAST_CHUNK_BYTES);
            back.push_str(&String::from_utf8(bytes).unwrap());
        }
        assert_eq!(back, text);
        assert!(adb_keyboard_commands("").is_empty());
    }
}
