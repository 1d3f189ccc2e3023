//! Approve-for-me in the loop (SPEC AR1–AR8).
//!
//! When the gate answers `NeedsApproval { route: AutoReviewer }`, [`Run::approve_for_me`] hands
//! the request to the [`AutoReview`] engine and carries out its decision:
//! * allow → the call runs (the allow reason, when enabled, is fed to the next planning turn);
//! * deny → not run; the denial reason with the no-detour instruction is the tool result;
//! * delegate (policy `human`, a gate, a failure) → the normal human approval path;
//! * stop → the denial is recorded and returned, then the run ends with
//!   `termination_code = "approval_breaker"` and the breaker's reason.
//!
//! Every request ends in exactly one `approval_review` event (the ledger row, SPEC AR8), after
//! the `gate_decision` events and, when delegated, after the human's `human_resolved`.

use std::sync::Arc;
use std::time::Instant;

use phoneagent_llm::config::Role;
use phoneagent_llm::ledger::CallKind;
use phoneagent_protocol::event::{DecidedBy, GateOutcome, HumanResponse};
use phoneagent_protocol::{Action, AgentEvent, ApprovalOutcome, EndReason, RiskTier, RunStatus};
use phoneagent_review::auto::{
    ApprovalInput, ArgumentsInput, AutoAction, AutoReview, AutoReviewConfig, AutoReviewError,
    AutoReviewHandle, ReviewerRoute,
};

use super::{Agent, Flow, ModelRoute, Obs, Run};
use crate::adapters;
use crate::config::Lang;

/// The approve-for-me engine of an agent and the reviewer route (for token accounting).
pub(crate) struct ApproveForMe {
    engine: AutoReview,
    route: Option<ModelRoute>,
}

impl ApproveForMe {
    /// Defaults and no reviewer model: every `ai` request is a reviewer failure, which by
    /// default goes to the human.
    pub(crate) fn unconfigured() -> Self {
        Self {
            engine: AutoReview::unconfigured(),
            route: None,
        }
    }

    fn new(cfg: AutoReviewConfig, route: Option<ModelRoute>) -> Result<Self, AutoReviewError> {
        let reviewer = route.as_ref().map(|r| ReviewerRoute {
            client: r.client.clone(),
            profile: r.profile_name.clone(),
            model: r.profile.model.clone(),
        });
        Ok(Self {
            engine: AutoReview::new(cfg, reviewer)?,
            route,
        })
    }
}

impl Agent {
    /// Configure the approve-for-me mode (SPEC AR1–AR8): the policy/gate configuration and the
    /// `auto_reviewer` model route (None → every `ai` request goes to `on_reviewer_failure`,
    /// by default the human). Only used when the access mode is `approve-for-me`.
    ///
    /// # Errors
    /// [`AutoReviewError::Rule`] when a rule's regex does not compile.
    pub fn with_approve_for_me(
        mut self,
        config: AutoReviewConfig,
        reviewer: Option<ModelRoute>,
    ) -> Result<Self, AutoReviewError> {
        let afm = ApproveForMe::new(config, reviewer)?;
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.approve_for_me = afm,
            // A run or step session holds the shared state: configure before starting.
            None => return Err(AutoReviewError::Busy),
        }
        Ok(self)
    }

    /// The handle front ends use while a run is going: live budget/breaker status
    /// ([`AutoReviewHandle::status`]) and the one-time override of the n-th most recent denial
    /// ([`AutoReviewHandle::grant_override`], SPEC AR7). Cheap to clone; in memory only.
    pub fn approve_for_me_handle(&self) -> AutoReviewHandle {
        self.shared.approve_for_me.engine.handle()
    }
}

fn safety_lang(l: Lang) -> phoneagent_safety::Lang {
    match l {
        Lang::En => phoneagent_safety::Lang::En,
        Lang::Zh => phoneagent_safety::Lang::Zh,
    }
}

/// The arguments of an action as the reviewer sees them (before redaction): the action kind's
/// fields plus the model's target description and flags. Coordinates are model-space.
fn action_arguments(action: &Action) -> serde_json::Value {
    let mut v = serde_json::to_value(&action.kind).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(m) = &mut v {
        if let Some(t) = &action.target_description {
            m.insert("target_description".into(), t.clone().into());
        }
        if action.sensitive {
            m.insert("sensitive".into(), true.into());
        }
        if action.confirm_irreversible {
            m.insert("confirm_irreversible".into(), true.into());
        }
    }
    v
}

/// A call the gate gave to approve-for-me, with what the gate itself found.
pub(super) struct Case {
    /// The gate's tier.
    pub tier: RiskTier,
    /// The gate's reason codes.
    pub reasons: Vec<String>,
    /// Redacted target.
    pub target: String,
    /// The task authorizes the effect (the gate's analysis with the screen reading, S12).
    pub task_authorizes: bool,
    /// The gate's own reading of the screen, summarized for the person (S14).
    pub screen: Option<String>,
}

impl Run {
    /// The approve-for-me hook (SPEC AR1): `None` = run the call, `Some(flow)` = return it.
    pub(super) async fn approve_for_me(
        &mut self,
        action: &Action,
        obs: &Obs,
        case: Case,
        t0: Instant,
    ) -> Option<Flow> {
        let Case {
            tier,
            reasons,
            target,
            task_authorizes,
            screen,
        } = case;
        self.emit_gate(
            action,
            tier,
            reasons.clone(),
            GateOutcome::NeedsApproval,
            DecidedBy::Rule,
            t0,
            None,
        );
        let agent = Arc::clone(&self.agent);
        let afm = &agent.approve_for_me;
        if afm.engine.begin_run(&self.bus_run_id())
            && let Some(fb) = afm.route.as_ref().and_then(|r| r.fallback.as_ref())
        {
            // The reviewer's role fell back along its chain (SPEC M2): audited once per run.
            self.bus.emit(AgentEvent::ModelFallback {
                role: fb.role.as_str().into(),
                requested: fb.from_profile.clone(),
                used: fb.to_profile.clone(),
                reason: fb.reason.clone(),
            });
        }
        let image_policy = afm
            .route
            .as_ref()
            .map_or(&agent.parts.actor.profile.image, |r| &r.profile.image);
        let screenshot = adapters::prepare(&obs.shot, image_policy)
            .ok()
            .map(|p| p.data_url);
        let recent_steps = self
            .memory
            .turns()
            .iter()
            .map(|t| {
                format!(
                    "step {}: {} → {}{}",
                    t.step,
                    t.action,
                    t.result,
                    if t.rejected { " (not executed)" } else { "" }
                )
            })
            .collect();
        let input = ApprovalInput {
            task: self.task.clone(),
            tool: action.kind.name().into(),
            target: target.clone(),
            arguments: ArgumentsInput::Json(action_arguments(action)),
            model_reason: action.reason.clone(),
            screen_description: action.screen_description.clone(),
            recent_steps,
            screenshot,
            tier,
            reasons: reasons.clone(),
            // The gate's task analysis with the screen reading (SPEC S12, S10), never the
            // reviewer's labels.
            task_authorizes,
        };
        let request_id = format!("ar-{}", uuid::Uuid::new_v4());
        let lang = self.cfg().lang;
        let d = afm
            .engine
            .decide(&request_id, &input, safety_lang(lang), &self.cancel)
            .await;
        if let (Some(call), Some(route)) = (&d.call, afm.route.as_ref()) {
            if let Some(resp) = &call.response {
                self.account(Role::AutoReviewer, CallKind::AutoReviewer, route, Ok(resp));
            } else if let Some(e) = &call.error {
                self.account(
                    Role::AutoReviewer,
                    CallKind::AutoReviewer,
                    route,
                    Err((e, call.elapsed)),
                );
            }
        }
        let mut rec = d.record;
        match d.action {
            AutoAction::Allow => {
                self.emit_gate(
                    action,
                    tier,
                    reasons,
                    GateOutcome::Approved,
                    rec.decided_by,
                    t0,
                    None,
                );
                self.bus.emit(AgentEvent::ApprovalReview(rec));
                if let Some(f) = d.feedback {
                    self.feedback.push(f);
                }
                None
            }
            AutoAction::Deny | AutoAction::StopRun => {
                let text = d.feedback.unwrap_or_else(|| rec.reason.clone());
                self.emit_gate(
                    action,
                    tier,
                    reasons,
                    GateOutcome::Rejected,
                    rec.decided_by,
                    t0,
                    Some(text.clone()),
                );
                let stop = (d.action == AutoAction::StopRun).then(|| rec.reason.clone());
                self.bus.emit(AgentEvent::ApprovalReview(rec));
                self.reject_turn(action, text);
                Some(match stop {
                    Some(reason) => {
                        Self::end(RunStatus::Failed, EndReason::ApprovalBreaker, reason)
                    }
                    None => Flow::Continue,
                })
            }
            AutoAction::Delegate => {
                let mut detail =
                    adapters::receipt(action, &self.task, lang, adapters::ReceiptFor::Gate);
                detail.push_str(&match lang {
                    Lang::En => format!("\n\nApprove-for-me handed this to you: {}", rec.reason),
                    Lang::Zh => format!("\n\n替我审批将此请求交给你：{}", rec.reason),
                });
                let (human_id, resp) = self
                    .ask_human_with_id(
                        super::human::approval_request(
                            action,
                            tier,
                            reasons.clone(),
                            target,
                            screen.clone(),
                        ),
                        detail,
                    )
                    .await;
                rec.human_request_id = Some(human_id);
                rec.decided_by = DecidedBy::Human;
                rec.latency_ms = t0.elapsed().as_millis() as u64;
                if self.cancel.is_cancelled() {
                    rec.outcome = ApprovalOutcome::Denied;
                    self.bus.emit(AgentEvent::ApprovalReview(rec));
                    return Some(self.cancelled_flow());
                }
                if resp == HumanResponse::Approve {
                    rec.outcome = ApprovalOutcome::Allowed;
                    self.emit_gate(
                        action,
                        tier,
                        reasons,
                        GateOutcome::Approved,
                        DecidedBy::Human,
                        t0,
                        None,
                    );
                    self.bus.emit(AgentEvent::ApprovalReview(rec));
                    None
                } else {
                    let note = match resp {
                        HumanResponse::Reject { note: Some(n) } => format!(" ({n})"),
                        _ => String::new(),
                    };
                    rec.outcome = ApprovalOutcome::Denied;
                    rec.reason = match lang {
                        Lang::En => format!("{} — rejected by the user{note}", rec.reason),
                        Lang::Zh => format!("{}——用户已拒绝{note}", rec.reason),
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
                    self.bus.emit(AgentEvent::ApprovalReview(rec));
                    self.reject_turn(
                        action,
                        match lang {
                            Lang::En => format!("Rejected by the user{note}: the call was not executed. Do not try to reach the same effect another way."),
                            Lang::Zh => format!("用户拒绝了此操作{note}：未执行。不要用别的方式达成同样的效果。"),
                        },
                    );
                    Some(Flow::Continue)
                }
            }
        }
    }
}
