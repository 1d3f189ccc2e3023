//! Asking a person (SPEC S8, S14, R2): the `human_requested` / `human_resolved` pair around the
//! approver (registered before it is announced), and a person's approval of a gated call.

use std::time::Instant;

use phoneagent_protocol::event::{DecidedBy, GateOutcome, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{Action, AgentEvent, Phase, RiskTier};

use crate::adapters;
use crate::approver::HumanRequest;
use crate::now_ms;

use super::{Flow, Run};

/// The approval request put to a person for `action` (SPEC S8, S14): the gate's tier,
/// reasons, redacted target and its own screen reading; the model's reason redacted and
/// labelled as the model's.
pub(super) fn approval_request(
    action: &Action,
    tier: RiskTier,
    reasons: Vec<String>,
    target: String,
    screen: Option<String>,
) -> HumanRequestKind {
    HumanRequestKind::Approval {
        tool: action.kind.name().into(),
        target,
        tier,
        reasons,
        screen,
        model_reason: action.reason.as_deref().map(phoneagent_safety::redact_text),
    }
}

impl Run {
    /// Ask the person to approve a gated call (SPEC S8): `None` when approved (the call runs),
    /// else the flow to return (rejected: an error receipt; cancelled).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ask_person_approval(
        &mut self,
        action: &Action,
        tier: RiskTier,
        reasons: Vec<String>,
        target: String,
        screen: Option<String>,
        t0: Instant,
    ) -> Option<Flow> {
        self.emit_gate(
            action,
            tier,
            reasons.clone(),
            GateOutcome::NeedsApproval,
            DecidedBy::Rule,
            t0,
            None,
        );
        let detail = adapters::receipt(
            action,
            &self.task,
            self.cfg().lang,
            adapters::ReceiptFor::Gate,
        );
        let resp = self
            .ask_human(
                approval_request(action, tier, reasons.clone(), target, screen),
                detail,
            )
            .await;
        if self.cancel.is_cancelled() {
            return Some(self.cancelled_flow());
        }
        if resp == HumanResponse::Approve {
            self.emit_gate(
                action,
                tier,
                reasons,
                GateOutcome::Approved,
                DecidedBy::Human,
                t0,
                None,
            );
            return None;
        }
        let note = match resp {
            HumanResponse::Reject { note: Some(n) } => format!(" ({n})"),
            _ => String::new(),
        };
        self.emit_gate(
            action,
            tier,
            reasons,
            GateOutcome::Rejected,
            DecidedBy::Human,
            t0,
            None,
        );
        self.reject_turn(
            action,
            format!("Rejected by the user{note}: the call was not executed. Do not try to reach the same effect another way."),
        );
        Some(Flow::Continue)
    }

    pub(super) async fn ask_human(
        &mut self,
        kind: HumanRequestKind,
        detail: String,
    ) -> HumanResponse {
        self.ask_human_with_id(kind, detail).await.1
    }

    /// Ask the human through the approver with the `human_requested` / `human_resolved`
    /// events around it; returns the request id too (the approve-for-me ledger keeps it).
    pub(super) async fn ask_human_with_id(
        &mut self,
        kind: HumanRequestKind,
        detail: String,
    ) -> (String, HumanResponse) {
        self.plan_reuse = None;
        self.set_phase(Phase::AwaitingHuman);
        let id = uuid::Uuid::new_v4().to_string();
        let expires = now_ms() + self.cfg().human_timeout.as_millis() as u64;
        let allowed = kind
            .allowed_responses()
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        let req = HumanRequest {
            id: id.clone(),
            kind: kind.clone(),
            expires_at_ms: expires,
            task: self.task.clone(),
            detail,
        };
        // Register first, then announce (issue #13): an answer sent the moment the event is
        // seen finds the request.
        self.agent.parts.approver.register(&req);
        self.bus.emit(AgentEvent::HumanRequested {
            request_id: id.clone(),
            request: kind,
            expires_at_ms: expires,
            allowed_responses: allowed,
        });
        let t0 = Instant::now();
        let resp = self.agent.parts.approver.ask(&req, &self.cancel).await;
        self.bus.emit(AgentEvent::HumanResolved {
            request_id: id.clone(),
            response: resp.clone(),
            decided_by: DecidedBy::Human,
            latency_ms: t0.elapsed().as_millis() as u64,
        });
        (id, resp)
    }
}
