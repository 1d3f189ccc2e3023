//! Approvals (SPEC U4, AR1–AR8): the human requests of the running task — held, validated and
//! resolved by its runtime session (registered before they are announced; answers checked
//! against id, expiry and the kind's allowed responses) — the native notifications that
//! mirror them, and the approve-for-me controls, policy and ledger.

use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AgentEvent, ApprovalReview, EventEnvelope, Op};
use phoneagent_review::auto::{AutoReviewConfig, AutoReviewStatus, OverrideGrant};
use phoneagent_runtime::{Ack, HumanRequest, Session};

use crate::console::Console;
use crate::dto::{PendingRequest, RequestKind};
use crate::error::{AppError, AppResult};
use crate::settings::ApprovalPolicySettings;

/// The pending-request view of a runtime request.
pub fn pending_view(r: &HumanRequest) -> PendingRequest {
    let mut p = PendingRequest {
        id: r.id.clone(),
        kind: RequestKind::Approval,
        tool: None,
        target: None,
        tier: None,
        reasons: vec![],
        text: None,
        task: r.task.clone(),
        expires_at_ms: r.expires_at_ms,
    };
    match &r.kind {
        HumanRequestKind::Approval {
            tool,
            target,
            tier,
            reasons,
            ..
        } => {
            p.kind = RequestKind::Approval;
            p.tool = Some(tool.clone());
            p.target = Some(target.clone());
            p.tier = Some(*tier);
            p.reasons = reasons.clone();
        }
        HumanRequestKind::AskUser { question } => {
            p.kind = RequestKind::AskUser;
            p.text = Some(question.clone());
        }
        HumanRequestKind::TakeOver { message } => {
            p.kind = RequestKind::TakeOver;
            p.text = Some(message.clone());
        }
    }
    p
}

/// An answer as the session gets it: an empty rejection note is no note.
fn to_response(a: HumanResponse) -> HumanResponse {
    match a {
        HumanResponse::Reject { note } => HumanResponse::Reject {
            note: note.filter(|n| !n.trim().is_empty()),
        },
        other => other,
    }
}

impl Console {
    /// Requests waiting for a human, on every phone.
    pub fn pending(&self) -> Vec<PendingRequest> {
        self.pending_of(None)
    }

    /// Requests waiting for a human on phone `serial` (a serial or a run id), or on every
    /// phone (`None`).
    pub fn pending_of(&self, serial: Option<&str>) -> Vec<PendingRequest> {
        let sessions = match serial.filter(|s| !s.is_empty()) {
            None => self.phone_sessions(),
            Some(_) => self.session_of(serial).into_iter().collect(),
        };
        sessions
            .iter()
            .flat_map(|p| p.session.pending())
            .map(|r| pending_view(&r))
            .collect()
    }

    /// Answer request `id` (validated by the run's session against the pending id, its expiry
    /// and the answers it takes). Requests are registered before they are announced, so an
    /// answer sent on sight is never refused; an unknown id is refused at once. With several
    /// phones running, the answer goes to the session holding the request (else the session
    /// that knows the id says why it cannot take it, e.g. expired).
    ///
    /// # Errors
    /// `unknown_request`, `expired_request`, `mismatched_response`.
    pub async fn answer(&self, id: &str, answer: HumanResponse) -> AppResult<()> {
        let op = Op::Answer {
            request_id: id.to_string(),
            response: to_response(answer),
        };
        match self.session_holding(id) {
            Some(s) => s
                .submit_as(phoneagent_runtime::Submitter::Person, op)
                .map_err(crate::runs::session_error),
            // No session holds it (any more): the one that knows it says why (expired), else
            // the default session refuses it as unknown.
            None => self
                .phone_sessions()
                .into_iter()
                .map(|p| {
                    p.session
                        .submit_as(phoneagent_runtime::Submitter::Person, op.clone())
                        .map_err(crate::runs::session_error)
                })
                .find(|r| {
                    !matches!(r, Err(e) if e.code == "unknown_request" || e.code == "not_running")
                })
                .unwrap_or_else(|| self.submit_to(None, op)),
        }
        .map(drop)
        .map_err(|e| {
            if e.code == "not_running" {
                AppError::new(
                    "unknown_request",
                    format!("no pending request with id {id}: no task is running"),
                )
            } else {
                e
            }
        })
    }

    /// Notifications follow the run's requests: shown when one is asked (if enabled),
    /// withdrawn when it is resolved.
    pub(crate) fn on_event(&self, session: &Session, env: &EventEnvelope, notifications: bool) {
        match &env.event {
            AgentEvent::HumanRequested {
                request_id,
                request,
                ..
            } if notifications => {
                self.notifier.show(
                    request_id.clone(),
                    request.clone(),
                    session.clone(),
                    self.lang(),
                );
            }
            AgentEvent::HumanResolved { request_id, .. } => {
                self.notifier.withdraw(request_id, self.lang());
            }
            _ => {}
        }
    }

    /// Live approve-for-me state of the running task (SPEC AR7/AR8: reviews and failures left,
    /// breaker counters, recent denials), or `None` when no approve-for-me run is going.
    pub fn approval_status(&self) -> Option<AutoReviewStatus> {
        self.approval_status_of(None)
    }

    /// [`Console::approval_status`] of the run on phone `serial` (a serial or a run id).
    pub fn approval_status_of(&self, serial: Option<&str>) -> Option<AutoReviewStatus> {
        self.session_of(serial)
            .and_then(|p| p.session.auto_review_status())
    }

    /// One-time override of the running approve-for-me task's denial `request_id` (the one the
    /// user clicked; SPEC AR7): the identical call may pass once, within the TTL, and the
    /// reviewer still decides, seeing the grant.
    ///
    /// # Errors
    /// `not_running` without an approve-for-me run; `invalid_input` when the denial is no longer
    /// among the recent ones.
    pub fn grant_override(&self, request_id: &str) -> AppResult<OverrideGrant> {
        self.grant_override_of(None, request_id)
    }

    /// [`Console::grant_override`] on the run of phone `serial` (a serial or a run id).
    ///
    /// # Errors
    /// As [`Console::grant_override`].
    pub fn grant_override_of(
        &self,
        serial: Option<&str>,
        request_id: &str,
    ) -> AppResult<OverrideGrant> {
        match self.submit_to(
            serial,
            Op::GrantOverride {
                request_id: request_id.to_string(),
            },
        )? {
            Ack::Override(g) => Ok(g),
            other => Err(AppError::internal(format!(
                "unexpected acknowledgement {other:?}"
            ))),
        }
    }

    /// Switch the approve-for-me reviewer of the running task off (`true`: requests the policy
    /// sends to the reviewer go to the human instead) or back on (SPEC AR8, the Approvals
    /// tab's switch). `never` rules keep denying either way.
    ///
    /// # Errors
    /// `not_running` without an approve-for-me run.
    pub fn set_auto_review_suspended(&self, suspended: bool) -> AppResult<AutoReviewStatus> {
        self.set_auto_review_suspended_of(None, suspended)
    }

    /// [`Console::set_auto_review_suspended`] on the run of phone `serial` (a serial or a run
    /// id).
    ///
    /// # Errors
    /// As [`Console::set_auto_review_suspended`].
    pub fn set_auto_review_suspended_of(
        &self,
        serial: Option<&str>,
        suspended: bool,
    ) -> AppResult<AutoReviewStatus> {
        match self.submit_to(serial, Op::SetAutoReviewSuspended { suspended })? {
            Ack::AutoReview(s) => Ok(s),
            other => Err(AppError::internal(format!(
                "unexpected acknowledgement {other:?}"
            ))),
        }
    }

    /// The approve-for-me policy runs will use, and where it comes from (SPEC AR2–AR7); with an
    /// invalid `approval-policy.toml` next to the database, the defaults and the problem.
    ///
    /// # Errors
    /// Store errors.
    pub fn approval_policy(&self) -> AppResult<ApprovalPolicySettings> {
        ApprovalPolicySettings::load_for_editing(&self.store, self.config_dir())
    }

    /// Validate and save the approve-for-me policy; used from the next approve-for-me run.
    ///
    /// # Errors
    /// `invalid_input` naming the wrong rule or option.
    pub fn save_approval_policy(&self, config: &AutoReviewConfig) -> AppResult<()> {
        ApprovalPolicySettings::save(&self.store, config)
    }

    /// The approve-for-me ledger of a run (SPEC AR8): one row per approval request, in order,
    /// rebuilt from the run's events.
    ///
    /// # Errors
    /// `invalid_input` for a malformed id; store errors.
    pub fn approval_reviews(&self, id: &str) -> AppResult<Vec<ApprovalReview>> {
        Ok(self.store.approval_reviews(Self::run_uuid(id)?)?)
    }
}
