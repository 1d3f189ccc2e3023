//! Negated task boundaries (SPEC S4): "draft but don't send", "不要支付", "只看不买", "no payments
//! please".
//!
//! A boundary is read as a small grammar, not a list of sentences:
//!
//! ```text
//! boundary := NEGATOR  GAP  EFFECT
//!           | EFFECT  AFTER_GAP  NEGATOR_AFTER
//! NEGATOR  := lexicon category `negation`  (不要 别 不许 没让你 不(买|付|发…) / don't never no without …)
//! GAP      := at most GAP_CJK_CHARS Chinese characters and at most one English word that is not
//!             glue (modal, quantifier, pronoun, article, auxiliary: "any", "actually", "go
//!             ahead and", "the", "to", "a"…), no clause punctuation, no scope break (category
//!             `scope_break`: but, then, 然后, 而是)
//! EFFECT   := an irreversible object, a commit phrase or a task effect verb, with its kind
//! NEGATOR_AFTER := lexicon category `negation_after` ("is forbidden", "off-limits", "not
//!             allowed", "leave … to me", 不要(做|点)?, 先不做, 严禁 at a clause's end…)
//! AFTER_GAP := as GAP, but at most AFTER_GAP_CJK_CHARS Chinese characters ("付款这一步不要做")
//! ```
//!
//! Benign look-alikes are masked first, so "别忘了发送" and "don't forget to send it" are not
//! boundaries (they ask for the send). A tap, double tap or long press whose target (or screen
//! reading) names a forbidden effect, or whose reason commits to one, is classified with reason
//! `negated_task_boundary` and [`crate::decide`] blocks it with zero touches, in every access
//! mode.

use serde::{Deserialize, Serialize};

use crate::classify::{EffectKind, is_clause_break, mask};
use crate::lexicon::{Category, Hit, Lexicon};
use crate::normalize::normalize;

/// Maximum distance, in characters, from the end of a negation cue to the forbidden effect
/// ("do not actually go ahead and place the order").
pub const BOUNDARY_WINDOW_CHARS: usize = 28;

/// Most Chinese characters between a negation cue and its effect ("不要在任何情况下付款": 6).
pub const GAP_CJK_CHARS: usize = 8;

/// Most Chinese characters between an effect and a negation cue after it ("付款这一步不要做": 3).
pub const AFTER_GAP_CJK_CHARS: usize = 4;

/// English glue words allowed between a negation cue and its effect (modals, quantifiers,
/// pronouns, articles, auxiliaries and the commit verbs "make"/"place"/"go ahead").
pub const GAP_GLUE_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "any",
    "anything",
    "something",
    "to",
    "it",
    "this",
    "that",
    "these",
    "those",
    "them",
    "him",
    "her",
    "my",
    "your",
    "our",
    "their",
    "me",
    "us",
    "you",
    "i",
    "we",
    "actually",
    "really",
    "ever",
    "even",
    "just",
    "yet",
    "again",
    "also",
    "please",
    "need",
    "needs",
    "want",
    "wants",
    "try",
    "trying",
    "be",
    "been",
    "able",
    "allowed",
    "permitted",
    "have",
    "has",
    "going",
    "gonna",
    "more",
    "single",
    "real",
    "one",
    "of",
    "for",
    "with",
    "from",
    "on",
    "in",
    "at",
    "do",
    "does",
    "make",
    "made",
    "making",
    "place",
    "go",
    "ahead",
    "and",
    "accidentally",
    "automatically",
    "yourself",
    "behalf",
    "new",
    "extra",
    "further",
    "other",
    "anymore",
    "all",
    "let",
    "lets",
    "get",
];

/// One forbidden effect of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// The forbidden effect.
    pub kind: EffectKind,
    /// The task phrase that forbids it (normalized), e.g. `不要发送`, `don't send`.
    pub phrase: String,
    /// The negation lexicon entry that matched.
    pub entry: String,
}

/// The forbidden effects of one task; empty when the task forbids nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BoundarySet {
    /// One boundary per kind, in task order.
    pub boundaries: Vec<Boundary>,
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}

/// True when the gap text between a negation cue and an effect keeps the effect in the cue's
/// scope (see the module docs).
fn gap_in_scope(gap: &str, breaks: &[(usize, usize)], lo: usize) -> bool {
    if gap.chars().count() > BOUNDARY_WINDOW_CHARS + 8 {
        return false;
    }
    // An intensifier set off by commas keeps the effect in scope: "do NOT, under any
    // circumstances, pay", "不要，无论如何，付款".
    let original_len = gap.len();
    let (gap, parenthetical) = without_intensifiers(gap);
    if gap.chars().count() > BOUNDARY_WINDOW_CHARS {
        return false;
    }
    if gap
        .chars()
        .any(|c| is_clause_break(c) && !(parenthetical && matches!(c, ',' | '，' | '、')))
    {
        return false;
    }
    let hi = lo + original_len;
    let gap = gap.as_str();
    if breaks.iter().any(|&(s, e)| s >= lo && e <= hi) {
        return false;
    }
    if gap.chars().filter(|c| is_cjk(*c)).count() > GAP_CJK_CHARS {
        return false;
    }
    let unknown = gap
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .filter(|w| !GAP_GLUE_WORDS.contains(&w.to_ascii_lowercase().as_str()))
        .count();
    // Across a parenthetical nothing but glue may stand ("don't pay, at all, send it" does
    // not forbid sending).
    unknown <= usize::from(!parenthetical)
}

/// Intensifiers a negation can carry between its cue and its effect, set off by commas
/// ("do not, under any circumstances, pay"): lower case, matched case-insensitively.
pub const GAP_INTENSIFIERS: &[&str] = &[
    "under any circumstances",
    "under no circumstances",
    "in any case",
    "in any way",
    "no matter what",
    "whatever happens",
    "whatever you do",
    "at any point",
    "at all",
    "i repeat",
    "repeat",
    "ever",
    "无论如何",
    "不管怎样",
    "任何情况下",
    "在任何情况下",
    "千万",
];

/// `gap` with the intensifiers of [`GAP_INTENSIFIERS`] taken out, and whether any was.
fn without_intensifiers(gap: &str) -> (String, bool) {
    let mut g = gap.to_lowercase();
    let mut found = false;
    for w in GAP_INTENSIFIERS {
        while let Some(i) = g.find(w) {
            let ascii = w.is_ascii();
            let before_ok = !ascii || g[..i].chars().last().is_none_or(|c| !c.is_alphanumeric());
            let after_ok = !ascii
                || g[i + w.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric());
            if !(before_ok && after_ok) {
                break;
            }
            g.replace_range(i..i + w.len(), " ");
            found = true;
        }
    }
    (g, found)
}

/// (cue, effect, kind) triples of negated effects in `text` (already normalized and masked).
pub(crate) fn negated(lexicon: &Lexicon, text: &str) -> Vec<(Hit, Hit, EffectKind)> {
    let cues = lexicon.hits(Category::Negation, text);
    let after = lexicon.hits(Category::NegationAfter, text);
    if cues.is_empty() && after.is_empty() {
        return Vec::new();
    }
    let mut effects = lexicon.hits(Category::IrreversibleObject, text);
    effects.extend(lexicon.hits(Category::CommitPhrase, text));
    effects.extend(lexicon.hits(Category::TaskEffect, text));
    effects.sort_by_key(|h| (h.start, h.end));
    let breaks: Vec<(usize, usize)> = lexicon
        .hits(Category::ScopeBreak, text)
        .into_iter()
        .map(|h| (h.start, h.end))
        .collect();
    let mut out = Vec::new();
    // EFFECT AFTER_GAP NEGATOR_AFTER: "sending is forbidden", "付款这一步不要做".
    for n in &after {
        for o in &effects {
            if o.end > n.start {
                continue;
            }
            let Some(gap) = text.get(o.end..n.start) else {
                continue;
            };
            if gap.chars().filter(|c| is_cjk(*c)).count() > AFTER_GAP_CJK_CHARS
                || !gap_in_scope(gap, &breaks, o.end)
            {
                continue;
            }
            if let Some(kind) = lexicon.entry(o.entry).spec.kind {
                out.push((*n, *o, kind));
            }
        }
    }
    for n in &cues {
        for o in &effects {
            if o.start < n.end {
                continue;
            }
            let Some(gap) = text.get(n.end..o.start) else {
                continue;
            };
            if !gap_in_scope(gap, &breaks, n.end) {
                continue;
            }
            if let Some(kind) = lexicon.entry(o.entry).spec.kind {
                out.push((*n, *o, kind));
            }
        }
    }
    out
}

impl BoundarySet {
    /// Parse the negated boundaries of `task` with `lexicon`'s negation cues and effects.
    pub fn parse(lexicon: &Lexicon, task: &str) -> Self {
        let text = mask(lexicon, &normalize(task));
        Self::parse_normalized(lexicon, &text)
    }

    pub(crate) fn parse_normalized(lexicon: &Lexicon, text: &str) -> Self {
        let mut set = Self::default();
        for (n, o, kind) in negated(lexicon, text) {
            if set.boundaries.iter().any(|b| b.kind == kind) {
                continue;
            }
            set.boundaries.push(Boundary {
                kind,
                phrase: text
                    .get(n.start.min(o.start)..n.end.max(o.end))
                    .unwrap_or_default()
                    .to_string(),
                entry: lexicon.entry(n.entry).spec.id.clone(),
            });
        }
        set
    }

    /// True when the task forbids nothing.
    pub fn is_empty(&self) -> bool {
        self.boundaries.is_empty()
    }

    /// The boundary forbidding `kind`, if any: one naming `kind` itself, else one whose kind
    /// implies it ([`EffectKind::implies`]: "don't buy anything" forbids placing an order and
    /// paying too).
    pub fn forbids(&self, kind: EffectKind) -> Option<&Boundary> {
        self.boundaries.iter().find(|b| b.kind == kind).or_else(|| {
            self.boundaries
                .iter()
                .find(|b| b.kind.implies().contains(&kind))
        })
    }

    /// The forbidden kinds.
    pub fn kinds(&self) -> impl Iterator<Item = EffectKind> + '_ {
        self.boundaries.iter().map(|b| b.kind)
    }
}

/// `text` normalized with every negated phrase ("don't send", "不要付款") blanked, so a reason
/// that says what the model will *not* do does not count as pointing at that effect.
pub(crate) fn strip_negated(lexicon: &Lexicon, text: &str) -> String {
    let text = mask(lexicon, &normalize(text));
    let spans: Vec<(usize, usize)> = negated(lexicon, &text)
        .into_iter()
        .map(|(n, o, _)| (n.start, o.end))
        .collect();
    blank(&text, &spans)
}

/// `text` with every byte span in `spans` replaced by one space per character.
pub(crate) fn blank(text: &str, spans: &[(usize, usize)]) -> String {
    if spans.is_empty() {
        return text.to_string();
    }
    text.char_indices()
        .map(|(i, ch)| {
            if spans.iter().any(|&(s, e)| i >= s && i < e) {
                ' '
            } else {
                ch
            }
        })
        .collect()
}
