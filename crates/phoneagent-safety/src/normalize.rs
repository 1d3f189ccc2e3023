//! Text normalization before matching: full-width ASCII to half-width, ideographic space to
//! space, curly apostrophes to `'`, invisible characters removed, whitespace runs collapsed. Matching is done on the
//! normalized text so `ＰＡＹ　ＮＯＷ`, `确\u{200b}认支付` and `Pay  now` all look alike.

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
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
    )
}

/// Normalize text for matching (see the module docs). Pure; output has no leading/trailing space.
pub(crate) fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        if is_invisible(c) {
            continue;
        }
        let c = match c {
            '\u{3000}' => ' ',
            '\u{2018}' | '\u{2019}' | '\u{02BC}' | '\u{FF07}' => '\'',
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            c => c,
        };
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn full_width_invisible_and_spaces() {
        assert_eq!(normalize("ＰＡＹ　ＮＯＷ"), "PAY NOW");
        assert_eq!(normalize("确\u{200b}认支付"), "确认支付");
        assert_eq!(normalize("  Pay \n\t now  "), "Pay now");
        assert_eq!(normalize("１３８００１３８０００"), "13800138000");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize("don\u{2019}t send"), "don't send");
    }
}
