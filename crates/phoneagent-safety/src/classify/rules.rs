//! The per-tool rules of the gate (SPEC S3 rules 3–5, S4): `type_text` (password field,
//! credential text and targets), `launch_app` (payment-like apps), touch (commit phrases, bare
//! irreversible objects, credential and policy words, negated task boundaries) and the scan of one
//! target text that they all read. The order and merging of the rules is in `classify/mod.rs`.

use phoneagent_protocol::RiskTier;

use super::{
    COMMIT_WINDOW_CHARS, Classification, EffectKind, Gate, Reason, ReasonCode, Source, TargetScan,
    evidence, mask, near, overlaps, reason,
};
use crate::boundary::BoundarySet;
use crate::input::GateInput;
use crate::lexicon::{Category, Hit};
use crate::normalize::normalize;

impl Gate {
    pub(super) fn type_text(
        &self,
        input: &GateInput,
        sources: &[(Source, Option<&str>)],
        c: &mut Classification,
    ) {
        if input.target_is_password_field == Some(true) {
            c.push(Reason {
                code: ReasonCode::PasswordField,
                tier: RiskTier::Hard,
                source: Source::Flag,
                evidence: "target_is_password_field=true".into(),
                kind: None,
                entry: None,
            });
        }
        if let Some(text) = input.text.as_deref() {
            let norm = normalize(text);
            for h in self.lexicon.hits(Category::CredentialShape, &norm) {
                c.push(self.reason_at(
                    ReasonCode::CredentialText,
                    RiskTier::Hard,
                    Source::Text,
                    &norm,
                    h,
                    None,
                ));
            }
            let masked = mask(&self.lexicon, &norm);
            for h in self.lexicon.hits(Category::CredentialWord, &masked) {
                c.push(self.reason_at(
                    ReasonCode::CredentialText,
                    RiskTier::Hard,
                    Source::Text,
                    &masked,
                    h,
                    None,
                ));
            }
        }
        for &(source, text) in sources {
            let Some(text) = text else { continue };
            let scan = self.scan(text);
            for (ev, id, _typed_only) in scan.credentials {
                c.push(reason(
                    ReasonCode::CredentialTarget,
                    RiskTier::Hard,
                    source,
                    &ev,
                    None,
                    id,
                ));
            }
            for (kind, ev, id) in scan.commits.into_iter().chain(scan.objects) {
                c.push(reason(
                    ReasonCode::IrreversibleObject,
                    RiskTier::Soft,
                    source,
                    &ev,
                    Some(kind),
                    id,
                ));
            }
            for (ev, id) in scan.policy {
                c.push(reason(
                    ReasonCode::PolicyWord,
                    RiskTier::Soft,
                    source,
                    &ev,
                    None,
                    id,
                ));
            }
        }
    }

    pub(super) fn launch_app(
        &self,
        input: &GateInput,
        sources: &[(Source, Option<&str>)],
        c: &mut Classification,
    ) {
        let names = [
            (Source::Text, input.text.as_deref()),
            (
                Source::TargetDescription,
                input.target_description.as_deref(),
            ),
        ];
        for (source, name) in names {
            let Some(name) = name else { continue };
            let norm = normalize(name);
            for h in self.lexicon.hits(Category::PaymentApp, &norm) {
                c.push(self.reason_at(
                    ReasonCode::PaymentAppLaunch,
                    RiskTier::Soft,
                    source,
                    &norm,
                    h,
                    None,
                ));
            }
        }
        for &(source, text) in sources.iter().chain(names.iter()) {
            let Some(text) = text else { continue };
            let scan = self.scan(text);
            for (kind, ev, id) in scan.commits.into_iter().chain(scan.objects) {
                c.push(reason(
                    ReasonCode::IrreversibleObject,
                    RiskTier::Soft,
                    source,
                    &ev,
                    Some(kind),
                    id,
                ));
            }
            for (ev, id) in scan.policy {
                c.push(reason(
                    ReasonCode::PolicyWord,
                    RiskTier::Soft,
                    source,
                    &ev,
                    None,
                    id,
                ));
            }
        }
    }

    pub(crate) fn touch(
        &self,
        sources: &[(Source, Option<&str>)],
        boundaries: &BoundarySet,
        c: &mut Classification,
    ) {
        for &(source, text) in sources {
            let Some(text) = text else { continue };
            let scan = self.scan(text);
            if !boundaries.is_empty() {
                // What the action points at: commits anywhere; bare objects only in what the
                // model names as its target (or OCR around it). The reason is read with its own
                // negations removed ("don't send yet, save the draft" is not about sending).
                let for_boundary = if source == Source::Reason {
                    self.scan(&crate::boundary::strip_negated(&self.lexicon, text))
                } else {
                    TargetScan {
                        commits: scan.commits.clone(),
                        objects: scan.objects.clone(),
                        ..TargetScan::default()
                    }
                };
                let mut hits: Vec<(EffectKind, &str)> = for_boundary
                    .commits
                    .iter()
                    .map(|(k, ev, _)| (*k, ev.as_str()))
                    .collect();
                if source != Source::Reason {
                    hits.extend(
                        for_boundary
                            .objects
                            .iter()
                            .map(|(k, ev, _)| (*k, ev.as_str())),
                    );
                }
                for (kind, ev) in hits {
                    if let Some(b) = boundaries.forbids(kind) {
                        c.push(Reason {
                            code: ReasonCode::NegatedTaskBoundary,
                            tier: RiskTier::Hard,
                            source,
                            evidence: evidence(&format!("{} ⇢ {}", b.phrase, ev)),
                            kind: Some(kind),
                            entry: Some(b.entry.clone()),
                        });
                    }
                }
            }
            for (kind, ev, id) in scan.commits {
                c.push(reason(
                    ReasonCode::CommitIrreversible,
                    RiskTier::Hard,
                    source,
                    &ev,
                    Some(kind),
                    id,
                ));
            }
            for (kind, ev, id) in scan.objects {
                c.push(reason(
                    ReasonCode::IrreversibleObject,
                    RiskTier::Soft,
                    source,
                    &ev,
                    Some(kind),
                    id,
                ));
            }
            for (ev, id, typed_only) in scan.credentials {
                if !typed_only {
                    c.push(reason(
                        ReasonCode::CredentialTarget,
                        RiskTier::Hard,
                        source,
                        &ev,
                        None,
                        id,
                    ));
                }
            }
            for (ev, id) in scan.policy {
                c.push(reason(
                    ReasonCode::PolicyWord,
                    RiskTier::Soft,
                    source,
                    &ev,
                    None,
                    id,
                ));
            }
        }
    }

    fn reason_at(
        &self,
        code: ReasonCode,
        tier: RiskTier,
        source: Source,
        text: &str,
        h: Hit,
        kind: Option<crate::lexicon::EffectKind>,
    ) -> Reason {
        Reason {
            code,
            tier,
            source,
            evidence: evidence(text.get(h.start..h.end).unwrap_or_default()),
            kind,
            entry: Some(self.lexicon.entry(h.entry).spec.id.clone()),
        }
    }

    /// Scan one target text for commits, objects, credential words and policy words.
    /// A label joined with punctuation (`Pay-now`, `确-认-支-付`) is scanned a second time
    /// without it (SPEC S13) and the hits of both readings kept (each hit once).
    pub(crate) fn scan(&self, raw: &str) -> TargetScan {
        let norm = normalize(raw);
        let mut out = self.scan_normalized(&norm);
        if let Some(alt) = crate::normalize::unjoined(&norm) {
            let more = self.scan_normalized(&alt);
            fn add<T: PartialEq>(to: &mut Vec<T>, from: Vec<T>) {
                for x in from {
                    if !to.contains(&x) {
                        to.push(x);
                    }
                }
            }
            add(&mut out.commits, more.commits);
            add(&mut out.objects, more.objects);
            add(&mut out.credentials, more.credentials);
            add(&mut out.policy, more.policy);
        }
        out
    }

    fn scan_normalized(&self, norm: &str) -> TargetScan {
        let mut out = TargetScan::default();
        if norm.is_empty() {
            return out;
        }
        let text = mask(&self.lexicon, norm);
        let span_text = |h: &Hit| text.get(h.start..h.end).unwrap_or_default().to_string();
        let id = |h: &Hit| self.lexicon.entry(h.entry).spec.id.clone();
        let kind = |h: &Hit| self.lexicon.entry(h.entry).spec.kind;

        let mut taken: Vec<(usize, usize)> = Vec::new();
        for h in self.lexicon.hits(Category::CommitPhrase, &text) {
            if let Some(k) = kind(&h) {
                out.commits.push((k, span_text(&h), id(&h)));
                taken.push((h.start, h.end));
            }
        }
        let verbs = self.lexicon.hits(Category::CommitVerb, &text);
        for o in self.lexicon.hits(Category::IrreversibleObject, &text) {
            let Some(k) = kind(&o) else { continue };
            let os = (o.start, o.end);
            if taken.iter().any(|&t| overlaps(t, os)) {
                continue;
            }
            let verb = verbs
                .iter()
                .find(|v| near(&text, (v.start, v.end), os, COMMIT_WINDOW_CHARS));
            match verb {
                Some(v) => {
                    let (lo, hi) = (v.start.min(o.start), v.end.max(o.end));
                    out.commits.push((
                        k,
                        text.get(lo..hi).unwrap_or_default().to_string(),
                        format!("{}+{}", id(v), id(&o)),
                    ));
                    taken.push((lo, hi));
                }
                None => {
                    out.objects.push((k, span_text(&o), id(&o)));
                }
            }
        }
        for h in self.lexicon.hits(Category::CredentialWord, &text) {
            let typed_only = self.lexicon.entry(h.entry).spec.typed_only;
            out.credentials.push((span_text(&h), id(&h), typed_only));
        }
        let objects_spans: Vec<(usize, usize)> = self
            .lexicon
            .hits(Category::IrreversibleObject, &text)
            .iter()
            .map(|h| (h.start, h.end))
            .collect();
        for h in self.lexicon.hits(Category::PolicyWord, &text) {
            let s = (h.start, h.end);
            if taken
                .iter()
                .chain(objects_spans.iter())
                .any(|&t| overlaps(t, s))
            {
                continue;
            }
            out.policy.push((span_text(&h), id(&h)));
        }
        out
    }
}
