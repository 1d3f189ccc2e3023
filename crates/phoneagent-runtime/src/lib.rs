//! # phoneagent-runtime
//!
//! The agent runtime (SPEC R1–R7, F1–F4, S8, D6, P1–P4): [`Agent`] runs one task at a time on
//! one [`phoneagent_device::Device`], planning with a [`phoneagent_llm::ModelClient`], gating
//! executing calls through `phoneagent-safety`, asking humans through an [`Approver`], and
//! recording every fact as an [`phoneagent_protocol::AgentEvent`] through a [`RunRecorder`].
//!
//! Code map:
//! * `agent` — the loop, `AgentState`, freshness, dispatch, verification, recovery, finish;
//!   `run` and the step API (`start_steps` → `StepSession`). The core is `agent.rs`; its rooms
//!   are `agent/{run,step,observe,plan,act,gate,human,dispatch,finish,screen_gate,approve_for_me}.rs`.
//! * `control` — the pause/resume switch (`PauseHandle`).
//! * `session` — one phone's `Session` (SPEC A7): `Op`s in, events out; owns the run task,
//!   busy state, pending requests, pause and auto-review, and limits what a delegate may do.
//! * `memory` — task memory and the pure-vision sanitizers (P1, R6).
//! * `prompt` — the actor's system prompt and history messages (the only place they are built).
//! * `adapters` — the seams to the protocol parser, the coordinate mapper, the image sizing
//!   and the safety gate.
//! * `guards` — task guards (F4). `pixels` — pixel diffs. `approver` — human interrupts.
//! * `events` — the event bus and the recorder trait; `store_recorder` — the SQLite recorder.
//!
//! Cost accounting: each CPU phase of a step (image preparation, pixel diffs, screenshot
//! storage, event commits, request building, parsing, gating) runs inside a TRACE-level span
//! with target [`PHASE_TARGET`] named after the phase; the device crate (`png_decode`) and the
//! model client (`request_encode`, `image_resize`, `image_encode`) use the same target. Disabled
//! spans cost one atomic load; `benches/step_overhead.rs` sums their busy time per phase.

/// An entered TRACE span with target [`PHASE_TARGET`] timing one CPU phase of a step; hold the
/// guard for the phase (never across an `.await`).
macro_rules! phase {
    ($name:literal) => {
        tracing::trace_span!(target: "phoneagent::phase", $name).entered()
    };
}
pub(crate) use phase;

mod adapters;
mod agent;
pub mod approver;
pub mod config;
pub mod control;
pub mod events;
pub mod guards;
pub mod memory;
pub mod pixels;
pub mod prompt;
pub mod secrets;
pub mod session;
pub mod store_recorder;

pub use agent::{Agent, AgentParts, AgentState, ModelRoute, RunOutcome, StepOutcome, StepSession};
pub use approver::{Approver, HumanRequest, PendingApprovals, PolicyApprover, map_free_text};
pub use config::{
    AgentConfig, FinishVerifyMode, FreshnessConfig, Lang, SettleUntilStill, StreamSettle,
};
pub use control::PauseHandle;
pub use events::{EventBus, NullRecorder, RunMeta, RunRecorder};
pub use phoneagent_llm::config::ActionProtocol;
pub use session::{Ack, Delegation, Session, SessionError, SessionParts, SessionStatus, Submitter};

/// The `tracing` target of the per-phase cost spans (see the crate docs).
pub const PHASE_TARGET: &str = "phoneagent::phase";

/// Errors before a run starts (everything during a run ends in a `RunOutcome`).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A task is already running on this agent (R2).
    #[error("a task is already running on this agent: wait for it to finish or cancel it")]
    Busy,
    /// The run could not be recorded.
    #[error("could not record the run: {0}")]
    Store(String),
    /// The task is longer than [`AgentConfig::max_task_chars`]; refused before the phone, the
    /// model or the store is touched (issue #11 item 8).
    #[error(
        "the task is {chars} characters long, over the limit of {limit} characters: shorten it to at most {limit} characters"
    )]
    TaskTooLong {
        /// Length of the task, in characters (Unicode scalar values).
        chars: usize,
        /// The limit, in characters.
        limit: usize,
    },
}

/// Default of [`AgentConfig::max_task_chars`]: a sane size for a task typed or pasted by a
/// person, in characters.
pub const DEFAULT_MAX_TASK_CHARS: usize = 4000;

/// Default largest model answer accepted, bytes (64 KiB: a long `<think>` block and an
/// action fit many times over; [`config::AgentConfig::max_answer_bytes`]).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How much of an over-long answer is recorded, bytes (the rest is dropped, never stored).
pub const ANSWER_HEAD_BYTES: usize = 2048;

/// Refuse a task longer than `limit` characters (Unicode scalar values).
///
/// # Errors
/// [`RuntimeError::TaskTooLong`] naming the size and the limit.
pub fn check_task_size(task: &str, limit: usize) -> Result<(), RuntimeError> {
    let chars = task.chars().count();
    if chars > limit {
        return Err(RuntimeError::TaskTooLong { chars, limit });
    }
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// sha256 hex of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The safety gate's own eyes as a readiness check (SPEC S10, D2): named `screen_reading`, ok
/// when the OCR engine and its languages load, else off with the install fix. Shown by
/// `phoneagent doctor` and the app's Devices panel.
pub fn screen_reading_check() -> phoneagent_device::ReadinessCheck {
    let s = phoneagent_vision::vision_status();
    phoneagent_device::ReadinessCheck {
        name: "screen_reading".into(),
        ok: s.available,
        detail: if s.available {
            format!("on: {} ({})", s.engine, s.languages.join(", "))
        } else {
            format!(
                "off: the gate sees only the model's words — {}",
                s.problem.unwrap_or_default()
            )
        },
        fix: s.fix,
    }
}
