//! Acting on one planning turn (SPEC A4, F1, F4, M5, P6, S1, S3, S8, S10): the bounded protocol
//! retry, the actions of one answer in order (siblings after a terminal one are skipped), and
//! one action's handling — mask secrets, map coordinates (never clamp), the conversational kinds
//! (note, ask_user, take_over, finish), task guards, a swipe that amounts to a tap, then the
//! gate and the dispatch.

use std::sync::Arc;

use phoneagent_llm::ledger::CallKind;
use phoneagent_protocol::event::{
    DecidedBy, GateOutcome, HumanRequestKind, HumanResponse, RecoveryOutcome,
};
use phoneagent_protocol::{
    Action, ActionKind, AgentEvent, CoordinateSpace, EndReason, ErrorCode, RiskTier, RunStatus,
    ToolStatus,
};

use crate::adapters::{self, Prepared};
use crate::memory::Turn;

use super::{Flow, Obs, Run, screen_gate};

impl Run {
    pub(super) async fn plan_and_act(&mut self, obs: Obs, extra_confirmation: bool) -> Flow {
        let prepared = match self.pending_prepare.take() {
            Some((frame, job)) if frame == Arc::as_ptr(&obs.shot.image) as usize => job
                .await
                .unwrap_or_else(|e| Err(format!("the image preparation task failed: {e}"))),
            _ => adapters::prepare(&obs.shot, &self.agent.parts.actor.profile.image),
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                return Self::end(
                    RunStatus::Failed,
                    ErrorCode::Internal,
                    format!("could not encode the screenshot: {e}"),
                );
            }
        };
        let req = self.build_request(&prepared, extra_confirmation, None);
        self.feedback.clear();
        let resp = match self
            .call_actor(
                req,
                CallKind::Planning,
                (prepared.sent_w, prepared.sent_h),
                &obs,
            )
            .await
        {
            Ok(r) => r,
            Err(f) => return f,
        };
        let mut parsed = self.parse_actor(&resp, &prepared);
        // A4: one bounded same-step protocol retry; the device is not touched until a valid action arrives.
        if let Some(err) = parsed.first_error() {
            self.bus.emit(AgentEvent::ProtocolRejected {
                attempt: 1,
                error_kind: err.kind.clone(),
                message: err.message.clone(),
            });
            let req = self.build_request(&prepared, extra_confirmation, Some(&err.message));
            let resp = match self
                .call_actor(
                    req,
                    CallKind::ProtocolRetry,
                    (prepared.sent_w, prepared.sent_h),
                    &obs,
                )
                .await
            {
                Ok(r) => r,
                Err(f) => return f,
            };
            parsed = self.parse_actor(&resp, &prepared);
            if let Some(err) = parsed.first_error() {
                self.bus.emit(AgentEvent::ProtocolRejected {
                    attempt: 2,
                    error_kind: err.kind.clone(),
                    message: err.message.clone(),
                });
                self.recover(
                    RecoveryOutcome::Replan,
                    ErrorCode::ProtocolError,
                    None,
                    &err.message,
                    false,
                );
                self.memory.push(Turn {
                    step: self.step,
                    action: "(invalid answer)".into(),
                    screen_description: None,
                    reason: None,
                    result: format!("Your answer could not be understood twice: {}", err.message),
                    rejected: true,
                    rejected_count: 1,
                });
                if self.soft_replans > self.cfg().max_soft_replans {
                    return Self::end(
                        RunStatus::Failed,
                        ErrorCode::ProtocolError,
                        "the model keeps answering invalid actions",
                    );
                }
                return Flow::Continue;
            }
        }
        let mut terminal: Option<Flow> = None;
        for item in parsed.actions {
            let (call_id, action) = match item {
                Ok(a) => a,
                Err(_) => continue,
            };
            let tool = action.kind.name().to_string();
            if terminal.is_some() {
                // F1: siblings after an accepted finish / take_over get `skipped`.
                self.bus.emit(AgentEvent::ToolResult {
                    tool,
                    status: ToolStatus::Error,
                    text: "skipped: the run already ended in this round".into(),
                });
                continue;
            }
            if extra_confirmation
                && !matches!(action.kind, ActionKind::Finish { confirm: true, .. })
            {
                self.bus.emit(AgentEvent::ToolResult {
                    tool,
                    status: ToolStatus::Error,
                    text: "not run: only a confirming finish is accepted in the extra confirmation turn".into(),
                });
                continue;
            }
            let _ = call_id;
            match self.handle_action(action, &obs, &prepared).await {
                Flow::Continue => {}
                end => terminal = Some(end),
            }
        }
        terminal.unwrap_or(Flow::Continue)
    }

    async fn handle_action(&mut self, action: Action, obs: &Obs, prepared: &Prepared) -> Flow {
        self.family_image = (prepared.sent_w, prepared.sent_h);
        // SPEC P6: from here on the run sees the placeholder; only the device command gets the
        // real text back (`send`).
        if let ActionKind::Type { text } = &action.kind
            && self.typed_secret(text)
        {
            self.bus.secrets().add(text);
        }
        let action = self.bus.secrets().mask_action(&action);
        // Map coordinates (M5): never clamp.
        let points = match adapters::map_points(
            &action,
            self.contract.unwrap_or(CoordinateSpace::Relative0999),
            prepared,
            &obs.geometry,
        ) {
            Ok(p) => p,
            Err(msg) => {
                self.bus.emit(AgentEvent::ProtocolRejected {
                    attempt: 1,
                    error_kind: "coordinate_out_of_range".into(),
                    message: msg.clone(),
                });
                self.recover(
                    RecoveryOutcome::Replan,
                    ErrorCode::CoordinateOutOfRange,
                    Some(action.kind.name()),
                    &msg,
                    false,
                );
                self.reject_turn(&action, format!("Not executed: {msg}"));
                return Flow::Continue;
            }
        };
        self.bus.emit(AgentEvent::ActionProposed {
            action: action.clone(),
            points: points.clone(),
        });
        if let Some(flow) = self.converse(&action, obs).await {
            return flow;
        }
        if action.kind.touches_device() {
            self.guards.record_attempt();
        }
        // Guards may forbid the call outright (zero touches).
        if let Some(msg) = self.guards.blocks(&action) {
            self.bus.emit(AgentEvent::GateDecision {
                tool: action.kind.name().into(),
                tier: RiskTier::Hard,
                reasons: vec!["guard:compose_message".into()],
                mode: self.cfg().mode,
                outcome: GateOutcome::BlockedByTaskBoundary,
                decided_by: DecidedBy::Rule,
                latency_ms: 0,
                receipt: Some(msg.clone()),
            });
            self.reject_turn(&action, msg);
            return Flow::Continue;
        }
        // What runs is the model's call; what the gate looks at may be the tap it amounts to.
        let (dispatch_action, dispatch_points) = (action.clone(), points.clone());
        // SPEC S10, S3: a swipe Android delivers as a click (within touch slop, or ending
        // inside the element under its start point) is gated exactly as a Tap at its start
        // point — same reading, context, receipts and approval flows — and the swipe itself is
        // dispatched only when the gate lets that tap run. Real scrolls stay ungated.
        let mut pre_read = None;
        let mut swipe_as_tap = false;
        let swipe_start = match &action.kind {
            ActionKind::Swipe { start, .. } if points.len() >= 2 => Some(*start),
            _ => None,
        };
        let (action, points) = match swipe_start {
            Some(start) => {
                let reading = self.read_screen(&action, obs, &points).await;
                if screen_gate::swipe_is_tap(&points, &obs.geometry, reading.as_ref()) {
                    let tap = Action {
                        kind: ActionKind::Tap { element: start },
                        ..action.clone()
                    };
                    pre_read = Some(reading);
                    swipe_as_tap = true;
                    (tap, vec![points[0]])
                } else {
                    (action, points)
                }
            }
            None => (action, points),
        };
        // Safety gate (S1–S7), only for executing tools.
        if action.kind.is_gated()
            && let Some(flow) = self
                .gate(&action, obs, &points, pre_read, swipe_as_tap)
                .await
        {
            return flow;
        }
        // A5 semantics were checked by the parser; now freshness (R3), dispatch, verification.
        self.dispatch_and_verify(dispatch_action, obs, dispatch_points)
            .await
    }

    /// The actions that talk instead of touching the phone (note, ask_user, take_over, finish):
    /// `Some(flow)` when `action` is one of them, `None` for a device action.
    async fn converse(&mut self, action: &Action, obs: &Obs) -> Option<Flow> {
        match &action.kind {
            ActionKind::Note {
                message,
                task_board,
            } => {
                self.memory.notes.push(message.clone());
                if let Some(b) = task_board {
                    self.memory.task_board = b.clone();
                }
                self.bus.emit(AgentEvent::Note {
                    message: message.clone(),
                    task_board: self.memory.task_board.clone(),
                });
                self.ok_turn(action, "noted".into());
                Some(Flow::Continue)
            }
            ActionKind::AskUser { question } => Some(self.ask_user(action, question).await),
            ActionKind::TakeOver { message } => Some(self.take_over(action, message).await),
            ActionKind::Finish { message, confirm } => {
                let (message, confirm) = (message.clone(), *confirm);
                Some(self.finish(action, message, confirm, obs).await)
            }
            _ => None,
        }
    }

    /// `ask_user` (SPEC S1, S8): the question goes to the person in every mode; the answer is
    /// passed back unchanged, a skip tells the model to go on without it.
    async fn ask_user(&mut self, action: &Action, question: &str) -> Flow {
        let resp = self
            .ask_human(
                HumanRequestKind::AskUser {
                    question: question.to_string(),
                },
                String::new(),
            )
            .await;
        if self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        let text = match resp {
            HumanResponse::Answer { text } => text,
            HumanResponse::Reject { note } => note.unwrap_or_else(|| {
                "(the user skipped this question: continue without the answer, or finish \
                 and say what is missing)"
                    .into()
            }),
            other => format!("{other:?}"),
        };
        self.memory
            .human_answers
            .push(format!("Q: {question} A: {text}"));
        self.ok_turn(action, format!("The user answered: {text}"));
        Flow::Continue
    }

    /// `take_over` (SPEC S1, S8): accepted → the run ends `taken_over`; handed back → the run
    /// goes on from the new screen; rejected → an error receipt and the run goes on.
    async fn take_over(&mut self, action: &Action, message: &str) -> Flow {
        let resp = self
            .ask_human(
                HumanRequestKind::TakeOver {
                    message: message.to_string(),
                },
                String::new(),
            )
            .await;
        if self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        match resp {
            HumanResponse::Approve => Self::end(
                RunStatus::TakenOver,
                EndReason::TakeOverAccepted,
                format!("handed to a human: {message}"),
            ),
            HumanResponse::HandBack => {
                self.guards.record_human_operation();
                self.ok_turn(
                    action,
                    "The human operated the phone and handed it back. Look at the new screenshot."
                        .into(),
                );
                Flow::Continue
            }
            _ => {
                self.reject_turn(
                    action,
                    "take_over was rejected by the user: continue the task yourself.".into(),
                );
                Flow::Continue
            }
        }
    }
}
