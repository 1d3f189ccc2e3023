//! The event bus: assigns sequence numbers, commits each event to the run recorder *before*
//! returning (so it is durable before the next device command, SPEC T1), then broadcasts it to
//! live subscribers (CLI, app, web console).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use phoneagent_protocol::{AgentEvent, EventEnvelope, RunStatus};
use tokio::sync::broadcast;

/// Metadata of a run as it starts.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// Run id.
    pub run_id: String,
    /// Task text.
    pub task: String,
    /// ADB serial.
    pub serial: String,
    /// Actor profile name.
    pub profile: String,
    /// Actor model name.
    pub model: String,
    /// Access mode name.
    pub mode: String,
    /// Start time ms since epoch.
    pub started_ms: u64,
    /// A labelled demo on the virtual phone with a scripted model (SPEC C1): history marks it.
    pub demo: bool,
}

/// Where a run's history goes (the SQLite store in the product). Calls are synchronous and must
/// be durable when they return.
pub trait RunRecorder: Send + Sync {
    /// A run begins.
    fn begin_run(&self, meta: &RunMeta) -> Result<(), String>;
    /// Commit one event.
    fn record(&self, event: &EventEnvelope) -> Result<(), String>;
    /// Store a screenshot once by content hash; returns the sha256 hex.
    fn put_screenshot(&self, png: &[u8], width: u32, height: u32) -> Result<String, String>;
    /// The run ended.
    fn end_run(
        &self,
        run_id: &str,
        status: RunStatus,
        termination_code: &str,
        summary: &serde_json::Value,
    ) -> Result<(), String>;
}

/// A recorder that keeps nothing (for library users who only want the live stream).
#[derive(Debug, Default)]
pub struct NullRecorder;

impl RunRecorder for NullRecorder {
    fn begin_run(&self, _meta: &RunMeta) -> Result<(), String> {
        Ok(())
    }
    fn record(&self, _event: &EventEnvelope) -> Result<(), String> {
        Ok(())
    }
    fn put_screenshot(&self, png: &[u8], _w: u32, _h: u32) -> Result<String, String> {
        Ok(crate::sha256_hex(png))
    }
    fn end_run(&self, _: &str, _: RunStatus, _: &str, _: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
}

/// Per-run event bus.
pub struct EventBus {
    run_id: String,
    seq: AtomicU64,
    step: AtomicU32,
    tx: broadcast::Sender<EventEnvelope>,
    recorder: std::sync::Arc<dyn RunRecorder>,
    write_error: Mutex<Option<String>>,
    /// The run's typed secrets: every event is scrubbed of them before it is committed or
    /// broadcast (SPEC P6).
    secrets: crate::secrets::Secrets,
}

impl EventBus {
    /// A bus for `run_id` writing to `recorder` and broadcasting on `tx`.
    pub fn new(
        run_id: String,
        recorder: std::sync::Arc<dyn RunRecorder>,
        tx: broadcast::Sender<EventEnvelope>,
    ) -> Self {
        Self {
            run_id,
            seq: AtomicU64::new(0),
            step: AtomicU32::new(0),
            tx,
            recorder,
            write_error: Mutex::new(None),
            secrets: crate::secrets::Secrets::new(),
        }
    }

    /// The run's typed secrets (SPEC P6): register a secret here and no later event carries it.
    pub fn secrets(&self) -> &crate::secrets::Secrets {
        &self.secrets
    }

    /// The run this bus records.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Set the current step number (stamped on following events).
    pub fn set_step(&self, step: u32) {
        self.step.store(step, Ordering::SeqCst);
    }

    /// Emit an event: commit, then broadcast. A recorder failure is remembered (see
    /// [`EventBus::take_write_error`]) so the runtime stops before the next device command.
    pub fn emit(&self, event: AgentEvent) -> EventEnvelope {
        let _phase = crate::phase!("event_commit");
        let env = EventEnvelope {
            run_id: self.run_id.clone(),
            seq: self.seq.fetch_add(1, Ordering::SeqCst),
            ts_ms: crate::now_ms(),
            step: self.step.load(Ordering::SeqCst),
            event: self.secrets.scrub_event(event),
        };
        if let Err(e) = self.recorder.record(&env) {
            tracing::error!(error = %e, "could not commit event");
            let mut w = self.write_error.lock().unwrap_or_else(|p| p.into_inner());
            w.get_or_insert(e);
        }
        let _ = self.tx.send(env.clone());
        env
    }

    /// The first recorder failure, if any.
    pub fn take_write_error(&self) -> Option<String> {
        self.write_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The recorder.
    pub fn recorder(&self) -> &dyn RunRecorder {
        self.recorder.as_ref()
    }
}
