//! The `AgentEvent` stream: the one audit history of a run (SPEC P3, S9, T1, T2).
//!
//! The runtime emits every fact of a run as an [`EventEnvelope`]; the CLI, the desktop app, the
//! web console and the store consume the same stream, and the trajectory export (schema `1.3`)
//! is derived from it. Events never carry secrets (SPEC P5) and screenshots are referenced by
//! content hash (sha256 hex), never inlined.

use serde::{Deserialize, Serialize};

use crate::action::{Action, TaskItem};
use crate::error::ErrorCode;
use crate::geometry::{CoordinateSpace, DevicePoint, ModelPoint, RuntimePoint};
use crate::safety::{AccessMode, RiskTier};

/// Trajectory schema version written by exports (SPEC T2).
pub const TRAJECTORY_SCHEMA_VERSION: &str = "1.3";

/// One event with its place in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct EventEnvelope {
    /// Run id (uuid).
    pub run_id: String,
    /// Sequence number within the run, from 0, gap-free.
    pub seq: u64,
    /// Wall-clock time, ms since the Unix epoch.
    pub ts_ms: u64,
    /// Step number (1-based; 0 before the first step).
    pub step: u32,
    /// The event.
    #[serde(flatten)]
    pub event: AgentEvent,
}

/// Live phase of the agent (SPEC R2). Every recoverable path returns in `Observing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum Phase {
    /// Not running.
    Idle,
    /// Taking a screenshot.
    Observing,
    /// Negotiating the coordinate contract.
    Calibrating,
    /// Waiting on the planning model.
    Planning,
    /// Safety gate / reviewer.
    Gating,
    /// Waiting for a human (approval, ask_user, take_over).
    AwaitingHuman,
    /// Sending a device command.
    Executing,
    /// Comparing pixels after a command.
    Verifying,
    /// Choosing a recovery.
    Recovering,
    /// The device vanished; waiting for the same serial (D6).
    DeviceLost,
    /// Paused by the user: no further device command until resumed (the run state is kept).
    Paused,
    /// Terminal: the task was completed and accepted.
    Succeeded,
    /// Terminal: failed (limits, errors).
    Failed,
    /// Terminal: cancelled by the user.
    Cancelled,
    /// Terminal: handed to a human (accepted take_over, repeated verifier rejection, loop).
    TakenOver,
}

impl Phase {
    /// True for the terminal phases.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Cancelled | Self::TakenOver
        )
    }
}

/// The trajectory policy block (SPEC T2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct TrajectoryPolicy {
    /// Always `"screenshot_only"`.
    pub policy_observation: String,
    /// Always false: no Android semantics reach any model (SPEC P1).
    pub android_semantics_visible_to_model: bool,
    /// True only when the opt-in app launcher capability is on (SPEC D5).
    pub deterministic_app_launch: bool,
    /// Always false.
    pub external_api_action: bool,
}

impl TrajectoryPolicy {
    /// The pure-vision policy, with the app launcher on or off.
    pub fn pure_vision(app_launcher: bool) -> Self {
        Self {
            policy_observation: "screenshot_only".into(),
            android_semantics_visible_to_model: false,
            deterministic_app_launch: app_launcher,
            external_api_action: false,
        }
    }
}

/// A model coordinate mapped through the contract (SPEC M5): all four representations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct MappedPoint {
    /// As the model emitted it.
    pub model: ModelPoint,
    /// Canonical `[0,1]` on each axis.
    pub canonical: [f64; 2],
    /// Runtime protocol space `0..=999`.
    pub runtime: RuntimePoint,
    /// Device pixels of the current orientation.
    pub device: DevicePoint,
}

/// Who made a gate or approval decision (SPEC S9, AR8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum DecidedBy {
    /// The deterministic rules of the gate.
    Rule,
    /// The reversibility reviewer model.
    Reviewer,
    /// The approve-for-me reviewer model.
    AutoReviewer,
    /// A person.
    Human,
    /// A configured default (e.g. `--on-approval reject` with no terminal).
    Policy,
}

/// Outcome of the safety gate for one call (SPEC S1, S5–S7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum GateOutcome {
    /// Run the call.
    Allow,
    /// Not run; a warning receipt went back to the model (wary/reviewer).
    Warned,
    /// Waiting for an approval.
    NeedsApproval,
    /// Approved by a human or the auto-reviewer.
    Approved,
    /// Rejected by a human or the auto-reviewer.
    Rejected,
    /// Blocked by a negated task boundary, with zero touches (S4).
    BlockedByTaskBoundary,
}

/// What a human is asked for (SPEC S8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum HumanRequestKind {
    /// Approve or reject a gated call.
    Approval {
        /// Tool name.
        tool: String,
        /// Redacted target summary.
        target: String,
        /// Tier that triggered it.
        tier: RiskTier,
        /// Gate reasons (codes).
        reasons: Vec<String>,
        /// The gate's own reading of the screen at the target (SPEC S10, S14): the text under
        /// the tap point and its dialog, as read from the planning frame's pixels, redacted.
        /// `None` when nothing was read (no OCR engine, or not a touch).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        screen: Option<String>,
        /// The model's own `reason` for the call, redacted — untrusted, shown labelled as the
        /// model's (SPEC S14).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        model_reason: Option<String>,
    },
    /// A question from the model; the answer returns verbatim.
    AskUser {
        /// The question.
        question: String,
    },
    /// The model asks a human to operate the phone.
    TakeOver {
        /// What the human should do.
        message: String,
    },
}

impl HumanRequestKind {
    /// The answers this request takes, as [`HumanResponse::kind_name`]s (issue #13: one
    /// contract for every front end; the registry refuses any other). `reject` on `ask_user`
    /// is "Skip": the question is left unanswered and the model is told so.
    pub fn allowed_responses(&self) -> &'static [&'static str] {
        match self {
            Self::Approval { .. } => &["approve", "reject"],
            Self::AskUser { .. } => &["answer", "reject"],
            Self::TakeOver { .. } => &["approve", "reject", "hand_back"],
        }
    }
}

/// How a human request was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum HumanResponse {
    /// Approve (approval) / accept (take_over: the human finished the job; terminal).
    Approve,
    /// Reject; nothing runs.
    Reject {
        /// Optional note for the model.
        note: Option<String>,
    },
    /// Free-text answer to `ask_user`.
    Answer {
        /// Verbatim.
        text: String,
    },
    /// After a take_over: the human hands the phone back and the run goes on.
    HandBack,
}

impl HumanResponse {
    /// The wire name of this answer's kind (`approve`, `reject`, `answer`, `hand_back`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject { .. } => "reject",
            Self::Answer { .. } => "answer",
            Self::HandBack => "hand_back",
        }
    }
}

/// Verification facts after a dispatched command (SPEC R4). Kept separate on purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct VerificationFacts {
    /// A command was sent to the device.
    pub dispatched: bool,
    /// The command reported success.
    pub command_ok: bool,
    /// The screen changed meaningfully.
    pub observable_effect: bool,
    /// Fraction of sampled pixels that changed, `0.0..=1.0`.
    pub changed_fraction: f64,
    /// Non-blocking warnings (e.g. `no_visible_change`).
    pub warnings: Vec<String>,
}

/// Recovery outcomes (SPEC R5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum RecoveryOutcome {
    /// Ask the model again on a fresh observation.
    Replan,
    /// Take a new screenshot without asking the model.
    Reobserve,
    /// Retry a safe action (only Wait and Home).
    RetrySafeAction,
    /// Ask a human to take over.
    RequestTakeover,
    /// End the run.
    Abort,
}

/// One probe of coordinate calibration (SPEC M4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct CalibrationProbe {
    /// Target centre in image pixels of the probe image.
    pub target_px: [f64; 2],
    /// What the model answered (raw).
    pub answer: Option<[f64; 2]>,
    /// Error in image px under the candidate space, if parsed.
    pub error_px: Option<f64>,
}

/// Terminal status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum RunStatus {
    /// In progress.
    Running,
    /// Finished and accepted.
    Succeeded,
    /// Ended by an error or a limit.
    Failed,
    /// Cancelled by the user.
    Cancelled,
    /// Handed over to a human.
    TakenOver,
    /// Found `running` at start-up after a crash (SPEC T1).
    Interrupted,
}

impl RunStatus {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::TakenOver => "taken_over",
            Self::Interrupted => "interrupted",
        }
    }
}

/// Token/cost summary (SPEC M3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct TokenTotals {
    /// Prompt tokens, all roles.
    pub prompt_tokens: u64,
    /// Completion tokens, all roles.
    pub completion_tokens: u64,
    /// Cost in USD (0 when prices are unknown).
    pub cost_usd: f64,
    /// Number of model calls.
    pub calls: u64,
}

/// Every fact of a run. Serialized with a `kind` tag in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum AgentEvent {
    /// The run began.
    RunStarted {
        /// The user's task.
        task: String,
        /// ADB serial.
        serial: String,
        /// Actor profile name.
        profile: String,
        /// Actor model name.
        model: String,
        /// Endpoint base URL (never a key).
        base_url: String,
        /// `do` or `tools`.
        protocol: String,
        /// Access mode of this run.
        mode: AccessMode,
        /// Step limit.
        max_steps: u32,
        /// Wall-time limit in ms.
        max_duration_ms: u64,
        /// Trajectory policy block.
        policy: TrajectoryPolicy,
        /// True when the run is a labelled demo on the virtual phone.
        demo: bool,
    },
    /// The live phase changed (SPEC R2).
    Phase {
        /// New phase.
        phase: Phase,
    },
    /// A role fell back to the next model in its chain (SPEC M2).
    ModelFallback {
        /// Role that fell back.
        role: String,
        /// What was asked for.
        requested: Option<String>,
        /// What is used.
        used: String,
        /// Why.
        reason: String,
    },
    /// Coordinate contract decision (SPEC M4).
    CoordinateCalibration {
        /// How it was settled.
        method: crate::outcome::CalibrationMethod,
        /// Frozen space (absent when rejected).
        space: Option<CoordinateSpace>,
        /// Probes with errors (negotiated/rejected).
        probes: Vec<CalibrationProbe>,
        /// Human-readable detail.
        detail: String,
    },
    /// A screenshot was taken.
    Observation {
        /// sha256 hex of the PNG (in the store's screenshots table).
        screenshot: String,
        /// Width px.
        width: u32,
        /// Height px.
        height: u32,
        /// All-black/blank frame (protected window).
        blocked: bool,
        /// Monotonic screen sequence number of this run.
        screen_seq: u64,
        /// Capture time ms.
        capture_ms: u32,
        /// Why it was taken.
        purpose: crate::outcome::ObservationPurpose,
    },
    /// A model call was made.
    ModelCall {
        /// Role (`actor`, `verifier`, `safety_reviewer`, `auto_reviewer`).
        role: String,
        /// Call kind (`planning`, `protocol_retry`, `calibration`, `verify`, `review`, `extra_confirmation`).
        call_kind: String,
        /// Model name.
        model: String,
        /// Prompt tokens (reported or estimated).
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// Cost USD.
        cost_usd: f64,
        /// Latency ms.
        latency_ms: u64,
        /// The answer text (content), for audit.
        content: String,
        /// Reasoning text when separated.
        reasoning: Option<String>,
        /// Error code when the call failed.
        error: Option<ErrorCode>,
        /// Totals of the run after this call.
        run_totals: TokenTotals,
    },
    /// The model's answer did not parse/validate (SPEC A2–A5).
    ProtocolRejected {
        /// Attempt within the step (1 = first answer, 2 = after the retry).
        attempt: u32,
        /// Stable kind of the parse error.
        error_kind: String,
        /// The message the model is told.
        message: String,
    },
    /// A valid action was proposed.
    ActionProposed {
        /// The action.
        action: Action,
        /// Coordinate mapping of each point (element, or start and end).
        points: Vec<MappedPoint>,
    },
    /// The gate's own reading of the planning frame around a gated action (SPEC S10): recorded
    /// before the gate decision it fed. Never shown to the planning model.
    ScreenRead {
        /// The tool the reading is for.
        tool: String,
        /// The point read at, device px (the tap point; for `type_text` the last touch).
        point: Option<DevicePoint>,
        /// What was read.
        reading: crate::ScreenReading,
    },
    /// The safety gate decided (SPEC S9).
    GateDecision {
        /// Tool.
        tool: String,
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// Mode in force.
        mode: AccessMode,
        /// What happened.
        outcome: GateOutcome,
        /// Who decided.
        decided_by: DecidedBy,
        /// Decision latency ms.
        latency_ms: u64,
        /// The warning receipt returned to the model, if any.
        receipt: Option<String>,
    },
    /// A human was asked (SPEC S8).
    HumanRequested {
        /// Request id (validated on answer).
        request_id: String,
        /// What is asked.
        request: HumanRequestKind,
        /// Expiry, ms since epoch.
        expires_at_ms: u64,
        /// The answers it takes ([`HumanRequestKind::allowed_responses`]); the request is
        /// registered before this event is sent, so an answer may follow at once.
        #[serde(default)]
        allowed_responses: Vec<String>,
    },
    /// The human answered (or the request expired / was decided by policy).
    HumanResolved {
        /// Request id.
        request_id: String,
        /// The answer.
        response: HumanResponse,
        /// Who/what answered.
        decided_by: DecidedBy,
        /// Wait time ms.
        latency_ms: u64,
    },
    /// Visual freshness check before dispatch (SPEC R3).
    Freshness {
        /// What the check found.
        outcome: crate::outcome::FreshnessOutcome,
        /// Changed fraction in the target region.
        target_changed: f64,
        /// Changed fraction of the whole screen.
        global_changed: f64,
        /// Rechecks done.
        rechecks: u32,
    },
    /// A command was sent to the device.
    ActionDispatched {
        /// Action type.
        action_type: String,
        /// Device points used.
        device_points: Vec<DevicePoint>,
        /// Command succeeded.
        command_ok: bool,
        /// Error code when not.
        error: Option<ErrorCode>,
        /// Error message when not.
        message: Option<String>,
        /// Duration ms.
        duration_ms: u64,
    },
    /// Post-dispatch verification (SPEC R4).
    Verification(VerificationFacts),
    /// Recovery chosen (SPEC R5).
    Recovery {
        /// Outcome.
        outcome: RecoveryOutcome,
        /// Root error code.
        code: ErrorCode,
        /// Action type involved.
        action_type: Option<String>,
        /// Hard failures so far.
        hard_failures: u32,
        /// Soft replans so far.
        soft_replans: u32,
        /// Detail.
        detail: String,
    },
    /// The device vanished (SPEC D6).
    DeviceLost {
        /// Serial.
        serial: String,
        /// Detail.
        detail: String,
    },
    /// The same serial came back.
    DeviceRestored {
        /// Serial.
        serial: String,
        /// Waited ms.
        waited_ms: u64,
    },
    /// The capture and input paths the run uses (SPEC D8, D9): emitted before the first step
    /// and again whenever they change (a stream that died: `scrcpy 3.3.4` → `raw`).
    DevicePaths {
        /// `scrcpy VERSION`, `screenrecord`, `raw` or `png`.
        capture: String,
        /// `scrcpy control` or `shell input`.
        input: String,
        /// Why the faster path is not used (a stream that died, scrcpy-server not found), if so.
        note: Option<String>,
    },
    /// The model wrote a note / updated its task board.
    Note {
        /// Text.
        message: String,
        /// Board after the note.
        task_board: Vec<TaskItem>,
    },
    /// First-stage finish: the review package returned to the model (SPEC F1).
    FinishReview {
        /// The model's message.
        message: String,
        /// The review package text.
        package: String,
        /// Screen seq the package is bound to.
        screen_seq: u64,
    },
    /// A finish was refused (stale confirm, guard, verifier).
    FinishRejected {
        /// `stale_confirm`, `guard:<name>`, `verifier`, `no_review_package`.
        by: String,
        /// Message returned to the model.
        message: String,
    },
    /// Finish verifier verdict (SPEC F2).
    FinishVerifier {
        /// The verdict.
        verdict: crate::outcome::VerifierVerdict,
        /// Reason.
        reason: String,
    },
    /// A task guard is active (SPEC F4).
    GuardActive {
        /// Guard name.
        guard: String,
    },
    /// A result returned to the model as a tool result (receipt, skip, answer…).
    ToolResult {
        /// Tool.
        tool: String,
        /// Success or refusal.
        status: crate::outcome::ToolStatus,
        /// Text the model sees.
        text: String,
    },
    /// One approval request of the approve-for-me mode, as finally decided: one ledger row
    /// (SPEC AR8). See [`crate::approval::ApprovalReview`].
    ApprovalReview(crate::approval::ApprovalReview),
    /// A non-fatal warning.
    Warning {
        /// Code.
        code: String,
        /// Message.
        message: String,
    },
    /// The run ended.
    RunFinished {
        /// Status.
        status: RunStatus,
        /// Why it ended (`finish_accepted`, `max_steps`, `cancelled`, …).
        termination_code: crate::outcome::TerminationCode,
        /// Final message (the model's finish message or the error).
        message: String,
        /// Steps taken.
        steps: u32,
        /// Duration ms.
        duration_ms: u64,
        /// Token totals.
        tokens: TokenTotals,
        /// Hard failures.
        hard_failures: u32,
        /// Soft replans.
        soft_replans: u32,
    },
}

impl AgentEvent {
    /// The `kind` tag of this event.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "run_started",
            Self::Phase { .. } => "phase",
            Self::ModelFallback { .. } => "model_fallback",
            Self::CoordinateCalibration { .. } => "coordinate_calibration",
            Self::Observation { .. } => "observation",
            Self::ModelCall { .. } => "model_call",
            Self::ProtocolRejected { .. } => "protocol_rejected",
            Self::ActionProposed { .. } => "action_proposed",
            Self::GateDecision { .. } => "gate_decision",
            Self::ScreenRead { .. } => "screen_read",
            Self::HumanRequested { .. } => "human_requested",
            Self::HumanResolved { .. } => "human_resolved",
            Self::Freshness { .. } => "freshness",
            Self::ActionDispatched { .. } => "action_dispatched",
            Self::Verification(_) => "verification",
            Self::Recovery { .. } => "recovery",
            Self::DeviceLost { .. } => "device_lost",
            Self::DeviceRestored { .. } => "device_restored",
            Self::DevicePaths { .. } => "device_paths",
            Self::Note { .. } => "note",
            Self::FinishReview { .. } => "finish_review",
            Self::FinishRejected { .. } => "finish_rejected",
            Self::FinishVerifier { .. } => "finish_verifier",
            Self::GuardActive { .. } => "guard_active",
            Self::ToolResult { .. } => "tool_result",
            Self::ApprovalReview(_) => "approval_review",
            Self::Warning { .. } => "warning",
            Self::RunFinished { .. } => "run_finished",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_matches_serde_tag() {
        let e = AgentEvent::Phase {
            phase: Phase::Observing,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], e.kind());
        let env = EventEnvelope {
            run_id: "r".into(),
            seq: 3,
            ts_ms: 1,
            step: 2,
            event: e,
        };
        let s = serde_json::to_string(&env).unwrap();
        let back: EventEnvelope = serde_json::from_str(&s).unwrap();
        assert_eq!(back, env);
    }

    #[test]
    fn verification_serializes_flat() {
        let e = AgentEvent::Verification(VerificationFacts {
            dispatched: true,
            command_ok: true,
            observable_effect: false,
            changed_fraction: 0.0,
            warnings: vec!["no_visible_change".into()],
        });
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "verification");
        assert_eq!(v["observable_effect"], false);
    }
}
