//! The safety gate in the loop (SPEC S1–S7, S10, S11, AR1): one executing call's screen reading,
//! the Double Tap rules, the gate's verdict and where it goes — allow, warn (receipt), block,
//! reversibility review, approve-for-me, the person, or the visual reviewer.

use std::time::Instant;

use phoneagent_llm::config::Role;
use phoneagent_llm::ledger::CallKind;
use phoneagent_protocol::event::{DecidedBy, GateOutcome, MappedPoint};
use phoneagent_protocol::{AccessMode, Action, ActionKind, Phase, RiskTier, ScreenReading};
use phoneagent_review::{ReversibilityReviewer, ReviewVerdict};

use crate::adapters::{self, GateVerdict};

use super::{Flow, Obs, Run, approve_for_me, screen_gate};

impl Run {
    /// The safety gate for one executing call (S1–S7, S10, S11): `None` when the call may be
    /// dispatched, else the flow to return (it was not run). `pre_read` is the screen reading
    /// already made for a swipe gated as the tap it amounts to (`swipe_as_tap`).
    pub(super) async fn gate(
        &mut self,
        action: &Action,
        obs: &Obs,
        points: &[MappedPoint],
        pre_read: Option<Option<ScreenReading>>,
        swipe_as_tap: bool,
    ) -> Option<Flow> {
        self.set_phase(Phase::Gating);
        let t0 = Instant::now();
        let screen = match pre_read {
            Some(reading) => reading,
            None => self.read_screen(action, obs, points).await,
        };
        let is_double_tap = matches!(action.kind, ActionKind::DoubleTap { .. });
        let gating = self.cfg().mode != AccessMode::Off;
        // SPEC S10, S3: a Double Tap's second tap lands on what the first one opened, a
        // target not on the planning frame. On a control the reader sees (see
        // `screen_gate::double_tap_on_control`) it is refused with zero touches.
        if is_double_tap
            && gating
            && let Some(r) = &screen
            && screen_gate::double_tap_on_control(r)
        {
            let message = "Not executed: double_tap is refused on buttons, rows, fields and \
                           other controls — its second tap lands on whatever the first one \
                           opens. Use Tap for a button; use Double Tap only on content such \
                           as an image, a map or text."
                .to_string();
            self.emit_gate(
                action,
                RiskTier::Hard,
                vec!["double_tap_on_control".into()],
                GateOutcome::BlockedByTaskBoundary,
                DecidedBy::Rule,
                t0,
                Some(message.clone()),
            );
            self.reject_turn(action, message);
            return Some(Flow::Continue);
        }
        let label_is_credential = matches!(action.kind, ActionKind::Type { .. })
            && screen
                .as_ref()
                .is_some_and(crate::secrets::is_credential_field);
        let ctx = adapters::GateContext {
            password_field: matches!(action.kind, ActionKind::Type { .. })
                .then_some(self.credential_field_focused || label_is_credential),
            screen: screen.clone(),
            options: self.cfg().gate_options,
        };
        let screen_summary = screen.as_ref().map(screen_gate::summarize);
        // A Double Tap is gated as the Tap on the same target, at least.
        let gated_as = match &action.kind {
            ActionKind::DoubleTap { element } => Action {
                kind: ActionKind::Tap { element: *element },
                ..action.clone()
            },
            _ => action.clone(),
        };
        let mut verdict = adapters::gate(
            self.cfg().mode,
            &gated_as,
            &self.task,
            self.cfg().lang,
            &ctx,
        );
        // SPEC S10, S3: without a reader the gate cannot see what the second tap of a
        // Double Tap hits, nor whether the first one is on plain content: in every mode but
        // off it goes to the person (unless the gate already refuses it).
        if is_double_tap
            && gating
            && screen.is_none()
            && !matches!(verdict, GateVerdict::Blocked { .. })
        {
            verdict = unread_double_tap(&verdict, action);
        }
        let touch_reasons = verdict.reasons().to_vec();
        // What a touch aims at decides what the next `type_text` is (SPEC P6, S3): set
        // when the touch is proposed, whatever becomes of it, so a rejected or blocked
        // touch on a password field still makes the text typed next a secret.
        // A touch on empty space (the reader sees nothing there) moves no focus on Android:
        // the field focused before — a password field — still takes the text typed next
        // (attacker pass: focus the password field, tap a blank spot, type).
        let on_nothing = screen.as_ref().is_some_and(screen_gate::reads_nothing);
        if matches!(
            action.kind,
            ActionKind::Tap { .. } | ActionKind::DoubleTap { .. } | ActionKind::LongPress { .. }
        ) && !on_nothing
        {
            self.credential_field_focused = touch_reasons
                .iter()
                .any(|r| r == "credential_target" || r == "password_field");
            self.last_touch_point = points.first().map(|p| (p.device.x, p.device.y));
        }
        match verdict {
            GateVerdict::Allow { tier, reasons } => {
                self.emit_gate(
                    action,
                    tier,
                    reasons,
                    GateOutcome::Allow,
                    DecidedBy::Rule,
                    t0,
                    None,
                );
            }
            GateVerdict::Warn {
                tier,
                reasons,
                receipt,
                notice,
            } => {
                tracing::info!("{notice}");
                return Some(self.warn_turn(
                    action,
                    (tier, reasons),
                    DecidedBy::Rule,
                    t0,
                    receipt,
                    swipe_as_tap,
                ));
            }
            GateVerdict::Blocked {
                tier,
                reasons,
                message,
            } => {
                self.emit_gate(
                    action,
                    tier,
                    reasons,
                    GateOutcome::BlockedByTaskBoundary,
                    DecidedBy::Rule,
                    t0,
                    Some(message.clone()),
                );
                self.reject_turn(action, message);
                return Some(Flow::Continue);
            }
            GateVerdict::Review {
                tier,
                reasons,
                summary,
            } => {
                return self
                    .review_gate(action, (tier, reasons), &summary, t0, swipe_as_tap)
                    .await;
            }
            GateVerdict::NeedsApproval {
                route: phoneagent_safety::ApprovalRoute::AutoReviewer,
                tier,
                reasons,
                target,
                task_authorizes,
            } => {
                let case = approve_for_me::Case {
                    tier,
                    reasons,
                    target,
                    task_authorizes,
                    screen: screen_summary,
                };
                if let Some(flow) = self.approve_for_me(action, obs, case, t0).await {
                    return Some(flow);
                }
            }
            GateVerdict::NeedsApproval {
                tier,
                reasons,
                target,
                ..
            } => {
                if let Some(flow) = self
                    .ask_person_approval(action, tier, reasons, target, screen_summary, t0)
                    .await
                {
                    return Some(flow);
                }
            }
            GateVerdict::VisualReview {
                tier,
                reasons,
                target,
            } => {
                return self
                    .visual_gate(
                        action,
                        obs,
                        points,
                        (tier, reasons, target),
                        screen_summary,
                        t0,
                        swipe_as_tap,
                    )
                    .await;
            }
        }
        None
    }

    /// A `review` verdict (SPEC S7): the reversibility reviewer's `reversible` lets the call run
    /// (`None`); anything else — irreversible, unavailable, an error — fails closed as a warning.
    async fn review_gate(
        &mut self,
        action: &Action,
        (tier, reasons): (RiskTier, Vec<String>),
        summary: &str,
        t0: Instant,
        swipe_as_tap: bool,
    ) -> Option<Flow> {
        match self.reversibility_review(action, summary).await {
            ReviewVerdict::Reversible => {
                self.emit_gate(
                    action,
                    tier,
                    reasons,
                    GateOutcome::Allow,
                    DecidedBy::Reviewer,
                    t0,
                    None,
                );
                None
            }
            verdict => {
                let code = match verdict {
                    ReviewVerdict::Unavailable => "reviewer_unavailable_failclosed",
                    ReviewVerdict::Error(_) => "reviewer_error_failclosed",
                    _ => "reviewer_irreversible",
                };
                let which = if code == "reviewer_irreversible" {
                    adapters::ReceiptFor::ReviewerIrreversible
                } else {
                    adapters::ReceiptFor::ReviewerFailClosed(code)
                };
                let mut reasons = reasons;
                reasons.push(code.into());
                let receipt = adapters::receipt(action, &self.task, self.cfg().lang, which);
                Some(self.warn_turn(
                    action,
                    (tier, reasons),
                    DecidedBy::Reviewer,
                    t0,
                    receipt,
                    swipe_as_tap,
                ))
            }
        }
    }

    /// A `visual_review` verdict (SPEC S11): `None` when the call may run, else the flow to
    /// return.
    #[allow(clippy::too_many_arguments)]
    async fn visual_gate(
        &mut self,
        action: &Action,
        obs: &Obs,
        points: &[MappedPoint],
        (tier, mut reasons, target): (RiskTier, Vec<String>, String),
        screen_summary: Option<String>,
        t0: Instant,
        swipe_as_tap: bool,
    ) -> Option<Flow> {
        // SPEC S11: an unreadable target where an irreversible effect is plausible: the
        // isolated visual reviewer says what the control does.
        let verdict = self.visual_review(obs, points).await;
        let outcome = screen_gate::visual_outcome(
            &verdict,
            &self.task,
            self.cfg().mode,
            action.confirm_irreversible,
        );
        reasons.push(match &verdict {
            Ok(v) => format!(
                "visual_reviewer:{}",
                serde_json::to_value(v.effect)
                    .ok()
                    .and_then(|e| e.as_str().map(str::to_string))
                    .unwrap_or_default()
            ),
            Err(e) => e.reason_code().to_string(),
        });
        match outcome {
            screen_gate::VisualOutcome::Run => self.emit_gate(
                action,
                tier,
                reasons,
                GateOutcome::Allow,
                DecidedBy::Reviewer,
                t0,
                None,
            ),
            screen_gate::VisualOutcome::Warn => {
                let receipt = adapters::receipt(
                    action,
                    &self.task,
                    self.cfg().lang,
                    adapters::ReceiptFor::ReviewerIrreversible,
                );
                return Some(self.warn_turn(
                    action,
                    (tier, reasons),
                    DecidedBy::Reviewer,
                    t0,
                    receipt,
                    swipe_as_tap,
                ));
            }
            screen_gate::VisualOutcome::AskPerson => {
                let mut summary = screen_summary.unwrap_or_default();
                if let Ok(v) = &verdict
                    && let Some(l) = &v.label
                {
                    summary.push_str(&format!(
                        " · the visual reviewer sees: {}",
                        phoneagent_safety::redact_text(l)
                    ));
                }
                if let Some(flow) = self
                    .ask_person_approval(action, RiskTier::Hard, reasons, target, Some(summary), t0)
                    .await
                {
                    return Some(flow);
                }
            }
        }
        None
    }

    /// A gate warning (SPEC S5): the call is not run and the model gets the receipt, to send
    /// it again with `confirm_irreversible=True` if the task asks for it. A swipe gated as the
    /// tap it amounts to (SPEC S10, S3) cannot carry that flag (the Swipe grammar has no
    /// `confirm_irreversible`), so for it the warning is a refusal: outcome
    /// `blocked_by_task_boundary`, and the receipt tells the model to use a confirmed Tap.
    fn warn_turn(
        &mut self,
        action: &Action,
        (tier, mut reasons): (RiskTier, Vec<String>),
        by: DecidedBy,
        t0: Instant,
        receipt: String,
        swipe_as_tap: bool,
    ) -> Flow {
        if swipe_as_tap {
            reasons.push("swipe_as_tap".into());
            let message = format!(
                "{receipt}\nNot executed: this swipe lands as a tap on that control, and a swipe \
                 cannot be confirmed. Do not swipe on buttons; use Tap (with \
                 confirm_irreversible=True only if the task really asks for this effect)."
            );
            self.emit_gate(
                action,
                tier,
                reasons,
                GateOutcome::BlockedByTaskBoundary,
                by,
                t0,
                Some(message.clone()),
            );
            self.reject_turn(action, message);
            return Flow::Continue;
        }
        self.emit_gate(
            action,
            tier,
            reasons,
            GateOutcome::Warned,
            by,
            t0,
            Some(receipt.clone()),
        );
        let receipt = self.family_receipt(action, receipt);
        self.reject_turn(action, receipt);
        Flow::Continue
    }

    async fn reversibility_review(&mut self, action: &Action, summary: &str) -> ReviewVerdict {
        let Some(route) = self.agent.parts.safety_reviewer.clone() else {
            return ReviewVerdict::Unavailable;
        };
        let reviewer = ReversibilityReviewer::new(route.client.clone());
        let (verdict, resp) = reviewer
            .review(action.kind.name(), summary, &self.cancel)
            .await;
        if let Some(resp) = resp {
            self.account(
                Role::SafetyReviewer,
                CallKind::SafetyReviewer,
                &route,
                Ok(&resp),
            );
        }
        verdict
    }
}

/// SPEC S10, S3: the approval a Double Tap whose target the gate could not read goes to — the
/// person, at tier hard, with `double_tap_unread_target` added to the gate's reasons.
fn unread_double_tap(verdict: &GateVerdict, action: &Action) -> GateVerdict {
    let mut reasons = verdict.reasons().to_vec();
    reasons.push("double_tap_unread_target".into());
    let target = match verdict {
        GateVerdict::NeedsApproval { target, .. } | GateVerdict::VisualReview { target, .. } => {
            target.clone()
        }
        _ => action
            .target_description
            .as_deref()
            .map(phoneagent_safety::redact_text)
            .unwrap_or_else(|| "double tap (target not read)".into()),
    };
    GateVerdict::NeedsApproval {
        route: phoneagent_safety::ApprovalRoute::Human,
        tier: RiskTier::Hard,
        reasons,
        target,
        task_authorizes: false,
    }
}
