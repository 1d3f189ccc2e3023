//! Task authorization (SPEC S12): which irreversible effect kinds the user's task asks for, and
//! which it forbids (SPEC S4).
//!
//! The task is normalized and its benign look-alikes masked like every other text; then every
//! effect it names — a task effect verb ("买", "reply to", "top up") or a commit phrase — is
//! either *forbidden* (a negation cue governs it, see [`crate::boundary`])
//! or *requested*. A bare irreversible object ("订单", "order") names an effect without
//! asking for it and authorizes nothing. The authorized kinds are the requested kinds and what they imply
//! ([`EffectKind::implies`]: buying implies ordering and paying), minus the forbidden ones.
//!
//! Only the task — the user's own words — authorizes. A model's `confirm_irreversible=true`
//! executes a hard effect only when its kind is authorized here; any other irreversible effect
//! goes to the person (SPEC S12, [`crate::decide`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::boundary::{BoundarySet, negated};
use crate::classify::{Gate, mask};
use crate::effect::EffectKind;
use crate::lexicon::{Category, Lexicon};
use crate::normalize::normalize;

/// Most characters of a task the analysis reads; the rest is ignored (the runtime refuses
/// longer tasks anyway). Counted after normalization.
pub const TASK_MAX_CHARS: usize = 8_000;

/// One effect the task asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRequest {
    /// The kind named.
    pub kind: EffectKind,
    /// The task phrase (normalized), e.g. `买`, `reply`.
    pub phrase: String,
    /// The lexicon entry that matched.
    pub entry: String,
}

/// What a task asks for and forbids (SPEC S4, S12).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskAnalysis {
    /// The effect kinds the task authorizes: requested kinds and what they imply, minus the
    /// forbidden ones.
    pub authorized: BTreeSet<EffectKind>,
    /// The effects the task names outside any negation, in task order (one per kind).
    pub requested: Vec<TaskRequest>,
    /// The negated boundaries (SPEC S4).
    pub forbidden: BoundarySet,
}

impl TaskAnalysis {
    /// Analyze `task` with the built-in lexicons. Should they fail to load, nothing is
    /// authorized (fail closed: every irreversible effect goes to the person).
    pub fn of(task: &str) -> Self {
        match crate::classify::builtin() {
            Some(g) => g.analyze_task(task),
            None => Self::default(),
        }
    }

    /// Analyze `task` with `lexicon`.
    pub fn parse(lexicon: &Lexicon, task: &str) -> Self {
        let norm: String = normalize(task).chars().take(TASK_MAX_CHARS).collect();
        let text = mask(lexicon, &norm);
        let forbidden = BoundarySet::parse_normalized(lexicon, &text);
        let negated_spans: Vec<(usize, usize)> = negated(lexicon, &text)
            .into_iter()
            .map(|(n, o, _)| (n.start, o.end))
            .collect();
        let mut hits = lexicon.hits(Category::TaskEffect, &text);
        // A commit phrase ("确认支付", "place the order") asks for its effect; a bare object
        // does not: "看看这个订单" / "check how much this order costs" names an order without
        // asking for one.
        hits.extend(lexicon.hits(Category::CommitPhrase, &text));
        hits.sort_by_key(|h| (h.start, h.end));
        // Naming an effect is not asking for it (issue #11): only a plain instruction clause
        // requests, never a question, a deferral, a refusal, a look or a quoted label.
        let clauses = crate::request::clauses(&text);
        let quotes = crate::request::quoted(&text);
        let in_request = |start: usize, end: usize| {
            !quotes.iter().any(|&(s, e)| start < e && s < end)
                && clauses
                    .iter()
                    .find(|&&(s, e, _)| start >= s && start < e)
                    .is_some_and(|&(_, _, request)| request)
        };
        let mut requested: Vec<TaskRequest> = Vec::new();
        for h in hits {
            if negated_spans.iter().any(|&(s, e)| h.start < e && s < h.end) {
                continue;
            }
            if !in_request(h.start, h.end) {
                continue;
            }
            let spec = &lexicon.entry(h.entry).spec;
            let Some(kind) = spec.kind else { continue };
            if requested.iter().any(|r| r.kind == kind) {
                continue;
            }
            requested.push(TaskRequest {
                kind,
                phrase: text.get(h.start..h.end).unwrap_or_default().to_string(),
                entry: spec.id.clone(),
            });
        }
        let mut authorized: BTreeSet<EffectKind> = requested
            .iter()
            .flat_map(|r| r.kind.implies().iter().copied())
            .collect();
        for k in forbidden.kinds() {
            authorized.remove(&k);
        }
        Self {
            authorized,
            requested,
            forbidden,
        }
    }

    /// True when the task authorizes `kind`.
    pub fn authorizes(&self, kind: EffectKind) -> bool {
        self.authorized.contains(&kind)
    }
}

impl Gate {
    /// What `task` asks for and forbids (SPEC S4, S12), with this gate's lexicons.
    pub fn analyze_task(&self, task: &str) -> TaskAnalysis {
        TaskAnalysis::parse(self.lexicon(), task)
    }
}
