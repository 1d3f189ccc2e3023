//! Shapes that cross the webview boundary besides the protocol's `EventEnvelope`: command
//! arguments and results, channel frames and app events. TypeScript twins are generated into
//! `ui/src/lib/bindings/` by ts-rs (`cargo test -p phoneagent-app export_bindings`), and
//! `scripts/test.sh` fails when the committed files are stale.

use phoneagent_protocol::{AccessMode, RiskTier, RunStatus, TerminationCode};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Names of the app events emitted to the webview.
pub mod event_names {
    /// Every [`phoneagent_protocol::EventEnvelope`] of the running agent.
    pub const AGENT_EVENT: &str = "agent-event";
    /// A run ended ([`super::RunEnded`]).
    pub const RUN_ENDED: &str = "run-ended";
    /// The set of pending human requests changed ([`super::PendingRequest`] list).
    pub const PENDING_CHANGED: &str = "pending-changed";
}

/// A phone in the Devices panel (SPEC U1, D1, D2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DeviceEntry {
    /// adb serial.
    pub serial: String,
    /// `device`, `unauthorized`, `offline` or another adb state.
    pub state: String,
    /// Model name, when adb reports it.
    pub model: Option<String>,
    /// `usb` or `tcp`.
    pub transport: String,
    /// The fix for the state, in plain language (None when usable).
    pub fix: Option<String>,
    /// The adb server (`host:port`) the phone was listed by.
    pub adb_addr: String,
    /// True for the app's own virtual phone.
    pub is_virtual: bool,
}

/// A problem reaching a device source (e.g. no adb server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SourceProblem {
    /// The adb server address.
    pub adb_addr: String,
    /// Stable code (`adb_server_unreachable`, …).
    pub code: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Result of `list_devices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DevicesView {
    /// Phones from every source.
    pub devices: Vec<DeviceEntry>,
    /// Sources that could not be listed.
    pub problems: Vec<SourceProblem>,
    /// The selected phone, if any (`adb_addr`, `serial`).
    pub selected: Option<SelectedDevice>,
    /// The virtual phone, when started.
    pub virtual_phone: Option<VirtualPhone>,
}

/// The phone tasks and the mirror use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SelectedDevice {
    /// adb server `host:port`.
    pub adb_addr: String,
    /// adb serial.
    pub serial: String,
}

/// A demo scenario the app can run without a phone or a model (SPEC C1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DemoScenarioView {
    /// Name (`buy`, `draft-mail`); with `mode` it names the scenario.
    pub name: String,
    /// Access mode the script is written for (`wary`, `approve-for-me`).
    pub mode: AccessMode,
    /// The task the agent is given.
    pub task: String,
    /// What it shows.
    pub about: String,
}

/// The in-process virtual phone (SPEC D7, V1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct VirtualPhone {
    /// Its adb server endpoint, `127.0.0.1:PORT`.
    pub adb_addr: String,
    /// Its serial.
    pub serial: String,
}

/// One readiness check (SPEC D2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct CheckView {
    /// Check name.
    pub name: String,
    /// Passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// How to fix it.
    pub fix: Option<String>,
}

/// One mirror frame announced over the Tauri channel (SPEC U1). Its picture is a JPEG of at
/// most 960 px on the long side at `pa://localhost/mirror/<seq>` (never base64 in the event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct MirrorFrame {
    /// Frame number since the mirror started (only frames showing a new screen count).
    #[ts(type = "number")]
    pub seq: u64,
    /// Device width px.
    pub width: u32,
    /// Device height px.
    pub height: u32,
    /// Device capture time of a polled screenshot, ms (0 for a stream frame).
    pub capture_ms: u32,
    /// Protected window (black frame).
    pub blocked: bool,
    /// Wall clock when the frame was on this computer (decoded or captured), ms since the
    /// epoch; the view measures frame-to-screen latency against it.
    #[ts(type = "number")]
    pub ts_ms: u64,
    /// Time from then until the frame was announced (JPEG encoding), ms.
    pub host_ms: u32,
    /// From the live stream (`true`) or a polled screenshot.
    pub live: bool,
}

/// What the mirror sends over its channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MirrorMessage {
    /// The capture and input paths in use (SPEC D8, D9): sent first and when they change.
    Paths {
        /// `scrcpy 3.x`, `screenrecord`, `raw` or `png`.
        capture: String,
        /// `scrcpy control` or `shell input`.
        input: String,
        /// Why the faster path is not in use and how to get it.
        note: Option<String>,
    },
    /// A frame.
    Frame {
        /// The frame.
        frame: MirrorFrame,
    },
    /// Capturing failed; the mirror retries.
    Error {
        /// Stable code.
        code: String,
        /// Message.
        message: String,
    },
}

/// Arguments of `start_run` (SPEC U2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct StartRunRequest {
    /// The task in the user's words.
    pub task: String,
    /// Actor profile name; empty = the settings' actor role.
    pub profile: String,
    /// Step limit, 1..=500.
    pub max_steps: u32,
    /// `off`, `wary`, `hard` or `reviewer`.
    pub mode: String,
}

/// A run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct RunStarted {
    /// The serial the run drives.
    pub serial: String,
}

/// How a run ended (the `run-ended` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct RunEnded {
    /// Run id (empty when the run could not start).
    pub run_id: String,
    /// The serial of the phone the run drove (several phones run at once, issue #13).
    pub serial: String,
    /// How it ended; `failed` with `internal` when the run ended without an outcome.
    pub status: RunStatus,
    /// Why it ended.
    pub termination_code: TerminationCode,
    /// Final message or error.
    pub message: String,
}

/// A phone that has a run, running or finished (command `active_runs`; the Run view shows a
/// panel for each, issue #13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PhoneRunView {
    /// adb server `host:port` of the phone (or a direct transport).
    pub adb_addr: String,
    /// Its serial.
    pub serial: String,
    /// The run that is running there, else the last one that ran; `None` while a run starts.
    pub run_id: Option<String>,
    /// A run is running there now.
    pub busy: bool,
    /// That run is paused.
    pub paused: bool,
    /// Requests of that run waiting for a human.
    pub pending: u32,
}

/// What a pending human request asks for (SPEC S8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// Approve or reject a gated action.
    Approval,
    /// Answer the model's question.
    AskUser,
    /// Take the phone over.
    TakeOver,
}

/// A human request waiting for an answer (SPEC U4, S8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PendingRequest {
    /// Request id; answers must name it.
    pub id: String,
    /// What is asked.
    pub kind: RequestKind,
    /// Tool (approvals).
    pub tool: Option<String>,
    /// Redacted target (approvals).
    pub target: Option<String>,
    /// Tier (approvals).
    pub tier: Option<RiskTier>,
    /// Gate reasons (approvals).
    pub reasons: Vec<String>,
    /// The question (ask_user) or the instruction (take_over).
    pub text: Option<String>,
    /// The run's task.
    pub task: String,
    /// Expiry, ms since the epoch.
    #[ts(type = "number")]
    pub expires_at_ms: u64,
}

/// Whether a keyring entry holds a key (the key itself is never returned; SPEC P5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct KeyStatus {
    /// Keyring entry name.
    pub entry: String,
    /// A key is stored.
    pub present: bool,
    /// Set when the keyring could not be read.
    pub error: Option<String>,
}

/// A past run in History (SPEC U6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct RunSummary {
    /// A labelled demo (virtual phone + scripted model), not a real run.
    pub demo: bool,
    /// Run id.
    pub id: String,
    /// Task.
    pub task: String,
    /// Status.
    pub status: RunStatus,
    /// Start ms since epoch.
    #[ts(type = "number")]
    pub started_ms: i64,
    /// Duration ms (None while running).
    #[ts(type = "number | null")]
    pub duration_ms: Option<i64>,
    /// Serial.
    pub serial: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Access mode.
    pub mode: AccessMode,
    /// Why it ended (none while running, or for a stored code this version does not know).
    pub termination_code: Option<TerminationCode>,
    /// Steps.
    #[ts(type = "number")]
    pub steps: u64,
    /// Prompt + completion tokens.
    #[ts(type = "number")]
    pub tokens: u64,
    /// Cost USD.
    pub cost_usd: Option<f64>,
}

/// Result of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ExportResult {
    /// Absolute path of the written file.
    pub path: String,
    /// Bytes written.
    #[ts(type = "number")]
    pub bytes: u64,
}

/// An approval ledger row (SPEC U6, AR8), from the store's ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct LedgerRow {
    /// `gate:<seq>` or the human request id.
    pub request_id: String,
    /// `gate`, `approval`, `ask_user`, `take_over`.
    pub kind: String,
    /// Step.
    pub step: u32,
    /// Time ms since the epoch.
    #[ts(type = "number")]
    pub ts_ms: i64,
    /// Tool.
    pub tool: Option<String>,
    /// Tier.
    pub tier: Option<String>,
    /// Gate outcome, `pending`, or the human response type.
    pub decision: String,
    /// Who decided.
    pub decided_by: Option<String>,
    /// Latency ms.
    #[ts(type = "number | null")]
    pub latency_ms: Option<u64>,
}

/// Where the app keeps its data (shown in Settings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AppInfo {
    /// SQLite file.
    pub db_path: String,
    /// App version.
    pub version: String,
    /// Directory exports go to.
    pub export_dir: String,
}

/// A provider preset as Settings' picker shows it (SPEC M8): what choosing it fills into a
/// profile. From `phoneagent_llm::presets::PRESETS`, never a list kept in TypeScript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ProviderPresetView {
    /// Stable id (`vllm`, `openrouter`, …).
    pub id: String,
    /// Name for people.
    pub name: String,
    /// API root including the version path.
    pub base_url: String,
    /// Example model ids; the first is filled in.
    pub models: Vec<String>,
    /// `auto` or a family name (SPEC M7).
    pub family: String,
    /// `do` or `tools`.
    pub protocol: String,
    /// Long side of the sent screenshot, px.
    pub image_max_long_side: u32,
    /// Side multiple of the sent screenshot, px (0 = none).
    pub image_multiple_of: u32,
    /// Keyring entry of its API key; empty for local servers without one.
    pub key_entry: String,
    /// One line on how to point PhoneAgent at it.
    pub hint: String,
}

/// A model family the profile's family picker offers (SPEC M7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct FamilyOption {
    /// `generic`, `autoglm`, `ui_tars`, `qwen_vl`.
    pub id: String,
    /// Which models it covers.
    pub about: String,
}

/// The presets and families Settings offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ModelCatalog {
    /// Every provider preset, in a stable order.
    pub presets: Vec<ProviderPresetView>,
    /// Every model family.
    pub families: Vec<FamilyOption>,
}

/// The family a profile talks in (SPEC M7), as detected or set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct FamilyView {
    /// The family in force.
    pub family: String,
    /// True when detected from the model name (the profile says `auto`).
    pub detected: bool,
    /// Its coordinate convention (`relative_0_999`, `relative_0_1000`, `smart_resize`), or empty
    /// for `generic` (the profile's coordinate space applies).
    pub coordinates: String,
}

/// One step of a connection test (SPEC M1, M4, M7, M8; `phoneagent_llm::connection_test`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ConnectionStepView {
    /// `reachable`, `key_accepted`, `model_listed`, `vision_answered`, `family_grammar`,
    /// `coordinate_contract`.
    pub id: String,
    /// `ok`, `failed` or `skipped`.
    pub status: String,
    /// What happened (English; the UI translates the step title only).
    pub detail: String,
    /// What to do, when it failed.
    pub fix: Option<String>,
    /// The first 160 characters of what the model answered, inert (no control characters).
    pub sample: Option<String>,
}

/// The result of Settings' Test connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ConnectionTestView {
    /// No step failed.
    pub ok: bool,
    /// The family in force and how it was decided.
    pub family: String,
    /// Every step, in order.
    pub steps: Vec<ConnectionStepView>,
}

/// Whether the actor profile can start a task (issue #14 item 3: else Start opens the setup).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SetupStatus {
    /// The profile checked.
    pub profile: String,
    /// It has a base URL and a model, and its key when it names a keyring entry.
    pub usable: bool,
    /// Why not: `no_profile`, `no_endpoint`, `no_key`, `invalid`, or empty when usable.
    pub reason: String,
    /// The backend's sentence (for Details).
    pub message: String,
}
