//! The [`Agent`] and its loop (SPEC R1–R7, F1–F3, S8, D6).
//!
//! One loop step: observe → (negotiate contract) → build the pure-vision context → model →
//! parse/validate/map (one bounded protocol retry) → safety gate / approvals → freshness re-check
//! → dispatch → re-observe and compare pixels → verify / recover → on finish: acceptance.
//! The [`AgentEvent`] stream is the one audit history; `AgentState` is the one live phase.
//!
//! This file is the run's core: the public types, the [`Agent`] and its setters, the `Run`
//! state, and the helpers every room uses (phases, events, pauses, recovery, model-call
//! accounting, gate decisions, turns). The rooms, each an `impl Run` over that core:
//! `run` (open, limits, the turn, close), `step` (the step API), `observe`, `plan`, `act`,
//! `gate`, `screen_gate`, `approve_for_me`, `human`, `dispatch` (freshness, dispatch,
//! verification) and `finish`.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phoneagent_device::{Device, Screenshot};
use phoneagent_llm::calibration::CalibrationCache;
use phoneagent_llm::config::{ActionProtocol, ModelFallback, Profile, ResolvedModel, Role};
use phoneagent_llm::ledger::{CallKind, TokenLedger};
use phoneagent_llm::{ChatResponse, LlmError, ModelClient};
use phoneagent_protocol::event::{DecidedBy, GateOutcome, RecoveryOutcome};
use phoneagent_protocol::{
    Action, AgentEvent, CoordinateSpace, ErrorCode, EventEnvelope, Phase, RiskTier, RunStatus,
    ScreenGeometry, TaskItem, TerminationCode, ToolStatus,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::adapters::{self, Prepared};
use crate::approver::Approver;
use crate::config::AgentConfig;
use crate::control::PauseHandle;
use crate::events::{EventBus, RunRecorder};
use crate::guards::TaskGuards;
use crate::memory::{Memory, Turn, summarize_action};

mod act;
mod approve_for_me;
mod dispatch;
mod finish;
mod gate;
mod human;
mod observe;
mod plan;
mod run;
mod screen_gate;
mod step;

pub use step::{StepOutcome, StepSession};

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
    /// Why it ended (`finish_accepted`, `max_steps`, `cancelled`, …).
    pub termination_code: TerminationCode,
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
    End(RunStatus, TerminationCode, String),
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

    fn outcome(&self, status: RunStatus, code: TerminationCode, message: String) -> RunOutcome {
        RunOutcome {
            run_id: self.bus_run_id(),
            status,
            termination_code: code,
            message,
            steps: self.step,
            duration_ms: self.started.elapsed().as_millis() as u64,
        }
    }

    fn bus_run_id(&self) -> String {
        self.agent.state().run_id.unwrap_or_default()
    }

    fn end(
        status: RunStatus,
        code: impl Into<TerminationCode>,
        message: impl Into<String>,
    ) -> Flow {
        Flow::End(status, code.into(), message.into())
    }

    fn cancelled_flow(&self) -> Flow {
        Self::end(
            RunStatus::Cancelled,
            ErrorCode::Cancelled,
            "cancelled by the user",
        )
    }

    fn budget_exhausted(&self) -> bool {
        self.ledger.exhausted()
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

    /// Tell the model what became of `action` (a tool result) and remember the turn.
    fn record_turn(&mut self, action: &Action, result: String, rejected: bool) {
        self.bus.emit(AgentEvent::ToolResult {
            tool: action.kind.name().into(),
            status: if rejected {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            },
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
}
