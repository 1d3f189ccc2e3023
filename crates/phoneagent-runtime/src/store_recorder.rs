//! The SQLite [`RunRecorder`]: every event is committed before `record` returns (SPEC T1).

use phoneagent_protocol::{AccessMode, EventEnvelope, RunStatus};
use phoneagent_store::{EventRecord, NewRun, RunEnd, Store};

use crate::events::{RunMeta, RunRecorder};

/// Records runs into a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreRecorder {
    store: Store,
}

impl StoreRecorder {
    /// A recorder over `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

fn run_uuid(id: &str) -> Result<uuid::Uuid, String> {
    uuid::Uuid::parse_str(id).map_err(|e| format!("bad run id {id}: {e}"))
}

impl RunRecorder for StoreRecorder {
    fn begin_run(&self, meta: &RunMeta) -> Result<(), String> {
        let mut run = NewRun::new(meta.task.clone());
        run.id = run_uuid(&meta.run_id)?;
        run.started_ms = meta.started_ms as i64;
        run.device_serial = Some(meta.serial.clone());
        run.model_profile = Some(meta.profile.clone());
        run.model = Some(meta.model.clone());
        run.access_mode = meta.mode.parse::<AccessMode>().unwrap_or_default();
        if meta.demo {
            // Exported under `run.metadata`; history lists show the run as a demo.
            run.metadata = serde_json::json!({ "demo": true });
        }
        self.store.start_run(&run).map_err(|e| e.to_string())
    }

    fn record(&self, env: &EventEnvelope) -> Result<(), String> {
        let mut payload = serde_json::to_value(env).map_err(|e| e.to_string())?;
        if let Some(obj) = payload.as_object_mut() {
            obj.remove("run_id");
            obj.remove("seq");
            obj.remove("ts_ms");
        }
        let rec = EventRecord {
            seq: env.seq,
            ts_ms: env.ts_ms as i64,
            kind: env.event.kind().to_string(),
            payload,
        };
        self.store
            .append_event(run_uuid(&env.run_id)?, &rec)
            .map_err(|e| e.to_string())
    }

    fn put_screenshot(&self, png: &[u8], width: u32, height: u32) -> Result<String, String> {
        self.store
            .put_screenshot(png, "image/png", width, height)
            .map_err(|e| e.to_string())
    }

    fn end_run(
        &self,
        run_id: &str,
        status: RunStatus,
        termination_code: &str,
        summary: &serde_json::Value,
    ) -> Result<(), String> {
        let tokens = summary.get("tokens");
        let get = |k: &str| {
            tokens
                .and_then(|t| t.get(k))
                .and_then(|v| v.as_u64())
                .unwrap_or(0)
        };
        let cost = tokens
            .and_then(|t| t.get("cost_usd"))
            .and_then(|v| v.as_f64());
        let end = RunEnd {
            status,
            ended_ms: crate::now_ms() as i64,
            termination_code: Some(termination_code.to_string()),
            summary: summary.clone(),
            prompt_tokens: get("prompt_tokens"),
            completion_tokens: get("completion_tokens"),
            cost_usd: cost.filter(|c| *c > 0.0),
        };
        self.store
            .finish_run(run_uuid(run_id)?, &end)
            .map_err(|e| e.to_string())
    }
}
