//! Negated task boundaries (SPEC S4): "draft but don't send", "不要支付", "只加购物车，不要下单".
//!
//! A negation cue (lexicon category `negation`: 不要, 别, don't, without, …) followed within
//! [`BOUNDARY_WINDOW_CHARS`] characters, with no clause punctuation between, by an irreversible
//! object or commit phrase forbids that effect kind for the whole task. A tap, double tap or long
//! press whose target (or OCR text) names a forbidden effect, or whose reason commits to one, is
//! classified with reason `negated_task_boundary` and [`crate::decide`] blocks it with zero
//! touches, in every access mode.

use serde::{Deserialize, Serialize};

use crate::classify::{EffectKind, mask, near};
use crate::lexicon::{Category, Hit, Lexicon};
use crate::normalize::normalize;

/// Maximum distance, in characters, from the end of a negation cue to the forbidden object
/// ("do not place the order": 10 characters between "not" and "order").
pub const BOUNDARY_WINDOW_CHARS: usize = 16;

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

/// (cue, object, kind) triples of negated objects in `text` (already normalized and masked).
fn negated(lexicon: &Lexicon, text: &str) -> Vec<(Hit, Hit, EffectKind)> {
    let cues = lexicon.hits(Category::Negation, text);
    if cues.is_empty() {
        return Vec::new();
    }
    let mut objects = lexicon.hits(Category::IrreversibleObject, text);
    objects.extend(lexicon.hits(Category::CommitPhrase, text));
    objects.sort_by_key(|h| (h.start, h.end));
    let mut out = Vec::new();
    for n in &cues {
        for o in &objects {
            if o.start < n.end {
                continue;
            }
            if !near(
                text,
                (n.start, n.end),
                (o.start, o.end),
                BOUNDARY_WINDOW_CHARS,
            ) {
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
    /// Parse the negated boundaries of `task` with `lexicon`'s negation cues and objects.
    pub fn parse(lexicon: &Lexicon, task: &str) -> Self {
        let text = mask(lexicon, &normalize(task));
        let mut set = Self::default();
        for (n, o, kind) in negated(lexicon, &text) {
            if set.forbids(kind).is_some() {
                continue;
            }
            set.boundaries.push(Boundary {
                kind,
                phrase: text.get(n.start..o.end).unwrap_or_default().to_string(),
                entry: lexicon.entry(n.entry).spec.id.clone(),
            });
        }
        set
    }

    /// True when the task forbids nothing.
    pub fn is_empty(&self) -> bool {
        self.boundaries.is_empty()
    }

    /// The boundary forbidding `kind`, if any.
    pub fn forbids(&self, kind: EffectKind) -> Option<&Boundary> {
        self.boundaries.iter().find(|b| b.kind == kind)
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
    if spans.is_empty() {
        return text;
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
