//! Text normalization before matching (SPEC S13). Every text the gate reads — the model's target
//! description and reason, OCR and screen-reading text, typed text, the task — goes through
//! [`normalize`] before a lexicon pattern sees it, in this order:
//!
//! 1. Unicode NFKC (`unicode-normalization`): full-width `ＰＡＹ` → `PAY`, ligatures, circled and
//!    compatibility forms folded; the ideographic space becomes a space.
//! 2. Invisible characters removed: zero-width spaces and joiners, soft hyphens, bidi controls,
//!    variation selectors, fillers; stray combining marks (`P̸ay`) dropped.
//! 3. Confusable letters folded to ASCII (`unicode-security`, UTS #39 skeleton, one character at
//!    a time): Cyrillic and Greek look-alikes such as `Раy now` (Cyrillic Р, а) or `Dеlete`
//!    become `Pay now`, `Delete`. Only letters whose skeleton is ASCII are folded; Chinese, digits
//!    and punctuation are left alone.
//! 4. Traditional → Simplified Chinese (`fast2s`, a character table of 2,700+ pairs):
//!    `確認支付` → `确认支付`, `刪除帳號` → `删除帐号`.
//! 5. Whitespace inside words removed: between two CJK characters (`确 认 支 付` → `确认支付`), and
//!    inside letter-spaced words (`P a y  n o w` → `Pay now`: single letters separated by one
//!    space are joined, a longer gap stays a word break); remaining runs collapse to one space.
//! 6. Curly apostrophes to `'`.
//!
//! The output has no leading or trailing whitespace. Matching is case-insensitive in the
//! lexicons, so case is kept (evidence shows it as written).

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Characters that render as nothing and could split a word to dodge the lexicon.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// CJK ideographs, kana and hangul: scripts written without spaces between words.
fn is_cjk(c: char) -> bool {
    matches!(
        c,
        '\u{3040}'..='\u{30FF}'
            | '\u{3400}'..='\u{4DBF}'
            | '\u{4E00}'..='\u{9FFF}'
            | '\u{AC00}'..='\u{D7AF}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{20000}'..='\u{2FA1F}'
    )
}

/// Fold one non-ASCII letter to its ASCII look-alike (UTS #39 skeleton), when it has one.
fn fold_confusable(c: char, out: &mut String) {
    if c.is_ascii() || is_cjk(c) || !c.is_alphabetic() {
        out.push(c);
        return;
    }
    let mut buf = [0u8; 4];
    let skel: String = unicode_security::skeleton(c.encode_utf8(&mut buf))
        .filter(|ch| !is_combining_mark(*ch))
        .collect();
    if !skel.is_empty() && skel.chars().all(|ch| ch.is_ascii_alphabetic()) {
        out.push_str(&skel);
    } else {
        out.push(c);
    }
}

/// The Latin capital an enclosed-letter symbol shows, for the blocks NFKC leaves alone:
/// squared (🄰), negative circled (🅐), negative squared (🅿) letters and regional
/// indicators (🇵).
fn enclosed_letter(c: char) -> Option<char> {
    let base = match c {
        '\u{1F130}'..='\u{1F149}' => 0x1F130,
        '\u{1F150}'..='\u{1F169}' => 0x1F150,
        '\u{1F170}'..='\u{1F189}' => 0x1F170,
        '\u{1F1E6}'..='\u{1F1FF}' => 0x1F1E6,
        _ => return None,
    };
    char::from_u32(u32::from('A') + (u32::from(c) - base))
}

/// True for the punctuation that can join the letters of a label without changing how it
/// reads: hyphens and dashes, underscores, dots and middle dots, slashes, bars, tildes,
/// asterisks, plus signs.
fn is_joiner(c: char) -> bool {
    matches!(
        c,
        '-' | '_'
            | '.'
            | '·'
            | '•'
            | '・'
            | '‧'
            | '∙'
            | '/'
            | '\\'
            | '|'
            | '~'
            | '*'
            | '+'
            | '='
            | '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{2043}'
    )
}

/// A label's second reading with the punctuation between its letters taken out (SPEC S13):
/// `Pay-now`, `Pay_now`, `Pay·now` → `Pay now`; `确-认-支-付` → `确认支付`; `P.a.y` → `Pay`.
/// Input is [`normalize`]d text; `None` when there is no such punctuation. Only the gate's
/// reading of what a touch hits uses it (a key or code typed as text keeps its dashes).
pub(crate) fn unjoined(norm: &str) -> Option<String> {
    let chars: Vec<char> = norm.chars().collect();
    let mut out = String::with_capacity(norm.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_joiner(c) && i > 0 && chars[i - 1].is_alphabetic() {
            let mut j = i;
            while j < chars.len() && is_joiner(chars[j]) {
                j += 1;
            }
            if let Some(&next) = chars.get(j)
                && next.is_alphabetic()
            {
                if !(is_cjk(chars[i - 1]) && is_cjk(next)) {
                    out.push(' ');
                }
                changed = true;
                i = j;
                continue;
            }
        }
        if c.is_whitespace() {
            // A real word gap stays one after letter-spacing is joined: `P.a.y n.o.w`.
            out.push_str("  ");
        } else {
            out.push(c);
        }
        i += 1;
    }
    changed.then(|| join_spaces(&out))
}

/// Steps 1–4: NFKC, invisible characters and stray combining marks removed, confusables folded,
/// Traditional → Simplified.
fn fold(s: &str) -> String {
    let mut folded = String::with_capacity(s.len());
    for c in s.nfkc() {
        if is_invisible(c) || is_combining_mark(c) {
            continue;
        }
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' | '\u{FF07}' | '\u{2032}' => '\'',
            c => enclosed_letter(c).unwrap_or(c),
        };
        fold_confusable(c, &mut folded);
    }
    if folded.chars().any(is_cjk) {
        fast2s::convert(&folded)
    } else {
        folded
    }
}

/// Step 5: whitespace inside words removed, runs collapsed, ends trimmed.
fn join_spaces(s: &str) -> String {
    // Tokens: (word, whitespace run length before it).
    let mut tokens: Vec<(String, usize)> = Vec::new();
    let mut gap = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_whitespace() {
            if !cur.is_empty() {
                tokens.push((std::mem::take(&mut cur), gap));
                gap = 0;
            }
            gap += 1;
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        tokens.push((cur, gap));
    }
    let single = |w: &str| {
        let mut it = w.chars();
        matches!((it.next(), it.next()), (Some(c), None) if c.is_alphanumeric() && !is_cjk(c))
    };
    let mut out = String::with_capacity(s.len());
    for (i, (word, gap)) in tokens.iter().enumerate() {
        if i > 0 {
            let prev = &tokens[i - 1].0;
            let cjk_join =
                prev.chars().last().is_some_and(is_cjk) && word.chars().next().is_some_and(is_cjk);
            // A letter-spaced run: this and the previous token are single letters one space
            // apart, and the run has at least two letters.
            let spaced_join = *gap == 1 && single(prev) && single(word);
            if !(cjk_join || spaced_join) {
                out.push(' ');
            }
        }
        out.push_str(word);
    }
    out
}

/// Normalize text for matching (see the module docs). Pure; the output has no leading or
/// trailing whitespace.
pub fn normalize(s: &str) -> String {
    join_spaces(&fold(s))
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn full_width_invisible_and_spaces() {
        assert_eq!(normalize("ＰＡＹ　ＮＯＷ"), "PAY NOW");
        assert_eq!(normalize("确\u{200b}认支付"), "确认支付");
        assert_eq!(normalize("确\u{00ad}认支付"), "确认支付");
        assert_eq!(normalize("Pay\u{200b}now"), "Paynow");
        assert_eq!(normalize("  Pay \n\t now  "), "Pay now");
        assert_eq!(normalize("１３８００１３８０００"), "13800138000");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize("don\u{2019}t send"), "don't send");
    }

    #[test]
    fn spaced_words_are_joined() {
        assert_eq!(normalize("确 认 支 付"), "确认支付");
        assert_eq!(normalize("确  认支 付"), "确认支付");
        assert_eq!(normalize("P a y  n o w"), "Pay now");
        assert_eq!(normalize("I am a cat"), "I am a cat");
        assert_eq!(normalize("支付 ¥ 25"), "支付 ¥ 25");
    }

    #[test]
    fn confusables_are_folded() {
        // Cyrillic Р and а, Cyrillic е, Greek Ο.
        assert_eq!(normalize("\u{0420}\u{0430}y now"), "Pay now");
        assert_eq!(normalize("D\u{0435}lete"), "Delete");
        assert_eq!(normalize("\u{039F}K"), "OK");
        // Accents and Chinese stay.
        assert_eq!(normalize("确认支付"), "确认支付");
    }

    #[test]
    fn joined_labels_have_a_second_reading_and_enclosed_letters_fold() {
        use super::unjoined;
        assert_eq!(unjoined("Pay-now").as_deref(), Some("Pay now"));
        assert_eq!(unjoined("Pay_now").as_deref(), Some("Pay now"));
        assert_eq!(unjoined("Pay·now").as_deref(), Some("Pay now"));
        assert_eq!(unjoined("确-认-支-付").as_deref(), Some("确认支付"));
        assert_eq!(unjoined("P.a.y n.o.w").as_deref(), Some("Pay now"));
        assert_eq!(unjoined("Pay now"), None);
        assert_eq!(unjoined("¥12.50 - 3"), None);
        assert_eq!(normalize("\u{1F17F}ay now"), "Pay now");
        assert_eq!(normalize("\u{1F1F5}\u{1F1E6}\u{1F1FE}"), "PAY");
    }

    #[test]
    fn traditional_becomes_simplified() {
        assert_eq!(normalize("確認支付"), "确认支付");
        assert_eq!(normalize("刪除帳號"), "删除帐号");
        assert_eq!(normalize("訂閱"), "订阅");
        assert_eq!(normalize("儲值"), "储值");
        assert_eq!(normalize("送出"), "送出");
    }
}
