//! One phone's session (SPEC A7, issue #13): the one front door of the runtime. A front end
//! submits [`Op`]s and follows the session's [`EventEnvelope`] stream — commands in, events
//! out — and keeps no lifecycle state of its own.
//!
//! The [`Session`] owns what front ends used to assemble themselves: the run task, the busy
//! state (one run at a time per phone, R2), the run's cancellation token, its [`PauseHandle`],
//! its approve-for-me [`AutoReviewHandle`] and the [`PendingApprovals`] registry of human
//! requests. A request is registered before its `human_requested` event is sent, and every
//! answer — from a front end's [`Op::Answer`] or from the session's person approver (the
//! terminal) — is validated against the pending id, its expiry and the request kind's
//! `allowed_responses`.
//!
//! Who submits matters (SPEC C4): a [`Submitter::Delegate`] (a program acting for the user, e.g.
//! an MCP client) may submit an op that raises authority only where the user delegated it
//! ([`Delegation`]); it can never answer a gate approval or a take-over, grant an override,
//! switch the approve-for-me reviewer back on, or start a task in a mode the user did not allow.
//!
//! Several sessions run at once, one per phone; sessions sharing one store (one
//! [`RunRecorder`]) keep their runs apart by run id.

use std::sync::{Arc, Mutex};

use phoneagent_device::Device;
use phoneagent_llm::calibration::CalibrationCache;
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AccessMode, EventEnvelope, Op, TaskOptions};
use phoneagent_review::auto::{
    AutoReviewConfig, AutoReviewHandle, AutoReviewStatus, OverrideGrant,
};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::approver::{AnswerError, Approver, HumanRequest, PendingApprovals};
use crate::{
    Agent, AgentConfig, AgentParts, AgentState, ModelRoute, PauseHandle, RunOutcome, RunRecorder,
    RuntimeError, StepOutcome,
};

/// Capacity of a session's event stream; a subscriber that falls further behind gets
/// `RecvError::Lagged` and skips events (the store still has them all).
pub const SESSION_EVENT_CAPACITY: usize = 4096;

/// Largest `max_steps` a task may ask for ([`TaskOptions::max_steps`]).
pub const MAX_TASK_STEPS: u32 = 500;

/// The collaborators of a session: everything a run needs but the task and its mode.
pub struct SessionParts {
    /// The phone (one session per phone).
    pub device: Arc<dyn Device>,
    /// The planner model.
    pub actor: ModelRoute,
    /// The finish verifier model (F2); `None` → verifier skipped (audited).
    pub verifier: Option<ModelRoute>,
    /// The reversibility reviewer model (S7); `None` → fail-closed in reviewer mode.
    pub safety_reviewer: Option<ModelRoute>,
    /// The approve-for-me reviewer model (AR*); used only in that mode, `None` → everything it
    /// would review goes to the person.
    pub auto_reviewer: Option<ModelRoute>,
    /// The approve-for-me policy (AR1), used only in that mode.
    pub auto_review: AutoReviewConfig,
    /// Where history goes (the SQLite store in the product); may be shared by several sessions.
    pub recorder: Arc<dyn RunRecorder>,
    /// Where negotiated coordinate contracts are cached (M4); `None` → per-process memory.
    pub calibration_cache: Option<Arc<dyn CalibrationCache>>,
    /// The gate's own eyes (SPEC S10); `None`: screen reading is off.
    pub screen_reader: Option<Arc<phoneagent_vision::ScreenReader>>,
    /// The person, asked directly for every request (the CLI's terminal prompt, or a policy of
    /// `--on-approval`), alongside the registry that [`Op::Answer`] reaches. Its answer goes
    /// through the same validation; the first valid answer wins. `None`: requests wait in the
    /// registry until answered, cancelled or expired.
    pub person: Option<Arc<dyn Approver>>,
}

/// What a delegate (an MCP client, SPEC C4) may do beyond watching and stopping: set by the
/// person who starts the front end, never by the delegate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    /// The access modes a delegate may start a task in (the person's `--mode`).
    pub modes: Vec<AccessMode>,
    /// The delegate may answer the model's `ask_user` questions (answer or skip).
    pub ask_user: bool,
}

impl Default for Delegation {
    /// Nothing delegated but starting a task in `wary` mode.
    fn default() -> Self {
        Self {
            modes: vec![AccessMode::Wary],
            ask_user: false,
        }
    }
}

/// Who submits an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitter {
    /// The person at the front end (the terminal, the app's window).
    Person,
    /// A program acting for the person (an MCP client): limited by the session's [`Delegation`].
    Delegate,
}

/// Why an op was refused. Each variant has a stable [`SessionError::code`].
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A run is active on this phone (one at a time, R2).
    #[error(
        "a task is already running on this phone (run {run_id}): cancel it or wait for it to end"
    )]
    Busy {
        /// The active run.
        run_id: String,
    },
    /// The op needs an active run and none is going.
    #[error("no task is running on this phone")]
    NotRunning,
    /// No pending request has this id (answered already, withdrawn, or never existed).
    #[error("no pending request with id {0}: it was already answered, withdrawn or never existed")]
    UnknownRequest(String),
    /// The request expired before the answer.
    #[error("request {0} has expired")]
    Expired(String),
    /// The answer's kind is not among the request's `allowed_responses`.
    #[error("a `{given}` answer does not fit request {request_id}: it takes {}", allowed.join(" or "))]
    ResponseNotAllowed {
        /// The request.
        request_id: String,
        /// The kind given ([`HumanResponse::kind_name`]).
        given: String,
        /// What the request takes.
        allowed: Vec<String>,
    },
    /// A delegate tried what only the person may do (SPEC C4).
    #[error("refused: {0}")]
    NotDelegated(String),
    /// The op needs an approve-for-me run.
    #[error("the running task is not in approve-for-me mode")]
    NotApproveForMe,
    /// The op's fields are out of range (the message says which).
    #[error("invalid op: {0}")]
    Invalid(String),
    /// The run could not start (task too long, store error, approve-for-me policy).
    #[error(transparent)]
    Start(#[from] RuntimeError),
}

impl SessionError {
    /// Stable code of the refusal (`busy`, `not_running`, `unknown_request`, `expired`,
    /// `response_not_allowed`, `not_delegated`, `not_approve_for_me`, `invalid_input`,
    /// `task_too_long`, `start_failed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Busy { .. } => "busy",
            Self::NotRunning => "not_running",
            Self::UnknownRequest(_) => "unknown_request",
            Self::Expired(_) => "expired",
            Self::ResponseNotAllowed { .. } => "response_not_allowed",
            Self::NotDelegated(_) => "not_delegated",
            Self::NotApproveForMe => "not_approve_for_me",
            Self::Invalid(_) => "invalid_input",
            Self::Start(RuntimeError::TaskTooLong { .. }) => "task_too_long",
            Self::Start(_) => "start_failed",
        }
    }
}

/// The acknowledgement of an accepted op; its effects follow as events.
#[derive(Debug, Clone, PartialEq)]
pub enum Ack {
    /// [`Op::StartTask`]: the run is recorded and going.
    Started {
        /// Its run id.
        run_id: String,
    },
    /// Cancel, pause, resume or answer took effect.
    Done,
    /// [`Op::GrantOverride`]: the grant.
    Override(OverrideGrant),
    /// [`Op::SetAutoReviewSuspended`]: the reviewer's state after the switch.
    AutoReview(AutoReviewStatus),
}

/// A snapshot of a session for a front end's status view.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionStatus {
    /// The active run, if any.
    pub run_id: Option<String>,
    /// Mode of the active run.
    pub mode: Option<AccessMode>,
    /// The live state of the active run (phase, step).
    pub state: Option<AgentState>,
    /// A pause is requested.
    pub paused: bool,
    /// Requests waiting for an answer, oldest first.
    pub pending: Vec<HumanRequest>,
    /// How the last finished run ended.
    pub last: Option<RunOutcome>,
}

struct Active {
    run_id: String,
    mode: AccessMode,
    agent: Arc<Agent>,
    cancel: CancellationToken,
    pause: PauseHandle,
    auto_review: Option<AutoReviewHandle>,
}

struct Inner {
    parts: SessionParts,
    defaults: AgentConfig,
    delegation: Delegation,
    pending: PendingApprovals,
    tx: broadcast::Sender<EventEnvelope>,
    active: Mutex<Option<Active>>,
    /// The last finished run (`None` before the first one ends).
    ended: watch::Sender<Option<RunOutcome>>,
}

/// One phone's session: see the module docs. A cheap clone; clones share the session.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    /// A session over `parts`, starting every run with `defaults` (mode and limits are
    /// overridden per task by [`Op::StartTask`]), letting delegates do what `delegation` says.
    pub fn new(parts: SessionParts, defaults: AgentConfig, delegation: Delegation) -> Self {
        let (tx, _) = broadcast::channel(SESSION_EVENT_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                parts,
                defaults,
                delegation,
                pending: PendingApprovals::new(),
                tx,
                active: Mutex::new(None),
                ended: watch::channel(None).0,
            }),
        }
    }

    /// Subscribe to the session's events: every event of every run on this phone, in order,
    /// each already committed to the recorder (SPEC T1).
    pub fn subscribe(&self) -> broadcast::Receiver<EventEnvelope> {
        self.inner.tx.subscribe()
    }

    /// What a delegate may do.
    pub fn delegation(&self) -> &Delegation {
        &self.inner.delegation
    }

    /// Submit `op` as the person (see [`Session::submit_as`]).
    ///
    /// # Errors
    /// As [`Session::submit_as`].
    pub fn submit(&self, op: Op) -> Result<Ack, SessionError> {
        self.submit_as(Submitter::Person, op)
    }

    /// Submit `op` as `who`. Must be called within a tokio runtime (a start spawns the run).
    ///
    /// # Errors
    /// [`SessionError::Busy`] starting while a run is active; [`SessionError::NotRunning`] for
    /// a control op without a run; [`SessionError::UnknownRequest`], [`SessionError::Expired`],
    /// [`SessionError::ResponseNotAllowed`] for answers that do not fit a pending request;
    /// [`SessionError::NotDelegated`] when a delegate oversteps; [`SessionError::Invalid`],
    /// [`SessionError::Start`] when the run cannot start; [`SessionError::NotApproveForMe`].
    pub fn submit_as(&self, who: Submitter, op: Op) -> Result<Ack, SessionError> {
        if who == Submitter::Delegate {
            self.check_delegated(&op)?;
        }
        match op {
            Op::StartTask {
                task,
                mode,
                options,
            } => self.start(&task, mode, &options),
            Op::Cancel => {
                let a = self.active_ref(|a| a.cancel.clone())?;
                a.cancel();
                Ok(Ack::Done)
            }
            Op::Pause => {
                self.active_ref(|a| a.pause.clone())?.pause();
                Ok(Ack::Done)
            }
            Op::Resume => {
                self.active_ref(|a| a.pause.clone())?.resume();
                Ok(Ack::Done)
            }
            Op::Answer {
                request_id,
                response,
            } => self.answer(&request_id, response),
            Op::GrantOverride { request_id } => {
                let h = self.auto_review()?;
                h.grant_override_for(&request_id)
                    .map(Ack::Override)
                    .map_err(|e| SessionError::Invalid(e.to_string()))
            }
            Op::SetAutoReviewSuspended { suspended } => {
                let h = self.auto_review()?;
                h.set_suspended(suspended);
                Ok(Ack::AutoReview(h.status()))
            }
        }
    }

    /// Requests waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<HumanRequest> {
        self.inner.pending.pending()
    }

    /// Wait until a request is pending and return it (for front ends and tests).
    pub async fn next_pending(&self) -> HumanRequest {
        self.inner.pending.next_pending().await
    }

    /// Live approve-for-me state of the active run (SPEC AR7/AR8), `None` without an active
    /// approve-for-me run (a front end's status panel; changes go through
    /// [`Op::GrantOverride`] and [`Op::SetAutoReviewSuspended`]).
    pub fn auto_review_status(&self) -> Option<AutoReviewStatus> {
        lock(&self.inner.active)
            .as_ref()
            .and_then(|a| a.auto_review.as_ref().map(AutoReviewHandle::status))
    }

    /// True while a run is active.
    pub fn is_busy(&self) -> bool {
        lock(&self.inner.active).is_some()
    }

    /// A snapshot for a status view.
    pub fn status(&self) -> SessionStatus {
        let active = lock(&self.inner.active);
        SessionStatus {
            run_id: active.as_ref().map(|a| a.run_id.clone()),
            mode: active.as_ref().map(|a| a.mode),
            state: active.as_ref().map(|a| a.agent.state()),
            paused: active.as_ref().is_some_and(|a| a.pause.is_paused()),
            pending: self.inner.pending.pending(),
            last: self.inner.ended.borrow().clone(),
        }
    }

    /// The outcome of run `run_id` once it has ended (at once when it is the last one that
    /// ended); `None` when the session is no longer running it and it is not the last one.
    pub async fn wait(&self, run_id: &str) -> Option<RunOutcome> {
        // Subscribed before looking: an end announced after the look wakes `changed`. The run
        // task clears the active run and announces its outcome under the same lock, so one look
        // sees either the run still active or its outcome.
        let mut rx = self.inner.ended.subscribe();
        loop {
            {
                let active = lock(&self.inner.active);
                if let Some(o) = rx
                    .borrow_and_update()
                    .as_ref()
                    .filter(|o| o.run_id == run_id)
                {
                    return Some(o.clone());
                }
                if active.as_ref().is_none_or(|a| a.run_id != run_id) {
                    return None;
                }
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Start `task` and wait for its end: [`Op::StartTask`] then [`Session::wait`].
    ///
    /// # Errors
    /// As [`Session::submit`] for the start.
    pub async fn run(
        &self,
        task: &str,
        mode: AccessMode,
        options: TaskOptions,
    ) -> Result<RunOutcome, SessionError> {
        let Ack::Started { run_id } = self.submit(Op::StartTask {
            task: task.to_string(),
            mode,
            options,
        })?
        else {
            return Err(SessionError::Invalid(
                "the start was not acknowledged".into(),
            ));
        };
        self.wait(&run_id)
            .await
            .ok_or_else(|| SessionError::Invalid(format!("run {run_id} has no outcome")))
    }

    fn check_delegated(&self, op: &Op) -> Result<(), SessionError> {
        let d = &self.inner.delegation;
        match op {
            Op::StartTask { mode, .. } if !d.modes.contains(mode) => {
                Err(SessionError::NotDelegated(format!(
                    "a delegate may start tasks only in {} mode (the person's choice), not {mode}",
                    d.modes
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(" or ")
                )))
            }
            Op::Answer { request_id, .. } => {
                let kind = self
                    .inner
                    .pending
                    .pending()
                    .into_iter()
                    .find(|r| &r.id == request_id)
                    .map(|r| r.kind)
                    .ok_or_else(|| SessionError::UnknownRequest(request_id.clone()))?;
                match kind {
                    HumanRequestKind::Approval { tool, .. } => {
                        Err(SessionError::NotDelegated(format!(
                            "request {request_id} is the safety gate's approval of `{tool}`: only the person approves or rejects it (an agent can never approve its own irreversible action)"
                        )))
                    }
                    HumanRequestKind::TakeOver { .. } => Err(SessionError::NotDelegated(format!(
                        "request {request_id} hands the phone to the person: only the person answers it"
                    ))),
                    HumanRequestKind::AskUser { .. } if !d.ask_user => {
                        Err(SessionError::NotDelegated(format!(
                            "request {request_id} is a question for the person, who did not delegate answering questions"
                        )))
                    }
                    HumanRequestKind::AskUser { .. } => Ok(()),
                }
            }
            op if op.raises_authority() => Err(SessionError::NotDelegated(format!(
                "`{}` is the person's decision, not a delegate's",
                op.name()
            ))),
            _ => Ok(()),
        }
    }

    fn active_ref<T>(&self, f: impl FnOnce(&Active) -> T) -> Result<T, SessionError> {
        lock(&self.inner.active)
            .as_ref()
            .map(f)
            .ok_or(SessionError::NotRunning)
    }

    fn auto_review(&self) -> Result<AutoReviewHandle, SessionError> {
        self.active_ref(|a| a.auto_review.clone())?
            .ok_or(SessionError::NotApproveForMe)
    }

    fn answer(&self, id: &str, response: HumanResponse) -> Result<Ack, SessionError> {
        let allowed = self
            .inner
            .pending
            .pending()
            .into_iter()
            .find(|r| r.id == id)
            .map(|r| r.kind.allowed_responses());
        self.inner
            .pending
            .answer(id, response.clone())
            .map(|()| Ack::Done)
            .map_err(|e| match e {
                AnswerError::UnknownRequest(id) => SessionError::UnknownRequest(id),
                AnswerError::Expired(id) => SessionError::Expired(id),
                AnswerError::Mismatch(id, _) => SessionError::ResponseNotAllowed {
                    request_id: id,
                    given: response.kind_name().into(),
                    allowed: allowed
                        .unwrap_or_default()
                        .iter()
                        .map(|s| (*s).to_string())
                        .collect(),
                },
            })
    }

    fn config_for(&self, mode: AccessMode, o: &TaskOptions) -> Result<AgentConfig, SessionError> {
        let mut c = self.inner.defaults.clone();
        c.mode = mode;
        if let Some(n) = o.max_steps {
            if !(1..=MAX_TASK_STEPS).contains(&n) {
                return Err(SessionError::Invalid(format!(
                    "max_steps must be between 1 and {MAX_TASK_STEPS}, not {n}"
                )));
            }
            c.max_steps = n;
        }
        if let Some(ms) = o.max_duration_ms {
            if ms == 0 {
                return Err(SessionError::Invalid(
                    "max_duration_ms must be over 0".into(),
                ));
            }
            c.max_duration = std::time::Duration::from_millis(ms);
        }
        if o.token_budget.is_some() {
            c.token_budget = o.token_budget;
        }
        Ok(c)
    }

    fn start(&self, task: &str, mode: AccessMode, o: &TaskOptions) -> Result<Ack, SessionError> {
        let config = self.config_for(mode, o)?;
        let mut active = lock(&self.inner.active);
        if let Some(a) = active.as_ref() {
            return Err(SessionError::Busy {
                run_id: a.run_id.clone(),
            });
        }
        let p = &self.inner.parts;
        let approver = Arc::new(SessionApprover {
            pending: self.inner.pending.clone(),
            person: p.person.clone(),
        });
        let agent = Agent::new(
            AgentParts {
                device: p.device.clone(),
                actor: p.actor.clone(),
                verifier: p.verifier.clone(),
                safety_reviewer: p.safety_reviewer.clone(),
                approver,
                recorder: p.recorder.clone(),
                calibration_cache: p.calibration_cache.clone(),
            },
            config,
        )
        .with_event_sender(self.inner.tx.clone());
        let agent = if mode == AccessMode::ApproveForMe {
            agent
                .with_approve_for_me(p.auto_review.clone(), p.auto_reviewer.clone())
                .map_err(|e| SessionError::Invalid(format!("approve-for-me policy: {e}")))?
        } else {
            agent
        };
        let agent = Arc::new(agent.with_screen_reader(p.screen_reader.clone()));
        let cancel = CancellationToken::new();
        let mut steps = agent.start_steps(task, cancel.clone())?;
        let run_id = steps.run_id();
        *active = Some(Active {
            run_id: run_id.clone(),
            mode,
            agent: agent.clone(),
            cancel,
            pause: agent.pause_handle(),
            auto_review: (mode == AccessMode::ApproveForMe).then(|| agent.approve_for_me_handle()),
        });
        drop(active);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let outcome = loop {
                match steps.step().await {
                    Ok(StepOutcome::Continue(_)) => {}
                    Ok(StepOutcome::Finished(o)) => break Ok(o),
                    Err(e) => break Err(e),
                }
            };
            let outcome = outcome.unwrap_or_else(|e| RunOutcome {
                run_id: steps.run_id(),
                status: phoneagent_protocol::RunStatus::Failed,
                termination_code: phoneagent_protocol::ErrorCode::Store.into(),
                message: e.to_string(),
                steps: 0,
                duration_ms: 0,
            });
            drop(steps);
            drop(agent);
            // Free the phone and announce the end in one step: a waiter woken by the outcome may
            // start the next task at once, and `wait` never sees neither.
            let mut active = lock(&inner.active);
            active.take();
            inner.ended.send_replace(Some(outcome));
        });
        Ok(Ack::Started { run_id })
    }
}

/// The approver a session's agents use: the registry, and the person (when there is one)
/// asked alongside it, whose answer goes through the registry's validation.
struct SessionApprover {
    pending: PendingApprovals,
    person: Option<Arc<dyn Approver>>,
}

#[async_trait::async_trait]
impl Approver for SessionApprover {
    fn register(&self, request: &HumanRequest) {
        self.pending.register(request);
    }

    async fn ask(&self, request: &HumanRequest, cancel: &CancellationToken) -> HumanResponse {
        let Some(person) = self.person.clone() else {
            return self.pending.ask(request, cancel).await;
        };
        let asked = cancel.child_token();
        let person_answers = async {
            let answer = person.ask(request, &asked).await;
            if !asked.is_cancelled()
                && let Err(e) = self.pending.answer(&request.id, answer)
            {
                tracing::warn!(request = %request.id, error = %e, "the person's answer was refused");
            }
            // The registry's wait below ends the select.
            std::future::pending::<()>().await
        };
        // `biased`: the registry's wait is polled first, so it holds the request's receiver
        // before the person (a policy answers at once) can answer it.
        let out = tokio::select! {
            biased;
            out = self.pending.ask(request, cancel) => out,
            () = person_answers => HumanResponse::Reject { note: Some("no answer".into()) },
        };
        // Answered elsewhere (or withdrawn): the person's prompt is no longer needed.
        asked.cancel();
        out
    }
}
