//! Row types the store reads and writes.

use phoneagent_protocol::AccessMode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Result, StoreError};

pub use phoneagent_protocol::RunStatus;

/// `true` for every status except `running`.
pub(crate) fn is_terminal(s: RunStatus) -> bool {
    !matches!(s, RunStatus::Running)
}

pub(crate) fn parse_status(s: &str) -> Result<RunStatus> {
    Ok(match s {
        "running" => RunStatus::Running,
        "succeeded" => RunStatus::Succeeded,
        "failed" => RunStatus::Failed,
        "cancelled" => RunStatus::Cancelled,
        "taken_over" => RunStatus::TakenOver,
        "interrupted" => RunStatus::Interrupted,
        other => return Err(StoreError::Corrupt(format!("unknown run status {other:?}"))),
    })
}

/// What the runtime knows when a run starts ([`crate::Store::start_run`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    /// The run id (a v4 UUID from [`NewRun::new`] unless the caller has its own).
    pub id: Uuid,
    /// The user's task text, verbatim.
    pub task: String,
    /// Start time, ms since the Unix epoch.
    pub started_ms: i64,
    /// The phone's adb serial, when known.
    pub device_serial: Option<String>,
    /// Name of the actor model profile (`models.json`), when one was used.
    pub model_profile: Option<String>,
    /// The actor model id sent to the endpoint, when known.
    pub model: Option<String>,
    /// Access mode the run was started with (SPEC S1).
    pub access_mode: AccessMode,
    /// Free-form run metadata, exported verbatim under `run.metadata` (e.g. limits, the
    /// `deterministic_app_launch` policy flag, app version). Must not hold secrets.
    pub metadata: serde_json::Value,
}

impl NewRun {
    /// A run with a fresh v4 id, started now, in the default access mode, with no device/model yet.
    pub fn new(task: impl Into<String>) -> Self {
        Self {
            id: Uuid::new_v4(),
            task: task.into(),
            started_ms: now_ms(),
            device_serial: None,
            model_profile: None,
            model: None,
            access_mode: AccessMode::default(),
            metadata: serde_json::Value::Object(serde_json::Map::new()),
        }
    }
}

/// How a run ended ([`crate::Store::finish_run`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// Final status; must be terminal (not `running`).
    pub status: RunStatus,
    /// End time, ms since the Unix epoch.
    pub ended_ms: i64,
    /// Stable termination code (an [`phoneagent_protocol::ErrorCode`] name such as `max_steps`, or
    /// `finished`), when there is one.
    pub termination_code: Option<String>,
    /// Free-form summary JSON (the final message, the verifier's verdict, …).
    pub summary: serde_json::Value,
    /// Total prompt tokens of the run, all roles (SPEC M3).
    pub prompt_tokens: u64,
    /// Total completion tokens of the run, all roles.
    pub completion_tokens: u64,
    /// Total cost in USD when the profile has prices, else `None`.
    pub cost_usd: Option<f64>,
}

/// One run as stored, with counts (from [`crate::Store::run`] / [`crate::Store::list_runs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run id.
    pub id: Uuid,
    /// Task text.
    pub task: String,
    /// Current status.
    pub status: RunStatus,
    /// Start time, ms since the Unix epoch.
    pub started_ms: i64,
    /// End time, ms since the Unix epoch; `None` while running.
    pub ended_ms: Option<i64>,
    /// adb serial.
    pub device_serial: Option<String>,
    /// Actor model profile name.
    pub model_profile: Option<String>,
    /// Actor model id.
    pub model: Option<String>,
    /// Access mode at start.
    pub access_mode: AccessMode,
    /// Stable termination code, when ended.
    pub termination_code: Option<String>,
    /// Summary JSON given at the end (`null` while running).
    pub summary: serde_json::Value,
    /// Metadata given at the start.
    pub metadata: serde_json::Value,
    /// Prompt tokens (from [`RunEnd`]; 0 while running).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost in USD, when known.
    pub cost_usd: Option<f64>,
    /// Number of events recorded.
    pub event_count: u64,
    /// Highest `step` number any event payload carries (`payload.step`), 0 when none does.
    pub step_count: u64,
}

impl RunRecord {
    /// Wall duration in ms (`ended - started`), `None` while running.
    pub fn duration_ms(&self) -> Option<i64> {
        self.ended_ms.map(|e| e.saturating_sub(self.started_ms))
    }
}

/// One recorded event: the store's generic shape of an `AgentEvent` (SPEC T1).
///
/// The store does not interpret `payload` for storage; exports read the kinds documented in
/// [`crate::export`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Sequence number within the run, assigned by the runtime, strictly increasing from 0 or 1.
    pub seq: u64,
    /// When it happened, ms since the Unix epoch.
    pub ts_ms: i64,
    /// Stable event kind (snake_case, e.g. `action_dispatched`).
    pub kind: String,
    /// The event body as JSON.
    pub payload: serde_json::Value,
}

/// A screenshot stored once by content hash ([`crate::Store::put_screenshot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredScreenshot {
    /// Lowercase hex SHA-256 of `bytes` (64 chars).
    pub sha256: String,
    /// MIME type (`image/png`, `image/jpeg`).
    pub mime: String,
    /// Width in px.
    pub width: u32,
    /// Height in px.
    pub height: u32,
    /// The encoded image.
    pub bytes: Vec<u8>,
}

/// A calibration cache entry ([`crate::Store::calibration_get`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationEntry {
    /// The cached value (a frozen coordinate contract), as JSON.
    pub value: serde_json::Value,
    /// When it was stored, ms since the Unix epoch.
    pub created_ms: i64,
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl EventRecord {
    /// The stored form of a runtime event: `kind` = the event's tag, `payload` = the event as
    /// JSON (its `kind` tag included) plus the envelope's `step` number. `seq` and `ts_ms` come
    /// from the envelope.
    pub fn from_envelope(env: &phoneagent_protocol::EventEnvelope) -> Result<Self> {
        let mut payload = serde_json::to_value(&env.event).map_err(StoreError::json(format!(
            "event {} ({})",
            env.seq,
            env.event.kind()
        )))?;
        if let serde_json::Value::Object(map) = &mut payload {
            map.insert("step".into(), serde_json::Value::from(env.step));
        }
        Ok(Self {
            seq: env.seq,
            ts_ms: i64::try_from(env.ts_ms).unwrap_or(i64::MAX),
            kind: env.event.kind().to_owned(),
            payload,
        })
    }

    /// The `step` number stored in the payload (0 when absent).
    pub fn step(&self) -> u32 {
        self.payload
            .get("step")
            .and_then(serde_json::Value::as_u64)
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or(0)
    }

    /// Decodes the payload back into a runtime event, `None` when the kind is unknown to this
    /// build or the payload does not fit it (older/newer writers; exports fall back to raw JSON).
    pub fn to_envelope(&self, run_id: Uuid) -> Option<phoneagent_protocol::EventEnvelope> {
        let mut payload = self.payload.clone();
        let map = payload.as_object_mut()?;
        map.insert("kind".into(), serde_json::Value::String(self.kind.clone()));
        map.remove("step");
        let event = serde_json::from_value(payload).ok()?;
        Some(phoneagent_protocol::EventEnvelope {
            run_id: run_id.to_string(),
            seq: self.seq,
            ts_ms: u64::try_from(self.ts_ms).unwrap_or(0),
            step: self.step(),
            event,
        })
    }
}
