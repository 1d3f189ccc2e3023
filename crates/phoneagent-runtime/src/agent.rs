//! The [`Agent`] and its loop (SPEC R1–R7, F1–F3, S8, D6).
//!
//! One loop step: observe → (negotiate contract) → build the pure-vision context → model →
//! parse/validate/map (one bounded protocol retry) → safety gate / approvals → freshness re-check
//! → dispatch → re-observe and compare pixels → verify / recover → on finish: acceptance.
//! The [`AgentEvent`] stream is the one audit history; `AgentState` is the one live phase.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phoneagent_device::{Device, DeviceError, KeyCode, Screenshot};
use phoneagent_llm::calibration::CalibrationCache;
use phoneagent_llm::config::{ActionProtocol, ModelFallback, Profile, ResolvedModel, Role};
use phoneagent_llm::ledger::{Budgets, CallKind, TokenLedger};
use phoneagent_llm::{ChatMessage, ChatRequest, ChatResponse, ContentPart, LlmError, ModelClient};
use phoneagent_protocol::event::{
    DecidedBy, GateOutcome, HumanRequestKind, HumanResponse, MappedPoint, RecoveryOutcome,
    TrajectoryPolicy, VerificationFacts,
};
use phoneagent_protocol::{
    AccessMode, Action, ActionKind, AgentEvent, CoordinateSpace, DevicePoint, ErrorCode,
    EventEnvelope, Phase, RiskTier, RunStatus, ScreenGeometry, TaskItem,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::adapters::{self, GateVerdict, Prepared};
use crate::approver::{Approver, HumanRequest};
use crate::config::{AgentConfig, FinishVerifyMode};
use crate::control::PauseHandle;
use crate::events::{EventBus, RunMeta, RunRecorder};
use crate::guards::TaskGuards;
use crate::memory::{Memory, Turn, estimate_tokens, sanitize_text, summarize_action};
use crate::pixels::{Rect, changed_fraction};
use crate::{RuntimeError, now_ms};
use phoneagent_review::{FinishVerifier, ReversibilityReviewer, ReviewVerdict, VerifierVerdict};

mod approve_for_me;
mod screen_gate;

/// A model endpoint bound to a role: the client and the profile it was built from (protocol,
/// coordinate space, image sizing, prices). Never holds the key outside the client.
#[derive(Clone)]
pub struct ModelRoute {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// Profile name (for events).
    pub profile_name: String,
    /// The profile.
    pub profile: Profile,
    /// Set when the role fell back along the chain (SPEC M2); recorded as `model_fallback`.
    pub fallback: Option<ModelFallback>,
}

impl ModelRoute {
    /// A route over an HTTP client for a resolved role.
    pub fn from_resolved(m: &ResolvedModel) -> Result<Self, LlmError> {
        Ok(Self {
            client: Arc::new(m.client()?),
            profile_name: m.profile_name.clone(),
            profile: m.profile.clone(),
            fallback: m.fallback.clone(),
        })
    }

    /// A route over an HTTP client to `base_url` serving `model` with no API key, in a fixed
    /// coordinate `space` (the demo's scripted model server, SPEC C1); `profile_name` is what
    /// events show.
    ///
    /// # Errors
    /// The client cannot be built (malformed `base_url`).
    pub fn unkeyed(
        base_url: &str,
        model: &str,
        space: CoordinateSpace,
        profile_name: impl Into<String>,
    ) -> Result<Self, LlmError> {
        let mut profile = Profile::new(base_url, model);
        profile.coordinate_space = space;
        Ok(Self {
            client: Arc::new(phoneagent_llm::ChatClient::new(
                phoneagent_llm::ClientConfig::new(base_url, model),
            )?),
            profile_name: profile_name.into(),
            profile,
            fallback: None,
        })
    }
}

/// The live state of the agent (SPEC R2): one owner of the phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentState {
    /// Current phase.
    pub phase: Phase,
    /// Current run id, if a run is active or was the last one.
    pub run_id: Option<String>,
    /// Current step.
    pub step: u32,
    /// Latest screen sequence number.
    pub screen_seq: u64,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunOutcome {
    /// Run id.
    pub run_id: String,
    /// Terminal status.
    pub status: RunStatus,
    /// Termination code (`finish_accepted`, `max_steps`, `cancelled`, …).
    pub termination_code: String,
    /// The model's final message or the error.
    pub message: String,
    /// Steps taken.
    pub steps: u32,
    /// Duration ms.
    pub duration_ms: u64,
}

/// Collaborators of an agent.
pub struct AgentParts {
    /// The phone.
    pub device: Arc<dyn Device>,
    /// The planner model.
    pub actor: ModelRoute,
    /// The finish verifier model (F2); `None` → verifier skipped (fail-open, audited).
    pub verifier: Option<ModelRoute>,
    /// The reversibility reviewer model (S7); `None` → fail-closed in reviewer mode.
    pub safety_reviewer: Option<ModelRoute>,
    /// Human interrupts.
    pub approver: Arc<dyn Approver>,
    /// Where history goes.
    pub recorder: Arc<dyn RunRecorder>,
    /// Where negotiated coordinate contracts are cached (M4); `None` → per-process memory.
    pub calibration_cache: Option<Arc<dyn CalibrationCache>>,
}

/// The agent: one task at a time over one device.
pub struct Agent {
    shared: Arc<Shared>,
}

/// What a run shares with its agent (a run may outlive a borrow of the agent: [`StepSession`]).
struct Shared {
    parts: AgentParts,
    config: AgentConfig,
    tx: broadcast::Sender<EventEnvelope>,
    state: Arc<Mutex<AgentState>>,
    busy: AtomicBool,
    approve_for_me: approve_for_me::ApproveForMe,
    pause: PauseHandle,
    /// The gate's own eyes (SPEC S10); `None`: screen reading is off.
    screen_reader: Option<Arc<phoneagent_vision::ScreenReader>>,
}

impl Shared {
    fn state(&self) -> AgentState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Agent {
    /// A new agent.
    pub fn new(parts: AgentParts, config: AgentConfig) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Self {
            shared: Arc::new(Shared {
                parts,
                config,
                tx,
                state: Arc::new(Mutex::new(AgentState {
                    phase: Phase::Idle,
                    run_id: None,
                    step: 0,
                    screen_seq: 0,
                })),
                busy: AtomicBool::new(false),
                approve_for_me: approve_for_me::ApproveForMe::unconfigured(),
                pause: PauseHandle::new(),
                screen_reader: None,
            }),
        }
    }

    /// Broadcast this agent's events on `tx` instead of the agent's own channel: a
    /// [`crate::Session`] keeps one stream across the agents of its runs. Call before a run
    /// starts (like the other `with_*` setters); a run already holding the agent keeps the old
    /// channel.
    pub fn with_event_sender(mut self, tx: broadcast::Sender<EventEnvelope>) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.tx = tx,
            None => tracing::warn!("event sender not set: a run holds the agent"),
        }
        self
    }

    /// Subscribe to the live event stream (every event of every run, in order).
    pub fn subscribe(&self) -> broadcast::Receiver<EventEnvelope> {
        self.shared.tx.subscribe()
    }

    /// A snapshot of the live state.
    pub fn state(&self) -> AgentState {
        self.shared.state()
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.shared.config
    }

    /// The pause/resume switch of this agent: a cheap clone for a front end's Pause button
    /// (see [`PauseHandle`]). A pause left on when a run ends is cleared, so it never blocks the
    /// next run.
    pub fn pause_handle(&self) -> PauseHandle {
        self.shared.pause.clone()
    }

    /// Pause the current run before its next device command (see [`PauseHandle::pause`]).
    pub fn pause(&self) {
        self.shared.pause.pause();
    }

    /// Resume a paused run.
    pub fn resume(&self) {
        self.shared.pause.resume();
    }

    /// Run `task` to a terminal state. Refuses when a task is already running (R2).
    ///
    /// Errors only for setup problems before the run starts (busy, recorder, a task over
    /// `max_task_chars`); everything that happens during the run ends in a [`RunOutcome`] with
    /// its status and code.
    pub async fn run(
        &self,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RuntimeError> {
        crate::check_task_size(task, self.shared.config.max_task_chars)?;
        if self.shared.busy.swap(true, Ordering::SeqCst) {
            return Err(RuntimeError::Busy);
        }
        let result = match Run::open(self.shared.clone(), task, cancel) {
            Ok(mut run) => {
                let flow = run.main_loop().await;
                let outcome = run.conclude(flow);
                run.close(outcome).await
            }
            Err(e) => Err(e),
        };
        self.shared.busy.store(false, Ordering::SeqCst);
        result
    }

    /// Start `task` for stepping (R2): the returned session runs one observe → plan → act →
    /// verify turn per [`StepSession::step`], with the same goal, limits (max steps, max
    /// duration, token budget), cancellation and terminal semantics as [`Agent::run`] — a
    /// `run` is exactly a loop of steps. The goal is fixed for the session's lifetime.
    ///
    /// Refuses with [`RuntimeError::Busy`] while another run or session is active; errors with
    /// [`RuntimeError::Store`] when the run cannot be recorded. The session owns what it needs,
    /// so a front end can keep it across UI events.
    pub fn start_steps(
        &self,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<StepSession, RuntimeError> {
        crate::check_task_size(task, self.shared.config.max_task_chars)?;
        if self.shared.busy.swap(true, Ordering::SeqCst) {
            return Err(RuntimeError::Busy);
        }
        match Run::open(self.shared.clone(), task, cancel) {
            Ok(run) => Ok(StepSession {
                run: Some(run),
                outcome: None,
            }),
            Err(e) => {
                self.shared.busy.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }
}

/// What one [`StepSession::step`] led to.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The run goes on; the agent is back in `observing` (R2) with this state.
    Continue(AgentState),
    /// The run reached a terminal state (it is recorded and closed).
    Finished(RunOutcome),
}

/// A run driven one step at a time (see [`Agent::start_steps`]).
///
/// Dropping an unfinished session cancels its run: it is recorded as `cancelled` and the IME is
/// restored in the background (when a tokio runtime is available).
pub struct StepSession {
    run: Option<Run>,
    outcome: Option<RunOutcome>,
}

impl StepSession {
    /// Run id of this session's run.
    pub fn run_id(&self) -> String {
        match (&self.run, &self.outcome) {
            (_, Some(o)) => o.run_id.clone(),
            (Some(r), None) => r.bus.run_id().to_string(),
            (None, None) => String::new(),
        }
    }

    /// One observe → plan → act → verify turn. After the run finished, returns its outcome
    /// again. Errors only when the end of the run cannot be recorded.
    pub async fn step(&mut self) -> Result<StepOutcome, RuntimeError> {
        if let Some(o) = &self.outcome {
            return Ok(StepOutcome::Finished(o.clone()));
        }
        let Some(run) = self.run.as_mut() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        match run.step_once().await {
            Flow::Continue => Ok(StepOutcome::Continue(run.agent.state())),
            end => {
                let outcome = run.conclude(end);
                self.finish(outcome).await
            }
        }
    }

    /// Cancel the run (R7): it ends `cancelled` without another device command.
    pub async fn cancel(&mut self) -> Result<RunOutcome, RuntimeError> {
        if let Some(o) = &self.outcome {
            return Ok(o.clone());
        }
        let Some(run) = self.run.as_mut() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        run.cancel.cancel();
        let outcome = run.conclude(run.cancelled_flow());
        match self.finish(outcome).await? {
            StepOutcome::Finished(o) => Ok(o),
            StepOutcome::Continue(_) => Err(RuntimeError::Store("run did not end".into())),
        }
    }

    async fn finish(&mut self, outcome: RunOutcome) -> Result<StepOutcome, RuntimeError> {
        let Some(run) = self.run.take() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        let shared = run.agent.clone();
        let result = run.close(outcome).await;
        shared.busy.store(false, Ordering::SeqCst);
        let outcome = result?;
        self.outcome = Some(outcome.clone());
        Ok(StepOutcome::Finished(outcome))
    }
}

impl Drop for StepSession {
    fn drop(&mut self) {
        let Some(mut run) = self.run.take() else {
            return;
        };
        run.cancel.cancel();
        let outcome = run.conclude(run.cancelled_flow());
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let shared = run.agent.clone();
                    let _ = run.close(outcome).await;
                    shared.busy.store(false, Ordering::SeqCst);
                });
            }
            Err(_) => {
                let shared = run.agent.clone();
                if let Err(e) = run.close_without_device(&outcome) {
                    tracing::error!(error = %e, "could not record the end of a dropped step session");
                }
                shared.busy.store(false, Ordering::SeqCst);
            }
        }
    }
}

/// A screenshot as the runtime uses it.
#[derive(Clone)]
struct Obs {
    shot: Screenshot,
    seq: u64,
    geometry: ScreenGeometry,
    /// The whole-frame changed fraction against the frame observed before this one (address
    /// of that frame, fraction); `None` for the first frame. Lets verification reuse the diff.
    change_from_previous: Option<(usize, f64)>,
}

/// The review package of a first-stage finish (F1).
#[derive(Debug, Clone)]
struct ReviewState {
    screen_seq: u64,
    board: Vec<TaskItem>,
    goal: String,
}

/// What handling one action led to.
enum Flow {
    /// Go on with the next action / step.
    Continue,
    /// The run is over.
    End(RunStatus, String, String),
}

/// Size of a model answer in bytes: visible text, reasoning and tool call arguments.
fn answer_bytes(r: &ChatResponse) -> usize {
    r.content.len()
        + r.reasoning.as_ref().map_or(0, String::len)
        + r.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// Split an answer over the size limit into what is recorded (its first
/// [`crate::ANSWER_HEAD_BYTES`] and a note) and what the parser sees (only the note: nothing
/// in it parses as an action, so the model is asked again, A4).
fn over_long_answer(
    resp: ChatResponse,
    size: usize,
    limit: usize,
) -> (ChatResponse, ChatResponse, adapters::Rejection) {
    let note = format!(
        "[answer_too_long: {size} bytes, over the limit of {limit} bytes; answer with one short action]"
    );
    let rejection = adapters::Rejection {
        kind: "answer_too_long".into(),
        message: format!(
            "Your answer was {size} bytes, over the limit of {limit} bytes, and was not read. \
             Think briefly and answer with one action."
        ),
    };
    let whole = match &resp.reasoning {
        Some(r) => format!("<think>{r}</think>{}", resp.content),
        None => resp.content.clone(),
    };
    let mut cut = crate::ANSWER_HEAD_BYTES.min(whole.len());
    while !whole.is_char_boundary(cut) {
        cut -= 1;
    }
    let recorded = ChatResponse {
        content: format!("{}… {note}", &whole[..cut]),
        reasoning: None,
        tool_calls: Vec::new(),
        ..resp.clone()
    };
    let refused = ChatResponse {
        content: note,
        reasoning: None,
        tool_calls: Vec::new(),
        ..resp
    };
    (recorded, refused, rejection)
}

/// The approval request put to a person for `action` (SPEC S8, S14): the gate's tier,
/// reasons, redacted target and its own screen reading; the model's reason redacted and
/// labelled as the model's.
fn approval_request(
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

/// Signature of a dispatched action for the repeat guard.
#[derive(Debug, Clone, PartialEq)]
struct Signature(String);

struct Run {
    agent: Arc<Shared>,
    task: String,
    bus: EventBus,
    cancel: CancellationToken,
    started: Instant,
    /// Time spent paused (excluded from the wall-time limit).
    paused_for: Duration,
    step: u32,
    memory: Memory,
    guards: TaskGuards,
    contract: Option<CoordinateSpace>,
    screen_seq: u64,
    ledger: TokenLedger,
    hard_failures: u32,
    soft_replans: u32,
    review: Option<ReviewState>,
    verifier_rejections: u32,
    extra_turn_used: bool,
    last_sig: Option<(Signature, u32)>,
    unchanged_streak: u32,
    loop_replans: u32,
    /// Feedback for the next planning turn (results of this step's actions).
    feedback: Vec<String>,
    /// Recent screenshots (hash, image) for the verifier's tail.
    tail: Vec<Obs>,
    /// The model image of the last planning or verification frame, prepared on a blocking
    /// thread while the run goes on (geometry, storing, events, the next screenshot): (address
    /// of the frame, the job). The job holds the frame, so an equal address is the same frame.
    pending_prepare: Option<(usize, tokio::task::JoinHandle<Result<Prepared, String>>)>,
    /// The last captured frame, for the screen sequence number.
    last_frame: Option<Arc<image::RgbaImage>>,
    /// Issue #12: the last verification frame and its stored hash, reused as the next planning
    /// frame when nothing happened in between (no dispatch, capture, pause, human request or
    /// device error: each clears it). Never a blocked frame.
    plan_reuse: Option<(Obs, String)>,
    /// The capture and input paths last recorded (`device_paths` event).
    device_paths: Option<(String, String)>,
    /// The last touch sent to the phone focused a credential field (its target read as a
    /// password / PIN / code field): the next `type_text` is a secret and meets the
    /// password-field rule of the gate (SPEC S3, P6).
    credential_field_focused: bool,
    /// Where the last touch sent to the phone landed (device px): the focused field a
    /// `type_text` types into, read by the screen reader (SPEC S10, P6).
    last_touch_point: Option<(u32, u32)>,
    /// The field reading made while registering an answer's secrets (SPEC P6): (address of the
    /// planning frame, point, reading), reused by the gate's read of the same `type_text` so
    /// the field is read once.
    field_read: Option<(usize, (u32, u32), phoneagent_protocol::ScreenReading)>,
    /// The last actor answer was over the size limit: its rejection, taken by the parse.
    refused_answer: Option<adapters::Rejection>,
    /// Size of the image the current action was planned on (SPEC M7: family renderings).
    family_image: (u32, u32),
}

impl Run {
    /// Record the run's start and emit its opening events (the caller holds the busy flag).
    fn open(
        agent: Arc<Shared>,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<Self, RuntimeError> {
        let run_id = uuid::Uuid::new_v4().to_string();
        let bus = EventBus::new(
            run_id.clone(),
            agent.parts.recorder.clone(),
            agent.tx.clone(),
        );
        // SPEC P6: credentials the task spells out are secrets before anything is recorded —
        // the run row, `run_started`, the prompts and the exports all carry the placeholder.
        for secret in crate::secrets::task_secrets(task) {
            bus.secrets().add(&secret);
        }
        let task = &bus.secrets().mask(task);
        let meta = RunMeta {
            run_id: run_id.clone(),
            task: task.to_string(),
            serial: agent.parts.device.serial().to_string(),
            profile: agent.parts.actor.profile_name.clone(),
            model: agent.parts.actor.profile.model.clone(),
            mode: agent.config.mode.as_str().to_string(),
            started_ms: now_ms(),
            demo: agent.config.demo,
        };
        agent
            .parts
            .recorder
            .begin_run(&meta)
            .map_err(RuntimeError::Store)?;
        {
            let mut s = agent.state.lock().unwrap_or_else(|p| p.into_inner());
            *s = AgentState {
                phase: Phase::Idle,
                run_id: Some(run_id),
                step: 0,
                screen_seq: 0,
            };
        }
        let mut run = Run::new(agent, task, bus, cancel);
        run.start_events();
        Ok(run)
    }

    /// End the run: restore the IME (D4, every exit path), emit `run_finished`, close the record.
    async fn close(mut self, outcome: RunOutcome) -> Result<RunOutcome, RuntimeError> {
        if let Err(e) = self.agent.parts.device.restore_ime().await {
            self.bus.emit(AgentEvent::Warning {
                code: "ime_restore_failed".into(),
                message: e.to_string(),
            });
        }
        self.close_without_device(&outcome)?;
        Ok(outcome)
    }

    /// The recording half of [`Run::close`] (also used when no async runtime is left).
    fn close_without_device(&mut self, outcome: &RunOutcome) -> Result<(), RuntimeError> {
        // A pause must not outlive its run.
        self.agent.pause.resume();
        let summary = serde_json::json!({
            "steps": outcome.steps,
            "message": outcome.message,
            "tokens": self.totals(),
            "hard_failures": self.hard_failures,
            "soft_replans": self.soft_replans,
        });
        self.bus.emit(AgentEvent::RunFinished {
            status: outcome.status,
            termination_code: outcome.termination_code.clone(),
            message: outcome.message.clone(),
            steps: outcome.steps,
            duration_ms: outcome.duration_ms,
            tokens: self.totals(),
            hard_failures: self.hard_failures,
            soft_replans: self.soft_replans,
        });
        self.agent
            .parts
            .recorder
            .end_run(
                self.bus.run_id(),
                outcome.status,
                &outcome.termination_code,
                &summary,
            )
            .map_err(RuntimeError::Store)
    }

    fn new(agent: Arc<Shared>, task: &str, bus: EventBus, cancel: CancellationToken) -> Self {
        let budgets = Budgets {
            run_tokens: agent.config.token_budget,
            input_tokens: agent.config.input_token_budget,
        };
        Self {
            agent,
            task: task.to_string(),
            bus,
            cancel,
            started: Instant::now(),
            paused_for: Duration::ZERO,
            step: 0,
            memory: Memory::new(task),
            guards: TaskGuards::from_task(task),
            contract: None,
            screen_seq: 0,
            ledger: TokenLedger::new(budgets),
            hard_failures: 0,
            soft_replans: 0,
            review: None,
            verifier_rejections: 0,
            extra_turn_used: false,
            last_sig: None,
            unchanged_streak: 0,
            loop_replans: 0,
            feedback: Vec::new(),
            tail: Vec::new(),
            pending_prepare: None,
            last_frame: None,
            plan_reuse: None,
            device_paths: None,
            credential_field_focused: false,
            field_read: None,
            refused_answer: None,
            last_touch_point: None,
            family_image: (1080, 2400),
        }
    }

    /// Run totals from the ledger (M3).
    fn totals(&self) -> phoneagent_protocol::event::TokenTotals {
        let t = self.ledger.summary().total;
        phoneagent_protocol::event::TokenTotals {
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            cost_usd: t.cost_usd,
            calls: t.calls,
        }
    }

    fn protocol(&self) -> ActionProtocol {
        self.agent.parts.actor.profile.protocol
    }

    /// The actor profile's model family adapter (SPEC M7); `None` for `generic`.
    fn family(&self) -> Option<phoneagent_protocol::family::FamilyAdapter> {
        self.agent.parts.actor.profile.family_adapter()
    }

    /// SPEC M7, S5–S6: a receipt to the model ends with how to confirm in its family's grammar.
    fn family_receipt(&self, action: &Action, receipt: String) -> String {
        match self.family() {
            Some(ad) => format!(
                "{receipt}\n{}",
                ad.confirm_instruction(action, self.family_image)
            ),
            None => receipt,
        }
    }

    fn cfg(&self) -> &AgentConfig {
        &self.agent.config
    }

    fn device(&self) -> &dyn Device {
        self.agent.parts.device.as_ref()
    }

    fn set_phase(&self, phase: Phase) {
        {
            let mut s = self.agent.state.lock().unwrap_or_else(|p| p.into_inner());
            let unchanged = s.phase == phase;
            s.phase = phase;
            s.step = self.step;
            s.screen_seq = self.screen_seq;
            if unchanged {
                // A step that ended in `observing` (R2) flows into the next step's observation.
                return;
            }
        }
        self.bus.emit(AgentEvent::Phase { phase });
    }

    fn outcome(&self, status: RunStatus, code: &str, message: String) -> RunOutcome {
        RunOutcome {
            run_id: self.bus_run_id(),
            status,
            termination_code: code.to_string(),
            message,
            steps: self.step,
            duration_ms: self.started.elapsed().as_millis() as u64,
        }
    }

    fn bus_run_id(&self) -> String {
        self.agent.state().run_id.unwrap_or_default()
    }

    /// `run_started`, fallbacks and active guards: the opening events of every run.
    fn start_events(&mut self) {
        let cfg = self.cfg().clone();
        let parts = &self.agent.parts;
        let actor = &parts.actor;
        self.bus.emit(AgentEvent::RunStarted {
            task: self.task.clone(),
            serial: self.device().serial().to_string(),
            profile: actor.profile_name.clone(),
            model: actor.profile.model.clone(),
            base_url: actor.profile.base_url.clone(),
            protocol: actor.profile.protocol.as_str().into(),
            mode: cfg.mode,
            max_steps: cfg.max_steps,
            max_duration_ms: cfg.max_duration.as_millis() as u64,
            policy: TrajectoryPolicy::pure_vision(cfg.app_launcher),
            demo: cfg.demo,
        });
        for route in [
            Some(&parts.actor),
            parts.verifier.as_ref(),
            parts.safety_reviewer.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(fb) = &route.fallback {
                self.bus.emit(AgentEvent::ModelFallback {
                    role: fb.role.as_str().into(),
                    requested: fb.from_profile.clone(),
                    used: fb.to_profile.clone(),
                    reason: fb.reason.clone(),
                });
            }
        }
        for g in self.guards.active() {
            self.bus.emit(AgentEvent::GuardActive {
                guard: g.to_string(),
            });
        }
    }

    /// The terminal phase and outcome of a finished loop.
    fn conclude(&mut self, flow: Flow) -> RunOutcome {
        let (status, code, message) = match flow {
            Flow::End(s, c, m) => (s, c, m),
            Flow::Continue => (
                RunStatus::Failed,
                "internal".to_string(),
                "loop ended unexpectedly".to_string(),
            ),
        };
        let phase = match status {
            RunStatus::Succeeded => Phase::Succeeded,
            RunStatus::Cancelled => Phase::Cancelled,
            RunStatus::TakenOver => Phase::TakenOver,
            _ => Phase::Failed,
        };
        self.set_phase(phase);
        self.outcome(status, &code, message)
    }

    fn end(status: RunStatus, code: &str, message: impl Into<String>) -> Flow {
        Flow::End(status, code.to_string(), message.into())
    }

    fn cancelled_flow(&self) -> Flow {
        Self::end(RunStatus::Cancelled, "cancelled", "cancelled by the user")
    }

    fn limits_reached(&self) -> Option<Flow> {
        if self.cancel.is_cancelled() {
            return Some(self.cancelled_flow());
        }
        if let Some(e) = self.bus.take_write_error() {
            return Some(Self::end(
                RunStatus::Failed,
                "store",
                format!("could not record the run: {e}"),
            ));
        }
        if self.step >= self.cfg().max_steps {
            return Some(Self::end(
                RunStatus::Failed,
                "max_steps",
                format!(
                    "stopped after the maximum of {} steps without an accepted finish",
                    self.cfg().max_steps
                ),
            ));
        }
        if self.started.elapsed().saturating_sub(self.paused_for) >= self.cfg().max_duration {
            return Some(Self::end(
                RunStatus::Failed,
                "max_duration",
                format!(
                    "stopped after the maximum run time of {} s",
                    self.cfg().max_duration.as_secs()
                ),
            ));
        }
        None
    }

    fn budget_exhausted(&self) -> bool {
        self.ledger.exhausted()
    }

    async fn main_loop(&mut self) -> Flow {
        loop {
            match self.step_once().await {
                Flow::Continue => {}
                end => return end,
            }
        }
    }

    /// One observe → plan → act → verify turn (R1): the unit of both `run` and `step`. A
    /// recoverable end of the turn leaves the agent in `observing` (R2).
    async fn step_once(&mut self) -> Flow {
        let flow = self.turn().await;
        if matches!(flow, Flow::Continue) {
            self.set_phase(Phase::Observing);
        }
        flow
    }

    /// Record the capture and input paths when they are new or changed (SPEC D8, D9): a stream
    /// that died mid-run shows up as the switch to `raw`.
    async fn note_device_paths(&mut self) {
        let Some((capture, input, note)) = self.device().paths().await else {
            return;
        };
        let now = (capture.clone(), input.clone());
        if self.device_paths.as_ref() != Some(&now) {
            self.device_paths = Some(now);
            self.bus.emit(AgentEvent::DevicePaths {
                capture,
                input,
                note,
            });
        }
    }

    async fn turn(&mut self) -> Flow {
        if let Some(f) = self.limits_reached() {
            return f;
        }
        self.note_device_paths().await;
        let extra_confirmation = if self.budget_exhausted() {
            // F3: one real confirmation turn bound to a valid review package, at most once.
            let valid = self.review.as_ref().is_some_and(|r| {
                r.screen_seq == self.screen_seq
                    && r.goal == self.task
                    && board_closed(&r.board)
                    && r.board == self.memory.task_board
            });
            if valid && !self.extra_turn_used && self.verifier_rejections == 0 {
                self.extra_turn_used = true;
                true
            } else {
                return Self::end(
                    RunStatus::Failed,
                    "budget_exhausted",
                    "the run's token budget is exhausted".to_string(),
                );
            }
        } else {
            false
        };
        self.step += 1;
        self.bus.set_step(self.step);
        let obs = match self.observe("plan").await {
            Ok(o) => o,
            Err(f) => return f,
        };
        if self.contract.is_none() {
            match self.negotiate_contract(&obs).await {
                Ok(space) => self.contract = Some(space),
                Err(f) => return f,
            }
        }
        match self.plan_and_act(obs, extra_confirmation).await {
            Flow::Continue => {}
            end => return end,
        }
        if extra_confirmation {
            return Self::end(
                RunStatus::Failed,
                "budget_exhausted",
                "the token budget is exhausted and the extra confirmation turn did not finish the task",
            );
        }
        Flow::Continue
    }

    /// Wait here while the agent is paused (before any device command). `Err` = cancelled.
    async fn pause_point(&mut self) -> Result<(), Flow> {
        let pause = self.agent.pause.clone();
        if !pause.is_paused() {
            return Ok(());
        }
        self.plan_reuse = None;
        let before = self.agent.state().phase;
        self.set_phase(Phase::Paused);
        let waited = pause.wait_resumed(&self.cancel).await;
        match waited {
            Some(d) => {
                self.paused_for += d;
                self.set_phase(before);
                Ok(())
            }
            None => Err(self.cancelled_flow()),
        }
    }

    /// Observe, handling device loss (D6) and blocked frames (D3).
    async fn observe(&mut self, purpose: &str) -> Result<Obs, Flow> {
        loop {
            self.set_phase(Phase::Observing);
            if self.cancel.is_cancelled() {
                return Err(self.cancelled_flow());
            }
            self.pause_point().await?;
            if purpose == "plan"
                && let Some((obs, hash)) = self.plan_reuse.take()
            {
                // The verification frame of the step before, taken after its settle: the same
                // screen a new capture would show now, without another 1.5 s `screencap`.
                self.emit_observation(&obs, hash, 0, purpose);
                return Ok(obs);
            }
            match self.capture(purpose).await {
                Ok(obs) if obs.shot.blocked => {
                    // Never plan on a black frame: ask the human (no tap is sent).
                    self.bus.emit(AgentEvent::Warning {
                        code: ErrorCode::ScreenshotBlocked.as_str().into(),
                        message:
                            "the screenshot is all black (a protected window?); asking a human"
                                .into(),
                    });
                    let resp = self
                        .ask_human(
                            HumanRequestKind::TakeOver {
                                message: "The screen cannot be captured (black frame: a protected window such as a payment \
                                          or password screen). Please handle this screen on the phone, then hand back."
                                    .into(),
                            },
                            String::new(),
                        )
                        .await;
                    match resp {
                        HumanResponse::HandBack => {
                            self.guards.record_human_operation();
                            continue;
                        }
                        HumanResponse::Approve => {
                            return Err(Self::end(
                                RunStatus::TakenOver,
                                "screenshot_blocked_takeover",
                                "a human took over on a protected screen",
                            ));
                        }
                        _ => {
                            return Err(Self::end(
                                RunStatus::Failed,
                                ErrorCode::ScreenshotBlocked.as_str(),
                                "the screen is protected (black screenshot) and no human took over",
                            ));
                        }
                    }
                }
                Ok(obs) => return Ok(obs),
                Err(e) => match self.device_error_flow(e, None).await {
                    Flow::Continue => continue,
                    end => return Err(end),
                },
            }
        }
    }

    /// Take a screenshot, store it, emit the observation.
    async fn capture(&mut self, purpose: &str) -> Result<Obs, DeviceError> {
        self.plan_reuse = None;
        let shot = self.device().screenshot(&self.cancel).await?;
        Ok(self.record_shot(shot, purpose).await?.0)
    }

    fn emit_observation(&self, obs: &Obs, screenshot: String, capture_ms: u32, purpose: &str) {
        self.bus.emit(AgentEvent::Observation {
            screenshot,
            width: obs.shot.image.width(),
            height: obs.shot.image.height(),
            blocked: obs.shot.blocked,
            screen_seq: obs.seq,
            capture_ms,
            purpose: purpose.to_string(),
        });
    }

    /// Store a frame taken for `purpose`, emit its observation; `(observation, stored hash)`.
    async fn record_shot(
        &mut self,
        shot: Screenshot,
        purpose: &str,
    ) -> Result<(Obs, String), DeviceError> {
        let key = Arc::as_ptr(&shot.image) as usize;
        if (purpose == "plan" || purpose == "verify")
            && self.pending_prepare.as_ref().is_none_or(|(k, _)| *k != key)
        {
            // Off the critical path: the resize + encode for the model (M6) overlaps the rest of
            // the capture, and for a verification frame the end of the step and the next
            // planning screenshot: an unchanged screen comes back as the same decoded frame
            // (same address), whose image is then ready. `plan_and_act` picks it up.
            let (frame, policy) = (shot.clone(), self.agent.parts.actor.profile.image);
            self.pending_prepare = Some((
                key,
                tokio::task::spawn_blocking(move || adapters::prepare(&frame, &policy)),
            ));
        }
        let geometry = self.device().geometry(&self.cancel).await?;
        // The screenshot actually taken is the truth for the size (D2).
        let geometry = ScreenGeometry {
            width_px: shot.image.width(),
            height_px: shot.image.height(),
            ..geometry
        };
        let hash = {
            let _phase = phase!("store_screenshot");
            self.bus
                .recorder()
                .put_screenshot(&shot.png, shot.image.width(), shot.image.height())
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "could not store screenshot");
                    crate::sha256_hex(&shot.png)
                })
        };
        // The screen sequence number counts distinct screens: it moves only when the frame changed.
        let change_from_previous = {
            let _phase = phase!("screen_change_diff");
            self.last_frame.as_ref().map(|prev| {
                (
                    Arc::as_ptr(prev) as usize,
                    changed_fraction(prev, &shot.image, None),
                )
            })
        };
        let changed = change_from_previous.is_none_or(|(_, f)| f > 0.002);
        if changed {
            self.screen_seq += 1;
        }
        self.last_frame = Some(shot.image.clone());
        let capture_ms = shot.capture_ms;
        let obs = Obs {
            shot,
            seq: self.screen_seq,
            geometry,
            change_from_previous,
        };
        self.emit_observation(&obs, hash.clone(), capture_ms, purpose);
        if purpose == "plan" || purpose == "verify" {
            self.tail.push(obs.clone());
            if self.tail.len() > 3 {
                self.tail.remove(0);
            }
        }
        Ok((obs, hash))
    }

    /// Device errors: loss → wait for the same serial (D6); setup errors → abort; others → hard failure.
    async fn device_error_flow(&mut self, e: DeviceError, action_type: Option<&str>) -> Flow {
        self.plan_reuse = None;
        if matches!(e, DeviceError::Cancelled) || self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        if e.is_device_lost() {
            let serial = self.device().serial().to_string();
            self.set_phase(Phase::DeviceLost);
            self.bus.emit(AgentEvent::DeviceLost {
                serial: serial.clone(),
                detail: e.to_string(),
            });
            let t0 = Instant::now();
            let deadline = t0 + self.cfg().device_wait;
            let mut last_error = e.to_string();
            loop {
                if self.cancel.is_cancelled() {
                    return self.cancelled_flow();
                }
                if Instant::now() >= deadline {
                    return Self::end(
                        RunStatus::Failed,
                        ErrorCode::DeviceLost.as_str(),
                        format!(
                            "device {serial} did not come back within {} s (last error: {last_error}): reconnect it and start the task again",
                            self.cfg().device_wait.as_secs()
                        ),
                    );
                }
                if self.pause_point().await.is_err() {
                    return self.cancelled_flow();
                }
                match self.device().geometry(&self.cancel).await {
                    Ok(_) => break,
                    Err(e) => {
                        last_error = e.to_string();
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                            _ = self.cancel.cancelled() => return self.cancelled_flow(),
                        }
                    }
                }
            }
            self.bus.emit(AgentEvent::DeviceRestored {
                serial,
                waited_ms: t0.elapsed().as_millis() as u64,
            });
            // Never replay the interrupted action blindly: re-observe and re-plan.
            self.recover(
                RecoveryOutcome::Reobserve,
                ErrorCode::DeviceLost,
                action_type,
                "device came back; re-observing",
                false,
            );
            self.feedback.push(
                "The phone was disconnected during the last action; it is back. The last action may or may not have \
                 happened: look at the new screenshot before acting."
                    .into(),
            );
            return Flow::Continue;
        }
        let code = e.code();
        if matches!(
            code,
            ErrorCode::InjectEventsDenied
                | ErrorCode::DeviceUnauthorized
                | ErrorCode::AdbServerUnreachable
        ) {
            self.recover(
                RecoveryOutcome::Abort,
                code,
                action_type,
                &e.to_string(),
                true,
            );
            return Self::end(RunStatus::Failed, code.as_str(), e.to_string());
        }
        self.hard_failures += 1;
        if self.hard_failures > self.cfg().max_hard_failures {
            self.recover(
                RecoveryOutcome::Abort,
                code,
                action_type,
                &e.to_string(),
                true,
            );
            return Self::end(
                RunStatus::Failed,
                code.as_str(),
                format!("too many device failures; last: {e}"),
            );
        }
        self.recover(
            RecoveryOutcome::Replan,
            code,
            action_type,
            &e.to_string(),
            true,
        );
        self.feedback
            .push(format!("The last command failed on the device: {e}."));
        Flow::Continue
    }

    fn recover(
        &mut self,
        outcome: RecoveryOutcome,
        code: ErrorCode,
        action_type: Option<&str>,
        detail: &str,
        hard: bool,
    ) {
        self.set_phase(Phase::Recovering);
        if !hard
            && matches!(
                outcome,
                RecoveryOutcome::Replan | RecoveryOutcome::Reobserve
            )
        {
            self.soft_replans += 1;
        }
        self.bus.emit(AgentEvent::Recovery {
            outcome,
            code,
            action_type: action_type.map(str::to_string),
            hard_failures: self.hard_failures,
            soft_replans: self.soft_replans,
            detail: detail.to_string(),
        });
    }

    async fn negotiate_contract(&mut self, obs: &Obs) -> Result<CoordinateSpace, Flow> {
        let actor = self.agent.parts.actor.clone();
        // SPEC M7: a model family answers in its own trained convention; no probing.
        if let Some(ad) = actor.profile.family_adapter() {
            let space = ad.frozen_space();
            self.bus.emit(AgentEvent::CoordinateCalibration {
                method: "family".into(),
                space: Some(space),
                probes: vec![],
                detail: format!(
                    "model family {} of profile {}: coordinates {} read as {space}",
                    ad.family,
                    actor.profile_name,
                    ad.coords.as_str()
                ),
            });
            return Ok(space);
        }
        let space = actor.profile.coordinate_space;
        if space != CoordinateSpace::Auto {
            self.bus.emit(AgentEvent::CoordinateCalibration {
                method: "explicit".into(),
                space: Some(space),
                probes: vec![],
                detail: format!(
                    "coordinate space {space} set by the profile {}",
                    actor.profile_name
                ),
            });
            return Ok(space);
        }
        self.set_phase(Phase::Calibrating);
        let memory_cache = phoneagent_llm::calibration::MemoryCalibrationCache::default();
        let cache: &dyn CalibrationCache = match &self.agent.parts.calibration_cache {
            Some(c) => c.as_ref(),
            None => &memory_cache,
        };
        let calls_before = self.ledger.calls().len();
        let ctx = phoneagent_llm::calibration::CalibrationContext {
            client: actor.client.as_ref(),
            profile: &actor.profile,
            role: Role::Actor,
            geometry: obs.geometry,
            ledger: &self.ledger,
            cache,
            cancel: &self.cancel,
            settings: Default::default(),
        };
        let result = phoneagent_llm::calibration::negotiate(&ctx).await;
        // Calibration calls count in the ledger (M3/M4): emit them as model calls.
        for rec in self.ledger.calls().into_iter().skip(calls_before) {
            self.bus.emit(AgentEvent::ModelCall {
                role: "actor".into(),
                call_kind: "calibration".into(),
                model: rec.model.clone(),
                prompt_tokens: rec.prompt_tokens,
                completion_tokens: rec.completion_tokens,
                cost_usd: rec.cost_usd.unwrap_or(0.0),
                latency_ms: rec.latency_ms,
                content: String::new(),
                reasoning: None,
                error: None,
                run_totals: self.totals(),
            });
        }
        match result {
            Ok(report) => {
                self.bus.emit(report.to_event());
                match report.space {
                    Some(s) => Ok(s),
                    None => Err(Self::end(
                        RunStatus::Failed,
                        ErrorCode::CalibrationFailed.as_str(),
                        report.detail,
                    )),
                }
            }
            Err(e) if e.code() == ErrorCode::Cancelled || self.cancel.is_cancelled() => {
                Err(self.cancelled_flow())
            }
            Err(e) => {
                let detail = format!("coordinate calibration failed: {e}");
                self.bus.emit(AgentEvent::CoordinateCalibration {
                    method: "rejected".into(),
                    space: None,
                    probes: vec![],
                    detail: detail.clone(),
                });
                Err(Self::end(
                    RunStatus::Failed,
                    ErrorCode::CalibrationFailed.as_str(),
                    detail,
                ))
            }
        }
    }

    /// Record a model call in the ledger and the event stream (M3).
    fn account(
        &mut self,
        role: Role,
        kind: CallKind,
        route: &ModelRoute,
        resp: Result<&ChatResponse, (&LlmError, Duration)>,
    ) {
        let (prompt, completion, cost, latency, content, reasoning, error) = match resp {
            Ok(r) => {
                let rec = self.ledger.record(
                    role,
                    kind,
                    Some(self.step),
                    route.profile.price.as_ref(),
                    r,
                    &route.profile.model,
                );
                (
                    rec.prompt_tokens,
                    rec.completion_tokens,
                    rec.cost_usd.unwrap_or(0.0),
                    rec.latency_ms,
                    r.content.clone(),
                    r.reasoning.clone(),
                    None,
                )
            }
            Err((e, d)) => (
                0,
                0,
                0.0,
                d.as_millis() as u64,
                e.to_string(),
                None,
                Some(e.code()),
            ),
        };
        let kind_name = serde_json::to_value(kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        self.bus.emit(AgentEvent::ModelCall {
            role: role.as_str().into(),
            call_kind: kind_name,
            model: route.profile.model.clone(),
            prompt_tokens: prompt,
            completion_tokens: completion,
            cost_usd: cost,
            latency_ms: latency,
            content,
            reasoning,
            error,
            run_totals: self.totals(),
        });
    }

    /// Build the planning request (the one place actor contexts are built; P1, R6).
    fn build_request(
        &mut self,
        prepared: &Prepared,
        extra_confirmation: bool,
        retry_feedback: Option<&str>,
    ) -> ChatRequest {
        let _phase = phase!("build_request");
        let cfg = self.cfg().clone();
        let space = self.contract.unwrap_or(CoordinateSpace::Relative0999);
        let system = crate::prompt::system_prompt(&crate::prompt::PromptInput {
            task: &self.task,
            protocol: self.protocol(),
            space,
            image_size: (prepared.sent_w, prepared.sent_h),
            guard_sections: self.guards.prompt_sections(),
            lang: cfg.lang,
            app_launcher: cfg.app_launcher,
            wait_max_secs: cfg.wait_max_secs,
            family: self.family(),
        });
        let mut current = String::new();
        current.push_str(&format!("Task: {}\n", self.task));
        if !self.memory.notes.is_empty() {
            current.push_str("Your notes:\n");
            for n in &self.memory.notes {
                current.push_str(&format!("- {n}\n"));
            }
        }
        if !self.memory.task_board.is_empty() {
            current.push_str("Your task board:\n");
            for it in &self.memory.task_board {
                current.push_str(&format!(
                    "- [{}] {}\n",
                    if it.done { "x" } else { " " },
                    it.text
                ));
            }
        }
        if !self.memory.human_answers.is_empty() {
            current.push_str("The user's answers so far:\n");
            for a in &self.memory.human_answers {
                current.push_str(&format!("- {a}\n"));
            }
        }
        for f in self.feedback.iter() {
            current.push_str(&format!(
                "Result of your last action: {}\n",
                sanitize_text(f)
            ));
        }
        if let Some(r) = retry_feedback {
            current.push_str(&format!(
                "Your previous answer was rejected and nothing was done on the phone: {r}\nAnswer again with exactly one valid action.\n"
            ));
        }
        if extra_confirmation {
            current.push_str(
                "The run's token budget is exhausted. This is your one remaining turn: you may confirm your pending finish \
                 with finish(message=..., confirm=true) if the review package still holds, or stop. Other actions will not be run.\n",
            );
        }
        current.push_str(&format!(
            "Current screenshot (screen #{}, image {}x{} px). Reply with one action.",
            self.screen_seq, prepared.sent_w, prepared.sent_h
        ));
        let mut messages = vec![ChatMessage::system(system)];
        let history_budget = cfg
            .input_token_budget
            .map(|b| b.saturating_sub(prepared.est_tokens + estimate_tokens(&current) + 1500));
        // Drop the oldest whole turns only when the input-token budget requires it (R6).
        loop {
            let hist = crate::prompt::history_messages(self.memory.turns());
            let tokens: u64 = hist.iter().map(|m| estimate_tokens(&m.1)).sum();
            if history_budget.is_none_or(|b| tokens <= b) || !self.memory.drop_oldest() {
                for (role, text) in hist {
                    messages.push(if role == "assistant" {
                        ChatMessage::assistant(text, vec![])
                    } else {
                        ChatMessage::user(text)
                    });
                }
                break;
            }
        }
        messages.push(ChatMessage::user_parts(vec![
            ContentPart::text(current),
            ContentPart::image(prepared.data_url.clone()),
        ]));
        let tools = match self.protocol() {
            ActionProtocol::Tools if self.family().is_none() => adapters::tool_specs(&cfg),
            _ => Vec::new(),
        };
        ChatRequest {
            messages,
            tools,
            tool_choice: None,
            temperature: Some(0.0),
            max_tokens: Some(2048),
            stream: None,
        }
    }

    async fn call_actor(
        &mut self,
        req: ChatRequest,
        kind: CallKind,
        image: (u32, u32),
        obs: &Obs,
    ) -> Result<ChatResponse, Flow> {
        self.set_phase(Phase::Planning);
        let actor = self.agent.parts.actor.clone();
        let t0 = Instant::now();
        let (max_wait, wait_limit) = self.rate_limit_wait();
        let result = tokio::select! {
            r = actor.client.chat_within(req, &self.cancel, max_wait) => r,
            _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
        };
        match result {
            Ok(resp) => {
                // SPEC P6: register typed secrets before the answer is recorded anywhere.
                self.register_secrets(&resp, image, obs).await;
                let size = answer_bytes(&resp);
                if size > self.cfg().max_answer_bytes {
                    // Never acted on, never stored whole (issue #11): its head is the record.
                    let limit = self.cfg().max_answer_bytes;
                    let (recorded, refused, rejection) = over_long_answer(resp, size, limit);
                    self.account(Role::Actor, kind, &actor, Ok(&recorded));
                    self.refused_answer = Some(rejection);
                    return Ok(refused);
                }
                self.account(Role::Actor, kind, &actor, Ok(&resp));
                Ok(resp)
            }
            Err(e) => {
                let code = e.code();
                self.account(Role::Actor, kind, &actor, Err((&e, t0.elapsed())));
                if code == ErrorCode::Cancelled || self.cancel.is_cancelled() {
                    return Err(self.cancelled_flow());
                }
                if let LlmError::RateLimited {
                    retry_after_ms: Some(ms),
                    ..
                } = &e
                {
                    let wait = Duration::from_millis(*ms);
                    if wait > max_wait {
                        // Asking again now would only be refused again: stop, and say why.
                        let msg = format!(
                            "the model provider asked to wait {} s before the next request (Retry-After), longer than {wait_limit}: \
                             the run stopped; try again later",
                            ms.div_ceil(1000)
                        );
                        self.recover(RecoveryOutcome::Abort, code, None, &msg, true);
                        return Err(Self::end(RunStatus::Failed, code.as_str(), msg));
                    }
                    // Within the limits: wait as asked before planning again.
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
                    }
                }
                self.hard_failures += 1;
                if self.hard_failures > self.cfg().max_hard_failures
                    || code == ErrorCode::ModelConfig
                {
                    self.recover(RecoveryOutcome::Abort, code, None, &e.to_string(), true);
                    return Err(Self::end(RunStatus::Failed, code.as_str(), e.to_string()));
                }
                self.recover(RecoveryOutcome::Replan, code, None, &e.to_string(), true);
                Err(Flow::Continue)
            }
        }
    }

    /// How long a model server may make this run wait (`Retry-After`): the configured maximum
    /// or the remaining wall time, whichever is shorter, and words for it.
    fn rate_limit_wait(&self) -> (Duration, String) {
        let used = self.started.elapsed().saturating_sub(self.paused_for);
        let left = self.cfg().max_duration.saturating_sub(used);
        let max = self.cfg().max_rate_limit_wait;
        if left < max {
            (
                left,
                format!("the {} s left of the run's time", left.as_secs()),
            )
        } else {
            (max, format!("the maximum wait of {} s", max.as_secs()))
        }
    }

    /// Parse the actor's answer (A1–A5); an answer refused for its size is its rejection.
    fn parse_actor(&mut self, resp: &ChatResponse, prepared: &Prepared) -> adapters::Parsed {
        if let Some(r) = self.refused_answer.take() {
            return adapters::Parsed {
                actions: vec![Err(r)],
            };
        }
        adapters::parse_response(
            resp,
            self.protocol(),
            self.family().as_ref(),
            self.cfg(),
            self.contract,
            (prepared.sent_w, prepared.sent_h),
            &self.task,
        )
    }

    async fn plan_and_act(&mut self, obs: Obs, extra_confirmation: bool) -> Flow {
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
                    "internal",
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
                        ErrorCode::ProtocolError.as_str(),
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
                    status: "error".into(),
                    text: "skipped: the run already ended in this round".into(),
                });
                continue;
            }
            if extra_confirmation
                && !matches!(action.kind, ActionKind::Finish { confirm: true, .. })
            {
                self.bus.emit(AgentEvent::ToolResult {
                    tool,
                    status: "error".into(),
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

    /// Tell the model what became of `action` (a tool result) and remember the turn.
    fn record_turn(&mut self, action: &Action, result: String, rejected: bool) {
        self.bus.emit(AgentEvent::ToolResult {
            tool: action.kind.name().into(),
            status: if rejected { "error" } else { "ok" }.into(),
            text: result.clone(),
        });
        self.feedback.push(result.clone());
        self.memory.push(Turn {
            step: self.step,
            // SPEC M7: a family model sees its past turns in its own grammar.
            action: match self.family() {
                Some(ad) => ad.render(action, self.family_image),
                None => summarize_action(action),
            },
            screen_description: action.screen_description.clone(),
            reason: action.reason.clone(),
            result,
            rejected,
            rejected_count: u32::from(rejected),
        });
    }

    fn reject_turn(&mut self, action: &Action, result: String) {
        self.record_turn(action, result, true);
    }

    fn ok_turn(&mut self, action: &Action, result: String) {
        self.record_turn(action, result, false);
    }

    /// True when `text` typed now is a secret (SPEC P6): the last touch focused a credential
    /// field, or the text has a credential's shape.
    fn typed_secret(&self, text: &str) -> bool {
        self.credential_field_focused || crate::secrets::is_secret_shape(text)
    }

    /// Register the secrets an answer will type (SPEC P6): text for a credential field (the
    /// last touch focused one, or the screen reader reads the focused field's label as one) or
    /// with a credential shape. Called before the answer is recorded anywhere, so a password
    /// never reaches a `model_call` event, the store or an export in the clear.
    async fn register_secrets(&mut self, resp: &ChatResponse, image: (u32, u32), obs: &Obs) {
        let parsed = adapters::parse_response(
            resp,
            self.protocol(),
            self.family().as_ref(),
            self.cfg(),
            self.contract,
            image,
            &self.task,
        );
        let typed: Vec<String> = parsed
            .actions
            .iter()
            .flatten()
            .filter_map(|(_, a)| match &a.kind {
                ActionKind::Type { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        if typed.is_empty() {
            return;
        }
        // The touch's own reading did not say "credential field": read the field's label on
        // the planning frame now (the gate reuses this reading).
        if !self.credential_field_focused
            && let Some(reading) = self.read_field(obs).await
            && reading
                .field_label
                .as_deref()
                .is_some_and(crate::secrets::is_credential_label)
        {
            self.credential_field_focused = true;
        }
        for text in typed {
            if self.typed_secret(&text) {
                self.bus.secrets().add(&text);
            }
        }
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
                self.ok_turn(&action, "noted".into());
                return Flow::Continue;
            }
            ActionKind::AskUser { question } => {
                let resp = self
                    .ask_human(
                        HumanRequestKind::AskUser {
                            question: question.clone(),
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
                self.ok_turn(&action, format!("The user answered: {text}"));
                return Flow::Continue;
            }
            ActionKind::TakeOver { message } => {
                let resp = self
                    .ask_human(
                        HumanRequestKind::TakeOver {
                            message: message.clone(),
                        },
                        String::new(),
                    )
                    .await;
                if self.cancel.is_cancelled() {
                    return self.cancelled_flow();
                }
                return match resp {
                    HumanResponse::Approve => Self::end(
                        RunStatus::TakenOver,
                        "take_over_accepted",
                        format!("handed to a human: {message}"),
                    ),
                    HumanResponse::HandBack => {
                        self.guards.record_human_operation();
                        self.ok_turn(&action, "The human operated the phone and handed it back. Look at the new screenshot.".into());
                        Flow::Continue
                    }
                    _ => {
                        self.reject_turn(
                            &action,
                            "take_over was rejected by the user: continue the task yourself."
                                .into(),
                        );
                        Flow::Continue
                    }
                };
            }
            ActionKind::Finish { message, confirm } => {
                let (message, confirm) = (message.clone(), *confirm);
                return self.finish(&action, message, confirm, obs).await;
            }
            _ => {}
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
        if action.kind.is_gated() {
            self.set_phase(Phase::Gating);
            let t0 = Instant::now();
            let screen = match pre_read.take() {
                Some(reading) => reading,
                None => self.read_screen(&action, obs, &points).await,
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
                    &action,
                    RiskTier::Hard,
                    vec!["double_tap_on_control".into()],
                    GateOutcome::BlockedByTaskBoundary,
                    DecidedBy::Rule,
                    t0,
                    Some(message.clone()),
                );
                self.reject_turn(&action, message);
                return Flow::Continue;
            }
            let label_is_credential = screen
                .as_ref()
                .and_then(|r| r.field_label.as_deref())
                .is_some_and(crate::secrets::is_credential_label);
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
                let mut reasons = verdict.reasons().to_vec();
                reasons.push("double_tap_unread_target".into());
                let target = match &verdict {
                    GateVerdict::NeedsApproval { target, .. }
                    | GateVerdict::VisualReview { target, .. } => target.clone(),
                    _ => action
                        .target_description
                        .as_deref()
                        .map(phoneagent_safety::redact_text)
                        .unwrap_or_else(|| "double tap (target not read)".into()),
                };
                verdict = GateVerdict::NeedsApproval {
                    route: phoneagent_safety::ApprovalRoute::Human,
                    tier: RiskTier::Hard,
                    reasons,
                    target,
                    task_authorizes: false,
                };
            }
            let touch_reasons = verdict.reasons().to_vec();
            // What a touch aims at decides what the next `type_text` is (SPEC P6, S3): set
            // when the touch is proposed, whatever becomes of it, so a rejected or blocked
            // touch on a password field still makes the text typed next a secret.
            if matches!(
                action.kind,
                ActionKind::Tap { .. }
                    | ActionKind::DoubleTap { .. }
                    | ActionKind::LongPress { .. }
            ) {
                self.credential_field_focused = touch_reasons
                    .iter()
                    .any(|r| r == "credential_target" || r == "password_field");
                self.last_touch_point = points.first().map(|p| (p.device.x, p.device.y));
            }
            match verdict {
                GateVerdict::Allow { tier, reasons } => {
                    self.emit_gate(
                        &action,
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
                    return self.warn_turn(
                        &action,
                        (tier, reasons),
                        DecidedBy::Rule,
                        t0,
                        receipt,
                        swipe_as_tap,
                    );
                }
                GateVerdict::Blocked {
                    tier,
                    reasons,
                    message,
                } => {
                    self.emit_gate(
                        &action,
                        tier,
                        reasons,
                        GateOutcome::BlockedByTaskBoundary,
                        DecidedBy::Rule,
                        t0,
                        Some(message.clone()),
                    );
                    self.reject_turn(&action, message);
                    return Flow::Continue;
                }
                GateVerdict::Review {
                    tier,
                    reasons,
                    summary,
                } => match self.reversibility_review(&action, &summary).await {
                    ReviewVerdict::Reversible => {
                        self.emit_gate(
                            &action,
                            tier,
                            reasons,
                            GateOutcome::Allow,
                            DecidedBy::Reviewer,
                            t0,
                            None,
                        );
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
                        let receipt =
                            adapters::receipt(&action, &self.task, self.cfg().lang, which);
                        return self.warn_turn(
                            &action,
                            (tier, reasons),
                            DecidedBy::Reviewer,
                            t0,
                            receipt,
                            swipe_as_tap,
                        );
                    }
                },
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
                    if let Some(flow) = self.approve_for_me(&action, obs, case, t0).await {
                        return flow;
                    }
                }
                GateVerdict::NeedsApproval {
                    tier,
                    reasons,
                    target,
                    ..
                } => {
                    if let Some(flow) = self
                        .ask_person_approval(&action, tier, reasons, target, screen_summary, t0)
                        .await
                    {
                        return flow;
                    }
                }
                GateVerdict::VisualReview {
                    tier,
                    mut reasons,
                    target,
                } => {
                    // SPEC S11: an unreadable target where an irreversible effect is
                    // plausible: the isolated visual reviewer says what the control does.
                    let verdict = self.visual_review(obs, &points).await;
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
                            &action,
                            tier,
                            reasons,
                            GateOutcome::Allow,
                            DecidedBy::Reviewer,
                            t0,
                            None,
                        ),
                        screen_gate::VisualOutcome::Warn => {
                            let receipt = adapters::receipt(
                                &action,
                                &self.task,
                                self.cfg().lang,
                                adapters::ReceiptFor::ReviewerIrreversible,
                            );
                            return self.warn_turn(
                                &action,
                                (tier, reasons),
                                DecidedBy::Reviewer,
                                t0,
                                receipt,
                                swipe_as_tap,
                            );
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
                                .ask_person_approval(
                                    &action,
                                    RiskTier::Hard,
                                    reasons,
                                    target,
                                    Some(summary),
                                    t0,
                                )
                                .await
                            {
                                return flow;
                            }
                        }
                    }
                }
            }
        }
        // A5 semantics were checked by the parser; now freshness (R3), dispatch, verification.
        self.dispatch_and_verify(dispatch_action, obs, dispatch_points)
            .await
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

    /// Ask the person to approve a gated call (SPEC S8): `None` when approved (the call runs),
    /// else the flow to return (rejected: an error receipt; cancelled).
    #[allow(clippy::too_many_arguments)]
    async fn ask_person_approval(
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

    #[allow(clippy::too_many_arguments)]
    fn emit_gate(
        &self,
        action: &Action,
        tier: RiskTier,
        reasons: Vec<String>,
        outcome: GateOutcome,
        by: DecidedBy,
        t0: Instant,
        receipt: Option<String>,
    ) {
        self.bus.emit(AgentEvent::GateDecision {
            tool: action.kind.name().into(),
            tier,
            reasons,
            mode: self.cfg().mode,
            outcome,
            decided_by: by,
            latency_ms: t0.elapsed().as_millis() as u64,
            receipt,
        });
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

    async fn ask_human(&mut self, kind: HumanRequestKind, detail: String) -> HumanResponse {
        self.ask_human_with_id(kind, detail).await.1
    }

    /// Ask the human through the approver with the `human_requested` / `human_resolved`
    /// events around it; returns the request id too (the approve-for-me ledger keeps it).
    async fn ask_human_with_id(
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

    async fn dispatch_and_verify(
        &mut self,
        action: Action,
        obs: &Obs,
        points: Vec<MappedPoint>,
    ) -> Flow {
        let action_type = action.kind.name();
        // R3: freshness for coordinate actions.
        if !points.is_empty() {
            match self.freshness(obs, &points).await {
                Ok(true) => {}
                Ok(false) => {
                    self.recover(
                        RecoveryOutcome::Replan,
                        ErrorCode::StaleAction,
                        Some(action_type),
                        "screen changed before dispatch",
                        false,
                    );
                    self.reject_turn(
                        &action,
                        "Not executed (zero touches): the screen changed between your screenshot and the action. \
                         Re-plan on the new screenshot."
                            .into(),
                    );
                    return Flow::Continue;
                }
                Err(f) => return f,
            }
        }
        if let ActionKind::Wait { seconds } = &action.kind {
            let secs = seconds.min(self.cfg().wait_max_secs).max(0.0);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => {}
                _ = self.cancel.cancelled() => return self.cancelled_flow(),
            }
            self.ok_turn(&action, format!("Waited {secs} s."));
            return Flow::Continue;
        }
        if self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        if let Some(e) = self.bus.take_write_error() {
            return Self::end(
                RunStatus::Failed,
                "store",
                format!("could not record the run: {e}"),
            );
        }
        // A pause requested while planning holds the action here; the screen may change while
        // paused, so the action is re-checked for freshness after the pause.
        if self.agent.pause.is_paused() {
            if let Err(f) = self.pause_point().await {
                return f;
            }
            if !points.is_empty() {
                match self.freshness(obs, &points).await {
                    Ok(true) => {}
                    Ok(false) => {
                        self.recover(
                            RecoveryOutcome::Replan,
                            ErrorCode::StaleAction,
                            Some(action_type),
                            "screen changed while paused",
                            false,
                        );
                        self.reject_turn(
                            &action,
                            "Not executed (zero touches): the screen changed while the run was paused. \
                             Re-plan on the new screenshot."
                                .into(),
                        );
                        return Flow::Continue;
                    }
                    Err(f) => return f,
                }
            }
        }
        // Dispatch.
        self.set_phase(Phase::Executing);
        let before = self
            .last_frame
            .clone()
            .unwrap_or_else(|| obs.shot.image.clone());
        let devp: Vec<DevicePoint> = points.iter().map(|p| p.device).collect();
        let t0 = Instant::now();
        let result = self.send(&action, &devp).await;
        let duration_ms = t0.elapsed().as_millis() as u64;
        match result {
            Ok(()) => {
                self.bus.emit(AgentEvent::ActionDispatched {
                    action_type: action_type.into(),
                    device_points: devp.clone(),
                    command_ok: true,
                    error: None,
                    message: None,
                    duration_ms,
                });
            }
            Err(e) => {
                self.bus.emit(AgentEvent::ActionDispatched {
                    action_type: action_type.into(),
                    device_points: devp.clone(),
                    command_ok: false,
                    error: Some(e.code()),
                    message: Some(e.to_string()),
                    duration_ms,
                });
                self.memory.push(Turn {
                    step: self.step,
                    action: summarize_action(&action),
                    screen_description: action.screen_description.clone(),
                    reason: action.reason.clone(),
                    result: format!("the command failed: {e}"),
                    rejected: false,
                    rejected_count: 0,
                });
                return self.device_error_flow(e, Some(action_type)).await;
            }
        }
        self.guards.record_dispatched(&action);
        // R4: verification by pixel diff.
        self.set_phase(Phase::Verifying);
        // The settle is the device's (a stream watches frames; screencap sleeps), and a
        // settle that watched frames hands over its last one as the verification frame.
        let settled = match self
            .device()
            .settle(self.cfg().settle(), &self.cancel)
            .await
        {
            Ok(s) => s,
            Err(e) => return self.device_error_flow(e, Some(action_type)).await,
        };
        let paused_before = self.paused_for;
        if let Err(f) = self.pause_point().await {
            return f;
        }
        let shot = match settled {
            // A pause in between: the human may have changed the screen.
            Some(shot) if self.paused_for == paused_before => Ok(shot),
            _ => self.device().screenshot(&self.cancel).await,
        };
        let verified = match shot {
            Ok(shot) => self.record_shot(shot, "verify").await,
            Err(e) => Err(e),
        };
        let after = match verified {
            Ok((after, hash)) => {
                if !after.shot.blocked && self.cfg().reuse_verify_frame {
                    self.plan_reuse = Some((after.clone(), hash));
                }
                after
            }
            Err(e) => return self.device_error_flow(e, Some(action_type)).await,
        };
        // F4: the search guard reads where the screen changed (results under the box).
        self.guards
            .record_screen_effect(&action, &before, &after.shot.image);
        // `before` is alive here, so an equal address is the same frame: the capture already
        // diffed exactly this pair (the usual case; a pause or device loss in between may not).
        let changed = match after.change_from_previous {
            Some((prev, f)) if prev == Arc::as_ptr(&before) as usize => f,
            _ => {
                let _phase = phase!("verify_diff");
                changed_fraction(&before, &after.shot.image, None)
            }
        };
        let effect = changed > 0.002;
        let mut warnings = Vec::new();
        if !effect {
            warnings.push("no_visible_change".to_string());
        }
        if after.shot.blocked {
            warnings.push("screenshot_blocked".to_string());
        }
        self.bus.emit(AgentEvent::Verification(VerificationFacts {
            dispatched: true,
            command_ok: true,
            observable_effect: effect,
            changed_fraction: changed,
            warnings: warnings.clone(),
        }));
        let result = if effect {
            format!("{} done; the screen changed.", summarize_action(&action))
        } else {
            format!(
                "{} was sent, but the screen did not visibly change (warning, not retried).",
                summarize_action(&action)
            )
        };
        self.ok_turn(&action, result);
        // R5: repeat guard — only dispatched commands count.
        let sig = Signature(format!(
            "{}:{}:{}",
            action_type,
            points
                .iter()
                .map(|p| format!("{},{}", p.runtime.x / 25, p.runtime.y / 25))
                .collect::<Vec<_>>()
                .join(";"),
            match &action.kind {
                ActionKind::Type { text } => text.clone(),
                _ => String::new(),
            }
        ));
        self.unchanged_streak = if effect { 0 } else { self.unchanged_streak + 1 };
        let repeats = match &self.last_sig {
            Some((s, n)) if *s == sig && !effect => n + 1,
            _ if !effect => 1,
            _ => 0,
        };
        self.last_sig = Some((sig, repeats));
        if repeats >= 3 || self.unchanged_streak >= 3 {
            self.loop_replans += 1;
            self.last_sig = None;
            self.unchanged_streak = 0;
            if self.loop_replans >= 2 {
                self.recover(
                    RecoveryOutcome::RequestTakeover,
                    ErrorCode::Internal,
                    Some(action_type),
                    "loop detected twice",
                    true,
                );
                let resp = self
                    .ask_human(
                        HumanRequestKind::TakeOver {
                            message: "The agent is stuck: the same action keeps having no effect. Please fix the screen and hand back, or take over."
                                .into(),
                        },
                        String::new(),
                    )
                    .await;
                return match resp {
                    HumanResponse::HandBack => {
                        self.guards.record_human_operation();
                        Flow::Continue
                    }
                    HumanResponse::Approve => Self::end(
                        RunStatus::TakenOver,
                        "loop_takeover",
                        "the agent was stuck; a human took over",
                    ),
                    _ => Self::end(
                        RunStatus::Failed,
                        "loop_detected",
                        "the agent was stuck repeating an action with no effect",
                    ),
                };
            }
            self.recover(
                RecoveryOutcome::Replan,
                ErrorCode::Internal,
                Some(action_type),
                "repeated action with no effect",
                false,
            );
            self.memory.push(Turn {
                step: self.step,
                action: format!("{} repeated 3 times", summarize_action(&action)),
                screen_description: None,
                reason: None,
                result: "Rejected summary: this action was repeated with no visible effect. It will not work: choose a different \
                         action or ask for help with ask_user / take_over."
                    .into(),
                rejected: true,
                rejected_count: 1,
            });
        }
        Flow::Continue
    }

    /// R3: true when the action is still fresh; false when stale (zero touches).
    async fn freshness(&mut self, planned: &Obs, points: &[MappedPoint]) -> Result<bool, Flow> {
        let fc = self.cfg().freshness;
        let mut rechecks = 0;
        loop {
            self.pause_point().await?;
            let now = match self.capture("freshness").await {
                Ok(o) => o,
                Err(e) => {
                    return Err(match self.device_error_flow(e, None).await {
                        Flow::Continue => return Ok(false),
                        end => end,
                    });
                }
            };
            let phase = phase!("freshness_diff");
            let global = changed_fraction(&planned.shot.image, &now.shot.image, None);
            let (w, h) = now.shot.image.dimensions();
            let half = ((w.min(h) as f64) * fc.target_half_frac).round().max(16.0) as u32;
            let target = points
                .iter()
                .map(|p| {
                    changed_fraction(
                        &planned.shot.image,
                        &now.shot.image,
                        Some(Rect::around(p.device.x, p.device.y, half, w, h)),
                    )
                })
                .fold(0.0f64, f64::max);
            drop(phase);
            let fresh = planned.shot.image.dimensions() == now.shot.image.dimensions()
                && target <= fc.target_threshold
                && global <= fc.global_threshold;
            if fresh || rechecks >= fc.rechecks {
                let outcome = if fresh {
                    if rechecks == 0 {
                        "fresh"
                    } else {
                        "fresh_after_recheck"
                    }
                } else {
                    "stale"
                };
                self.bus.emit(AgentEvent::Freshness {
                    outcome: outcome.into(),
                    target_changed: target,
                    global_changed: global,
                    rechecks,
                });
                return Ok(fresh);
            }
            rechecks += 1;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(fc.recheck_interval_ms)) => {}
                _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
            }
        }
    }

    async fn send(&self, action: &Action, p: &[DevicePoint]) -> Result<(), DeviceError> {
        let d = self.device();
        let c = &self.cancel;
        let first = || {
            p.first()
                .copied()
                .ok_or_else(|| DeviceError::Protocol("action has no point".into()))
        };
        match &action.kind {
            ActionKind::Tap { .. } => d.tap(first()?, c).await,
            ActionKind::DoubleTap { .. } => d.double_tap(first()?, c).await,
            ActionKind::LongPress { duration_ms, .. } => {
                d.long_press(first()?, duration_ms.unwrap_or(800), c).await
            }
            ActionKind::Swipe { duration_ms, .. } => {
                let end = p
                    .get(1)
                    .copied()
                    .ok_or_else(|| DeviceError::Protocol("swipe needs two points".into()))?;
                d.swipe(first()?, end, duration_ms.unwrap_or(400), c).await
            }
            // SPEC P6: the one place a typed secret is real again.
            ActionKind::Type { text } => d.type_text(&self.bus.secrets().reveal(text), c).await,
            ActionKind::Back => d.key(KeyCode::Back, c).await,
            ActionKind::Home => d.key(KeyCode::Home, c).await,
            ActionKind::LaunchApp { name } => Err(DeviceError::CommandFailed {
                command: format!("launch_app {name}"),
                detail: "the app launcher capability is not available on this device layer".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Two-stage finish with guards, staleness and the verifier (F1–F4).
    async fn finish(&mut self, action: &Action, message: String, confirm: bool, obs: &Obs) -> Flow {
        if let Some((guard, msg)) = self.guards.check_finish() {
            self.bus.emit(AgentEvent::FinishRejected {
                by: format!("guard:{guard}"),
                message: msg.clone(),
            });
            self.recover(
                RecoveryOutcome::Replan,
                ErrorCode::ProtocolError,
                Some("finish"),
                &msg,
                false,
            );
            self.reject_turn(action, msg);
            return Flow::Continue;
        }
        if !confirm || self.review.is_none() {
            let package = self.review_package(&message, obs);
            self.review = Some(ReviewState {
                screen_seq: self.screen_seq,
                board: self.memory.task_board.clone(),
                goal: self.task.clone(),
            });
            self.bus.emit(AgentEvent::FinishReview {
                message,
                package: package.clone(),
                screen_seq: self.screen_seq,
            });
            // SPEC M7, F1: the family is told how to confirm in its own grammar.
            let package = match self.family() {
                Some(ad) => format!(
                    "{package}\nIn your answer format the confirming finish is: {}",
                    ad.finish_confirm_example()
                ),
                None => package,
            };
            self.ok_turn(action, package);
            return Flow::Continue;
        }
        let Some(review) = self.review.clone() else {
            return Flow::Continue;
        };
        // F1: re-observe before accepting. The screen may have changed while the model was
        // thinking about the confirm (after this turn's planning frame); a changed frame moves
        // the screen sequence number, which makes the confirm stale below.
        if let Err(f) = self.observe("confirm").await {
            return f;
        }
        // Stale when the screen changed (screen seq), the task board or the goal since the package (F1).
        let stale = review.screen_seq != self.screen_seq
            || review.board != self.memory.task_board
            || review.goal != self.task;
        if stale {
            self.review = None;
            let msg = "Your confirmation is stale: the screen or the task board changed since the review package. \
                       Look at the current screen and call finish again for a new review."
                .to_string();
            self.bus.emit(AgentEvent::FinishRejected {
                by: "stale_confirm".into(),
                message: msg.clone(),
            });
            self.reject_turn(action, msg);
            return Flow::Continue;
        }
        // F2: the independent verifier.
        let run_verifier = match self.cfg().finish_verify {
            FinishVerifyMode::Off => false,
            FinishVerifyMode::Always => true,
            FinishVerifyMode::Auto => {
                phoneagent_review::high_risk_goal(&self.task)
                    || !board_closed(&self.memory.task_board)
            }
        };
        if !run_verifier {
            self.bus.emit(AgentEvent::FinishVerifier {
                verdict: "skipped".into(),
                reason: "not triggered".into(),
            });
            return Self::end(RunStatus::Succeeded, "finish_accepted", message);
        }
        let Some(route) = self.agent.parts.verifier.clone() else {
            self.bus.emit(AgentEvent::FinishVerifier {
                verdict: "skipped".into(),
                reason: "no verifier model configured (fail-open)".into(),
            });
            return Self::end(RunStatus::Succeeded, "finish_accepted", message);
        };
        let verifier = FinishVerifier::new(route.client.clone());
        let route_text: Vec<String> = self
            .memory
            .turns()
            .iter()
            .map(|t| format!("step {}: {} → {}", t.step, t.action, t.result))
            .collect();
        let tail: Vec<_> = self.tail.iter().map(|o| o.shot.clone()).collect();
        let (verdict, resp) = verifier
            .verify(
                &self.task,
                &message,
                &route_text,
                &tail,
                &route.profile.image,
                &self.cancel,
            )
            .await;
        if let Some(resp) = resp {
            self.account(Role::Verifier, CallKind::Verifier, &route, Ok(&resp));
        }
        match verdict {
            VerifierVerdict::Pass(reason) => {
                self.verifier_rejections = 0;
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: "pass".into(),
                    reason,
                });
                Self::end(RunStatus::Succeeded, "finish_accepted", message)
            }
            VerifierVerdict::Skipped(reason) => {
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: "skipped".into(),
                    reason,
                });
                Self::end(RunStatus::Succeeded, "finish_accepted", message)
            }
            VerifierVerdict::Reject(reason) => {
                self.verifier_rejections += 1;
                self.review = None;
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: "reject".into(),
                    reason: reason.clone(),
                });
                if self.verifier_rejections >= 2 {
                    return Self::end(
                        RunStatus::TakenOver,
                        "finish_rejected_twice",
                        "finish repeatedly rejected by the verifier, needs human confirmation",
                    );
                }
                let msg = format!(
                    "The independent verifier rejected your finish: {reason}. Continue the task."
                );
                self.bus.emit(AgentEvent::FinishRejected {
                    by: "verifier".into(),
                    message: msg.clone(),
                });
                self.reject_turn(action, msg);
                Flow::Continue
            }
        }
    }

    fn review_package(&self, message: &str, obs: &Obs) -> String {
        let dispatched = self
            .memory
            .turns()
            .iter()
            .filter(|t| !t.rejected && t.result.contains("done"))
            .count();
        let warnings = self
            .memory
            .turns()
            .iter()
            .filter(|t| t.result.contains("did not visibly change"))
            .count();
        let rejected = self.memory.turns().iter().filter(|t| t.rejected).count();
        let mut s = String::new();
        s.push_str("Review package (finish not yet accepted)\n");
        s.push_str("World facts:\n");
        s.push_str(&format!(
            "- Current screen #{} ({}x{} px); {} steps taken.\n",
            obs.seq, obs.geometry.width_px, obs.geometry.height_px, self.step
        ));
        s.push_str(&format!("- Actions with a visible effect: {dispatched}; without visible change: {warnings}; rejected: {rejected}.\n"));
        s.push_str(&format!("- Your finish message: {message}\n"));
        s.push_str("Route status:\n");
        if self.memory.task_board.is_empty() {
            s.push_str(
                "- No task board: check every part of the task against the current screen.\n",
            );
        } else {
            for it in &self.memory.task_board {
                s.push_str(&format!(
                    "- [{}] {}\n",
                    if it.done { "x" } else { " " },
                    it.text
                ));
            }
            s.push_str(if board_closed(&self.memory.task_board) {
                "- The board is closed.\n"
            } else {
                "- The board is NOT closed.\n"
            });
        }
        s.push_str("Doubts:\n");
        if warnings > 0 {
            s.push_str("- Some actions had no visible effect; make sure they really happened.\n");
        }
        if rejected > 0 {
            s.push_str("- Some actions were rejected and did not run.\n");
        }
        if warnings == 0 && rejected == 0 {
            s.push_str("- None recorded.\n");
        }
        s.push_str("Options:\n");
        s.push_str("  1) If the current screen proves the task is done, call finish again with confirm=true (same message).\n");
        s.push_str("  2) Otherwise continue working on the task.\n");
        s.push_str("  3) If you need the user, use ask_user or take_over.\n");
        s
    }
}

fn board_closed(board: &[TaskItem]) -> bool {
    board.iter().all(|i| i.done)
}
