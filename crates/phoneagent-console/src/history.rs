//! History (SPEC U6): past runs, their recorded events (replay), stored screenshots, the
//! approval ledger and exports (trajectory JSON, HTML report).

use base64::Engine as _;
use phoneagent_protocol::EventEnvelope;

use crate::console::Console;
use crate::dto::{ExportResult, LedgerRow, RunSummary};
use crate::error::{AppError, AppResult};

fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

impl Console {
    pub(crate) fn run_uuid(id: &str) -> AppResult<uuid::Uuid> {
        uuid::Uuid::parse_str(id).map_err(|_| AppError::invalid(format!("{id:?} is not a run id")))
    }

    /// Past runs, newest first.
    pub fn list_runs(&self, limit: usize) -> AppResult<Vec<RunSummary>> {
        Ok(self
            .store
            .list_runs(limit.clamp(1, 1000))?
            .into_iter()
            .map(|r| RunSummary {
                demo: r.metadata.get("demo") == Some(&serde_json::Value::Bool(true)),
                id: r.id.to_string(),
                duration_ms: r.duration_ms(),
                task: r.task,
                status: r.status,
                started_ms: r.started_ms,
                serial: r.device_serial,
                model: r.model,
                mode: r.access_mode,
                termination_code: r.termination_code.and_then(|c| c.parse().ok()),
                steps: r.step_count,
                tokens: r.prompt_tokens + r.completion_tokens,
                cost_usd: r.cost_usd,
            })
            .collect())
    }

    /// The recorded events of a run, in order (for replay).
    pub fn run_events(&self, id: &str) -> AppResult<Vec<EventEnvelope>> {
        let uuid = Self::run_uuid(id)?;
        Ok(self
            .store
            .events(uuid)?
            .iter()
            .filter_map(|e| e.to_envelope(uuid))
            .collect())
    }

    /// A stored screenshot's MIME type and bytes (`None` when not stored or not a hash).
    pub fn screenshot_bytes(&self, sha256: &str) -> Option<(String, Vec<u8>)> {
        let shot = self.store.screenshot(sha256).ok().flatten()?;
        Some((shot.mime, shot.bytes))
    }

    /// A stored screenshot as a data URL.
    pub fn screenshot(&self, sha256: &str) -> AppResult<String> {
        if sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(AppError::invalid("not a screenshot hash"));
        }
        let shot = self.store.screenshot(sha256)?.ok_or_else(|| {
            AppError::new(
                "not_found",
                format!("screenshot {} is not in the store", &sha256[..12]),
            )
        })?;
        Ok(data_url(&shot.mime, &shot.bytes))
    }

    /// The approval ledger of a run.
    pub fn ledger(&self, id: &str) -> AppResult<Vec<LedgerRow>> {
        let uuid = Self::run_uuid(id)?;
        Ok(self
            .store
            .approval_ledger(Some(uuid), 1000)?
            .into_iter()
            .map(|l| LedgerRow {
                request_id: l.request_id,
                kind: l.kind,
                step: l.step,
                ts_ms: l.ts_ms,
                tool: l.tool,
                tier: l.tier,
                decision: l.decision,
                decided_by: l.decided_by,
                latency_ms: l.latency_ms,
            })
            .collect())
    }

    /// Export a run as `json` (trajectory schema 1.3) or `html` (self-contained report) into
    /// the export directory.
    pub fn export(&self, id: &str, format: &str) -> AppResult<ExportResult> {
        let uuid = Self::run_uuid(id)?;
        std::fs::create_dir_all(&self.export_dir).map_err(|e| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::Store,
                format!(
                    "cannot create the export directory {}: {e}",
                    self.export_dir.display()
                ),
            )
        })?;
        let short = &id[..8.min(id.len())];
        let path = match format {
            "json" => {
                let p = self.export_dir.join(format!("phoneagent-run-{short}.json"));
                phoneagent_store::export::write_trajectory_json(
                    &self.store,
                    uuid,
                    &Default::default(),
                    &p,
                )?;
                p
            }
            "html" => {
                let p = self.export_dir.join(format!("phoneagent-run-{short}.html"));
                phoneagent_store::export::write_html_report(
                    &self.store,
                    uuid,
                    &Default::default(),
                    &p,
                )?;
                p
            }
            other => {
                return Err(AppError::invalid(format!(
                    "unknown export format {other:?}: use json or html"
                )));
            }
        };
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok(ExportResult {
            path: path.display().to_string(),
            bytes,
        })
    }
}
