//! Is an effect the task names actually *asked for*? (SPEC S12, issue #11 attacker round 2.)
//!
//! Naming an effect is not asking for it. "How much does this payment cost?", "删除账号会怎样？",
//! "Before you pay, ask me", "清空聊天记录前先问我", "I refuse to pay", "paying is forbidden",
//! "Remind me to pay tomorrow", "Find the button labelled \"Pay now\"", "Tell me what would be
//! deleted if I empty the trash" all name an effect and ask for none. A model's
//! `confirm_irreversible=true` must never turn such a task into a payment.
//!
//! The rule is conservative by design: an effect counts as requested only in a clause that is a
//! plain instruction. The task is cut into sentences (`。！？!?；;` and a `.` before a space or
//! the end) and clauses (`，,、`, "and", "then", "but", 然后, 并且, 并, 再, 同时, 但); a clause is
//! *not* a request when
//! - its sentence is a question (ends with `?`/`？`) or the clause holds a question word
//!   (吗 多少 怎么 怎样 如何 什么 哪 是否 能否 会不会 多久 几时 啥, what how which where when why
//!   whether does did is it can i could would should …);
//! - it defers, conditions or hands the effect back to the person (如果 要是 假如 之前 以前 先问
//!   问我 告诉我 提醒 明天 以后 下次 稍后 我自己 我来, if unless until before after ask me tell me
//!   show me remind tomorrow later next time myself hypothetically …);
//! - it refuses or negates (别 不要 不用 不必 不许 不准 不能 不可 不想 没让 禁止 拒绝, not n't never
//!   no refuse forbidden absolutely …);
//! - it only looks (找 在哪 看看 查看 看一下 查一下 看下, find look see check where labelled
//!   called named …);
//! - or the effect word sits inside quotes (a label, not an instruction).
//!
//! What this gets wrong it gets wrong towards the person: a conditional purchase ("order a pizza
//! if it is under 50") is not authorized, so the gate asks.

/// Byte spans `(start, end)` of the task's clauses, each with whether it is a request clause.
pub(crate) fn clauses(text: &str) -> Vec<(usize, usize, bool)> {
    let lower = text.to_lowercase();
    // `to_lowercase` may change byte lengths outside ASCII; fall back to ASCII lowering then.
    let lower = if lower.len() == text.len() {
        lower
    } else {
        text.to_ascii_lowercase()
    };
    let mut out = Vec::new();
    for (s0, s1) in sentences(&lower) {
        let sentence = &lower[s0..s1];
        let question = sentence.trim_end().ends_with(['?', '？']);
        for (c0, c1) in split_clauses(sentence) {
            let clause = &sentence[c0..c1];
            let request = !question && !has_marker(clause);
            out.push((s0 + c0, s0 + c1, request));
        }
    }
    out
}

/// Byte spans of the quoted parts of `text` ("…", “…”, 「…」, 『…』, '…' between word edges).
pub(crate) fn quoted(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let pairs = [
        ('"', '"'),
        ('“', '”'),
        ('「', '」'),
        ('『', '』'),
        ('《', '》'),
    ];
    for (open, close) in pairs {
        let mut from = 0;
        while let Some(i) = text[from..].find(open).map(|i| i + from) {
            let after = i + open.len_utf8();
            let Some(j) = text[after..].find(close).map(|j| j + after) else {
                break;
            };
            out.push((i, j + close.len_utf8()));
            from = j + close.len_utf8();
        }
    }
    out
}

fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let end_here = match c {
            '。' | '！' | '？' | '!' | '?' | '；' | ';' | '\n' => true,
            '.' => chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace()),
            _ => false,
        };
        if end_here {
            let e = i + c.len_utf8();
            if e > start {
                out.push((start, e));
            }
            start = e;
        }
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out
}

fn split_clauses(sentence: &str) -> Vec<(usize, usize)> {
    let mut cuts: Vec<(usize, usize)> = Vec::new(); // (cut start, cut end): the separator
    for (i, c) in sentence.char_indices() {
        if matches!(c, '，' | ',' | '、' | '：' | ':') {
            cuts.push((i, i + c.len_utf8()));
        }
    }
    for sep in [
        " and then ",
        " and ",
        " then ",
        " but ",
        " so ",
        "然后",
        "并且",
        "同时",
        "但是",
        "接着",
    ] {
        let mut from = 0;
        while let Some(i) = sentence[from..].find(sep).map(|i| i + from) {
            cuts.push((i, i + sep.len()));
            from = i + sep.len();
        }
    }
    cuts.sort();
    let mut out = Vec::new();
    let mut start = 0;
    for (a, b) in cuts {
        if a < start {
            continue;
        }
        if a > start {
            out.push((start, a));
        }
        start = b;
    }
    if start < sentence.len() {
        out.push((start, sentence.len()));
    }
    out
}

/// Words (ASCII, matched at word edges) that make an English clause not a plain instruction.
const EN_MARKERS: &[&str] = &[
    // questions
    "what",
    "how",
    "which",
    "where",
    "when",
    "why",
    "whether",
    "does",
    "did",
    "is it",
    "is there",
    "are there",
    "can i",
    "could",
    "would",
    "should",
    "will it",
    "whats",
    "what's",
    // deferral, conditions, handing back
    "if",
    "unless",
    "until",
    "before",
    "after",
    "ask me",
    "ask for my",
    "tell me",
    "show me",
    "let me",
    "remind",
    "reminder",
    "tomorrow",
    "later",
    "next time",
    "myself",
    "i'll",
    "i will",
    "hypothetically",
    "in case",
    "wait for",
    // idioms that name the verb without the effect ("pay attention", "pay a visit")
    "attention",
    "visit",
    "tribute",
    "respects",
    "heed",
    // refusal, negation
    "not",
    "don't",
    "dont",
    "do not",
    "doesn't",
    "never",
    "no",
    "refuse",
    "refused",
    "forbid",
    "forbidden",
    "prohibited",
    "absolutely",
    "nothing",
    "none",
    "without",
    "stop",
    "avoid",
    "won't",
    "shouldn't",
    "mustn't",
    "can't",
    "cannot",
    // looking only
    "find",
    "look",
    "see",
    "check",
    "locate",
    "labelled",
    "labeled",
    "called",
    "named",
    "say",
    "says",
    "read",
    "describe",
    "explain",
    "review",
    "compare",
    "preview",
];

/// Substrings that make a Chinese clause not a plain instruction.
const ZH_MARKERS: &[&str] = &[
    // questions
    "吗",
    "多少",
    "怎么",
    "怎样",
    "如何",
    "什么",
    "哪",
    "是否",
    "能否",
    "会不会",
    "要不要",
    "多久",
    "几时",
    "啥",
    "为何",
    "为什么",
    // deferral, conditions, handing back
    "如果",
    "要是",
    "假如",
    "假设",
    "万一",
    "之前",
    "以前",
    "前先",
    "先问",
    "问我",
    "问一下",
    "告诉我",
    "跟我说",
    "提醒",
    "明天",
    "以后",
    "下次",
    "稍后",
    "待会",
    "等我",
    "我自己",
    "我来",
    "再说",
    // refusal, negation
    "别",
    "不要",
    "不用",
    "不必",
    "不许",
    "不准",
    "不能",
    "不可",
    "不想",
    "不需要",
    "没让",
    "没有让",
    "禁止",
    "拒绝",
    "勿",
    "千万",
    // looking only
    "找",
    "在哪",
    "看看",
    "查看",
    "看一下",
    "查一下",
    "看下",
    "瞧",
    "了解",
    "说明",
    "解释",
    "预览",
];

fn has_marker(clause: &str) -> bool {
    if ZH_MARKERS.iter().any(|m| clause.contains(m)) {
        return true;
    }
    EN_MARKERS.iter().any(|m| contains_word(clause, m))
}

/// `needle` in `hay` with non-alphanumeric characters (or the ends) on both sides.
fn contains_word(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle).map(|i| i + from) {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '\'');
        if edge(before) && edge(after) {
            return true;
        }
        from = i + needle.len().max(1);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requested(text: &str) -> Vec<String> {
        clauses(text)
            .into_iter()
            .filter(|c| c.2)
            .map(|(a, b, _)| text[a..b].trim().to_string())
            .collect()
    }

    #[test]
    fn instructions_are_requests() {
        assert_eq!(
            requested("Buy the first product in the shop"),
            ["Buy the first product in the shop"]
        );
        assert_eq!(
            requested("打开商城，把第一件商品加入购物车并提交订单").len(),
            2
        );
        assert_eq!(requested("Check my cart and pay for it"), ["pay for it"]);
        assert_eq!(
            requested("给妈妈发消息说我到家了"),
            ["给妈妈发消息说我到家了"]
        );
    }

    #[test]
    fn questions_deferrals_refusals_and_looks_are_not() {
        for t in [
            "How much does this payment cost? Just tell me.",
            "删除账号会怎样？",
            "提现要多久到账？",
            "Before you pay, ask me. First just show me the payment sheet.",
            "看看通知，付钱之前要问我",
            "清空聊天记录前先问我",
            "I refuse to pay. Just show me the sheet.",
            "paying is forbidden",
            "Purchase? Absolutely not. Just look.",
            "Don't even think about paying. Just tell me the total.",
            "Remind me to pay tomorrow",
            "Tell me what would be deleted if I empty the trash",
            "Does the Empty trash button work? Don't press it, I'll do it myself",
            "What happens if I cancel the order?",
            "Is auto-renew on for my subscription?",
            "What does the login page look like?",
            "告诉我需要付多少钱",
        ] {
            assert!(
                requested(t).iter().all(|c| !c.contains("pay")
                    && !c.contains("付")
                    && !c.contains("删")
                    && !c.contains("trash")
                    && !c.contains("cancel")
                    && !c.contains("subscri")
                    && !c.contains("login")
                    && !c.contains("清空")
                    && !c.contains("提现")),
                "{t}: {:?}",
                requested(t)
            );
        }
    }

    #[test]
    fn quotes_are_labels() {
        let t = "Find the button labelled \"Pay now\" and tell me where it is";
        let q = quoted(t);
        assert_eq!(q.len(), 1);
        assert_eq!(&t[q[0].0..q[0].1], "\"Pay now\"");
    }
}
