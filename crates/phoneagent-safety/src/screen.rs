//! The screen reading as a classification source (SPEC S10, S11) and the shape of a commitment
//! (SPEC S3).
//!
//! Every text of a [`ScreenReading`] is one more source that can only raise the tier:
//!
//! * `target_text` (the element under the tap point) is classified like a target description
//!   (source `screen_target`), and so is each of `nearby_texts` (source `screen_nearby`: a
//!   touch on no element's ink may hit any element next to it) — except a bare affirmative (确定, OK, Yes, 继续, 允许) inside a
//!   dialog, which takes its meaning from the dialog;
//! * the dialog (title + body, source `screen_dialog`): when the target is its affirmative or
//!   primary button, or names an effect itself, an irreversible effect or a "cannot be undone"
//!   marker in the dialog makes the tap hard (`dialog_confirm`); policy words make it soft; a
//!   dialog the lexicons cannot read at all makes its primary button a `commitment_shape`
//!   (`reviewer`). A dismissive target (取消, Cancel) takes nothing from the dialog;
//! * `field_label` (for `type_text`): credential words → hard `credential_target`; a field
//!   with no label read on a screen whose other texts name a credential (密码, Password, PIN)
//!   is a credential field too;
//! * page title, button row and screen lines (source `screen_context`) make effects
//!   *plausible* ([`Classification::plausible_effects`]); they never raise the tier by
//!   themselves. An unreadable target (`target_unreadable`) on a screen where an effect is
//!   plausible — or under a task that forbids one — is `reviewer` tier `unreadable_target` with
//!   [`Classification::visual_review`] set: the runtime asks the isolated visual reviewer
//!   (SPEC S11); `hard` mode asks the person;
//! * a destructive style (`target_style.destructive`) is a commitment shape.

use phoneagent_protocol::{RiskTier, ScreenReading};

use crate::classify::{Classification, Gate, Layers, Reason, ReasonCode, Source, mask};
use crate::input::{GateInput, Tool};
use crate::lexicon::Category;
use crate::normalize::normalize;
use crate::task::TaskAnalysis;

/// Words that say nothing about what a control does: removed before deciding whether a
/// commit-like verb has an object ("「确认」按钮", "the Confirm button").
const SHAPE_STOPWORDS: &[&str] = &[
    "按钮",
    "键",
    "图标",
    "选项",
    "button",
    "icon",
    "the",
    "a",
    "an",
    "your",
    "my",
    "this",
    "tap",
    "click",
    "点击",
    "点",
    "底部",
    "顶部",
    "右上角",
    "右下角",
    "top",
    "bottom",
    "right",
    "left",
];

fn shape_residue(text: &str) -> String {
    let mut t: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '$' || c == '¥' {
                c
            } else {
                ' '
            }
        })
        .collect();
    for w in SHAPE_STOPWORDS {
        if w.is_ascii() {
            t = t
                .split(' ')
                .filter(|x| !x.eq_ignore_ascii_case(w))
                .collect::<Vec<_>>()
                .join(" ");
        } else {
            t = t.replace(w, " ");
        }
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Gate {
    /// True when `text` (normalized) is, as a whole, a label of `category` (affirmative or
    /// dismiss).
    fn whole_label(&self, category: Category, text: &str) -> bool {
        !self.lexicon().hits(category, &normalize(text)).is_empty()
    }

    /// The commitment-shape rule on one target text (SPEC S3): a money amount, or a commit-like
    /// verb next to an object the lexicons do not know, makes a target that no rule made hard
    /// at least `reviewer` tier.
    pub(crate) fn shape(&self, source: Source, text: &str, c: &mut Classification) {
        if c.reasons
            .iter()
            .any(|r| r.source == source && r.tier == RiskTier::Hard)
        {
            return;
        }
        let norm = normalize(text);
        let masked = mask(self.lexicon(), &norm);
        let hits = self.lexicon().hits(Category::CommitShape, &masked);
        let money = hits
            .iter()
            .find(|h| self.lexicon().entry(h.entry).spec.id == "shape.money");
        let verb = hits
            .iter()
            .find(|h| self.lexicon().entry(h.entry).spec.id != "shape.money");
        let found = match (money, verb) {
            (Some(h), _) => Some(*h),
            (None, Some(v)) => {
                let mut rest = masked.clone();
                rest.replace_range(v.start..v.end, &" ".repeat(v.end - v.start));
                (!shape_residue(&rest).is_empty()).then_some(*v)
            }
            (None, None) => None,
        };
        if let Some(h) = found {
            c.push(Reason {
                code: ReasonCode::CommitmentShape,
                tier: RiskTier::Reviewer,
                source,
                evidence: crate::classify::evidence(&norm),
                kind: None,
                entry: Some(self.lexicon().entry(h.entry).spec.id.clone()),
            });
        }
    }

    /// Classify the screen reading of a call (see the module docs).
    pub(crate) fn screen(
        &self,
        input: &GateInput,
        s: &ScreenReading,
        task: &TaskAnalysis,
        layers: Layers,
        c: &mut Classification,
    ) {
        let target = s
            .target_text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if input.tool == Tool::TypeText {
            for (source, text) in [
                (Source::ScreenField, s.field_label.as_deref()),
                (Source::ScreenTarget, target),
            ] {
                let Some(text) = text else { continue };
                for (ev, id, _) in self.scan(text).credentials {
                    c.push(crate::classify::reason(
                        ReasonCode::CredentialTarget,
                        RiskTier::Hard,
                        source,
                        &ev,
                        None,
                        id,
                    ));
                }
            }
            // The field could not be named (no label read at the focused point: a corner of
            // the field, its padding) on a screen that asks for a credential: the text may be
            // going into that credential field (attacker pass: a tap at a password field's
            // corner, then Type).
            let named = s
                .field_label
                .as_deref()
                .is_some_and(|l| !l.trim().is_empty());
            if !named && !c.has(ReasonCode::CredentialTarget) {
                let context = s
                    .page_title
                    .iter()
                    .chain(s.nearby_texts.iter())
                    .chain(s.screen_lines.iter());
                for line in context {
                    if let Some((ev, id, _)) =
                        self.scan(line).credentials.into_iter().find(|(_, _, t)| !t)
                    {
                        c.push(crate::classify::reason(
                            ReasonCode::CredentialTarget,
                            RiskTier::Hard,
                            Source::ScreenContext,
                            &format!("unlabelled field; screen shows {ev}"),
                            None,
                            id,
                        ));
                        break;
                    }
                }
            }
            return;
        }
        if !input.tool.is_touch() {
            return;
        }
        // A near-miss may hit any element next to the point: each is read like the target,
        // and the touch is only dismissive when all of them are.
        let nearby: Vec<&str> = s
            .nearby_texts
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        let candidates = target
            .map(|t| (Source::ScreenTarget, t))
            .into_iter()
            .chain(nearby.iter().map(|t| (Source::ScreenNearby, *t)));
        let is_affirmative = |t: &str| self.whole_label(Category::Affirmative, t);
        let affirmative =
            target.is_some_and(is_affirmative) || nearby.iter().any(|t| is_affirmative(t));
        let dismiss = target.is_some_and(|t| self.whole_label(Category::Dismiss, t))
            && nearby
                .iter()
                .all(|t| self.whole_label(Category::Dismiss, t));
        for (source, t) in candidates {
            if is_affirmative(t) && s.dialog.is_some() {
                continue;
            }
            self.touch(&[(source, Some(t))], &task.forbidden, c);
            if layers.shape {
                self.shape(source, t, c);
            }
        }
        if let Some(d) = &s.dialog {
            let text: String = [d.title.as_deref(), d.body.as_deref()]
                .into_iter()
                .flatten()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("。");
            let names_effect = target.into_iter().chain(nearby.iter().copied()).any(|t| {
                let scan = self.scan(t);
                !scan.commits.is_empty() || !scan.objects.is_empty()
            });
            // The primary button of a *confirm* dialog (one with a choice): a single-button
            // alert ("OK") only acknowledges, unless its text names an effect.
            let choice = d.buttons.len() >= 2;
            let confirms = !dismiss
                && (affirmative || d.target_is_primary || names_effect)
                && (choice || names_effect || d.buttons.is_empty());
            if confirms && !text.is_empty() {
                self.dialog(&text, task, layers, c);
            } else if !dismiss && !text.is_empty() {
                // An acknowledgment still confirms what the dialog says is irreversible.
                self.dialog_effects_only(&text, task, c);
            }
        }
        if layers.shape && s.target_style.destructive && !dismiss && c.tier < RiskTier::Hard {
            c.push(Reason {
                code: ReasonCode::CommitmentShape,
                tier: RiskTier::Reviewer,
                source: Source::ScreenTarget,
                evidence: "destructive style".into(),
                kind: None,
                entry: None,
            });
        }
        // Screen-level context: what is plausible here.
        let mut plausible = Vec::new();
        let context = s
            .page_title
            .iter()
            .chain(s.button_row.iter())
            .chain(s.screen_lines.iter())
            .map(String::as_str)
            .chain(s.dialog.iter().flat_map(|d| {
                d.title
                    .as_deref()
                    .into_iter()
                    .chain(d.body.as_deref())
                    .chain(d.buttons.iter().map(String::as_str))
            }));
        for line in context {
            let norm = mask(self.lexicon(), &normalize(line));
            for cat in [
                Category::ScreenContext,
                Category::CommitPhrase,
                Category::IrreversibleObject,
            ] {
                for h in self.lexicon().hits(cat, &norm) {
                    if let Some(k) = self.lexicon().entry(h.entry).spec.kind {
                        plausible.push(k);
                    }
                }
            }
        }
        plausible.extend(task.forbidden.kinds());
        // An icon with no readable text beside text on its own row is how a compose bar's
        // send button looks (a chat's input with a draft, a comment box): sending is plausible
        // whatever the screen's other words say (issue #11, attacker round 2).
        // A near-miss beside such an icon is read the same way (`nearby_unreadable`).
        let unreadable = (s.target_unreadable && target.is_none()) || s.nearby_unreadable;
        if unreadable && !s.button_row.is_empty() {
            plausible.push(crate::effect::EffectKind::Send);
        }
        c.plausible_effects.extend(plausible);
        if unreadable && c.tier < RiskTier::Hard && !c.plausible_effects.is_empty() {
            let mut kinds = c.plausible_effects.clone();
            kinds.sort();
            kinds.dedup();
            let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            c.push(Reason {
                code: ReasonCode::UnreadableTarget,
                tier: RiskTier::Reviewer,
                source: Source::ScreenTarget,
                evidence: crate::classify::evidence(&format!(
                    "unreadable target; plausible: {}",
                    names.join(", ")
                )),
                kind: None,
                entry: None,
            });
            c.visual_review = true;
        }
    }

    /// A single-button alert: only an irreversible effect the dialog names with a commit
    /// phrase ("订单已提交，将扣款 ¥99" is not, "确认支付 ¥99？" is) counts.
    fn dialog_effects_only(&self, text: &str, task: &TaskAnalysis, c: &mut Classification) {
        let scan = self.scan(text);
        for (k, ev, id) in scan.commits {
            if let Some(b) = task.forbidden.forbids(k) {
                c.push(Reason {
                    code: ReasonCode::NegatedTaskBoundary,
                    tier: RiskTier::Hard,
                    source: Source::ScreenDialog,
                    evidence: crate::classify::evidence(&format!("{} ⇢ {}", b.phrase, ev)),
                    kind: Some(k),
                    entry: Some(b.entry.clone()),
                });
            }
            c.push(crate::classify::reason(
                ReasonCode::DialogConfirm,
                RiskTier::Hard,
                Source::ScreenDialog,
                &ev,
                Some(k),
                id,
            ));
        }
    }

    /// The dialog rule: the target confirms whatever the dialog's `text` (title。body) says.
    fn dialog(&self, text: &str, task: &TaskAnalysis, layers: Layers, c: &mut Classification) {
        let norm = normalize(text);
        let masked = mask(self.lexicon(), &norm);
        let lex = self.lexicon();
        let mut found_kind = false;
        let mut effects = Vec::new();
        for cat in [Category::CommitPhrase, Category::IrreversibleObject] {
            for h in lex.hits(cat, &masked) {
                let spec = &lex.entry(h.entry).spec;
                if let Some(k) = spec.kind {
                    effects.push((
                        k,
                        masked.get(h.start..h.end).unwrap_or_default().to_string(),
                        spec.id.clone(),
                    ));
                }
            }
        }
        for (k, ev, id) in &effects {
            found_kind = true;
            if let Some(b) = task.forbidden.forbids(*k) {
                c.push(Reason {
                    code: ReasonCode::NegatedTaskBoundary,
                    tier: RiskTier::Hard,
                    source: Source::ScreenDialog,
                    evidence: crate::classify::evidence(&format!("{} ⇢ {}", b.phrase, ev)),
                    kind: Some(*k),
                    entry: Some(b.entry.clone()),
                });
            }
            c.push(Reason {
                code: ReasonCode::DialogConfirm,
                tier: RiskTier::Hard,
                source: Source::ScreenDialog,
                evidence: crate::classify::evidence(ev),
                kind: Some(*k),
                entry: Some(id.clone()),
            });
        }
        let irrev = lex.hits(Category::Irreversibility, &masked);
        if let Some(h) = irrev.first() {
            if !found_kind {
                c.push(Reason {
                    code: ReasonCode::DialogConfirm,
                    tier: RiskTier::Hard,
                    source: Source::ScreenDialog,
                    evidence: crate::classify::evidence(
                        masked.get(h.start..h.end).unwrap_or_default(),
                    ),
                    kind: None,
                    entry: Some(lex.entry(h.entry).spec.id.clone()),
                });
            }
            return;
        }
        if found_kind {
            return;
        }
        let scan = self.scan(text);
        let mut known = !scan.credentials.is_empty() || !scan.policy.is_empty();
        for (ev, id, typed_only) in scan.credentials {
            if !typed_only {
                c.push(crate::classify::reason(
                    ReasonCode::CredentialTarget,
                    RiskTier::Hard,
                    Source::ScreenDialog,
                    &ev,
                    None,
                    id,
                ));
            }
        }
        for (ev, id) in scan.policy {
            c.push(crate::classify::reason(
                ReasonCode::PolicyWord,
                RiskTier::Soft,
                Source::ScreenDialog,
                &ev,
                None,
                id,
            ));
        }
        // Benign look-alikes are knowledge too ("开启通知？"): a dialog they explain is not
        // unreadable.
        known |= !lex.hits(Category::Benign, &norm).is_empty();
        if !known && layers.shape {
            c.push(Reason {
                code: ReasonCode::CommitmentShape,
                tier: RiskTier::Reviewer,
                source: Source::ScreenDialog,
                evidence: crate::classify::evidence(&format!("primary button of “{norm}”")),
                kind: None,
                entry: None,
            });
        }
    }
}
