//! Events (SPEC T1): appended and committed one transaction at a time (with the approval
//! ledger, and a `run_finished` event ending its run in the same transaction), read back in
//! `seq` order.

use rusqlite::{Connection, params};
use uuid::Uuid;

use super::{ConstraintKind, Store, constraint_kind, to_i64};
use crate::error::{Result, StoreError};
use crate::ledger;
use crate::types::EventRecord;

impl Store {
    // --------------------------------------------------------------------------------- events

    /// Appends one event and commits it before returning (its own transaction; SPEC T1: the
    /// runtime calls this before sending the next device command). Approval-related kinds also
    /// update the approval ledger in the same transaction (see [`crate::ledger`]).
    ///
    /// A `run_finished` event also ends the run in the same transaction, exactly as
    /// [`Store::finish_run`] would: `status`, `termination_code`, totals from `tokens`,
    /// `ended_ms` = the event's `ts_ms`, summary `{message, steps, duration_ms}`, so a crash
    /// right after it still leaves the run with its real outcome. A later
    /// [`Store::finish_run`] with the same status refines the record.
    ///
    /// Errors: [`StoreError::UnknownRun`], [`StoreError::DuplicateEvent`] when `seq` was used.
    pub fn append_event(&self, run_id: Uuid, event: &EventRecord) -> Result<()> {
        self.append_events(run_id, std::slice::from_ref(event))
    }

    /// Appends several events in one transaction (all or none).
    pub fn append_events(&self, run_id: Uuid, events: &[EventRecord]) -> Result<()> {
        let payloads = events
            .iter()
            .map(|e| {
                serde_json::to_string(&e.payload)
                    .map_err(StoreError::json(format!("payload of event {}", e.seq)))
            })
            .collect::<Result<Vec<_>>>()?;
        let id_text = run_id.to_string();
        let mut finished = false;
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("append_event"))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO events (run_id, seq, ts_ms, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(StoreError::sqlite("append_event"))?;
            for (e, payload) in events.iter().zip(&payloads) {
                stmt.execute(params![id_text, to_i64(e.seq), e.ts_ms, e.kind, payload])
                    .map_err(|err| match constraint_kind(&err) {
                        Some(ConstraintKind::ForeignKey) => StoreError::UnknownRun(run_id),
                        Some(ConstraintKind::Other) => {
                            StoreError::DuplicateEvent { run_id, seq: e.seq }
                        }
                        None => StoreError::Sqlite {
                            op: "append_event",
                            source: err,
                        },
                    })?;
                ledger::apply_event(&tx, &id_text, e)?;
                if e.kind == "run_finished" && apply_run_finished(&tx, &id_text, e)? {
                    finished = true;
                }
            }
        }
        tx.commit().map_err(StoreError::sqlite("append_event"))?;
        if finished {
            self.release_run_lock(run_id);
        }
        Ok(())
    }

    /// Converts a runtime event with [`EventRecord::from_envelope`] and appends it (see
    /// [`Store::append_event`]).
    ///
    /// Errors: [`StoreError::BadRunId`] when `env.run_id` is not a UUID, plus those of
    /// `append_event`.
    pub fn append_envelope(&self, env: &phoneagent_protocol::EventEnvelope) -> Result<()> {
        let id =
            Uuid::parse_str(&env.run_id).map_err(|_| StoreError::BadRunId(env.run_id.clone()))?;
        self.append_event(id, &EventRecord::from_envelope(env)?)
    }

    /// Every event of a run, ordered by `seq`. An unknown run has no events.
    pub fn events(&self, run_id: Uuid) -> Result<Vec<EventRecord>> {
        self.events_after(run_id, None)
    }

    /// Events of a run with `seq > after` (all when `None`), ordered — for tailing a live run.
    pub fn events_after(&self, run_id: Uuid, after: Option<u64>) -> Result<Vec<EventRecord>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, ts_ms, kind, payload FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(StoreError::sqlite("events"))?;
        let after = after.map_or(-1, to_i64);
        let rows = stmt
            .query_map(params![run_id.to_string(), after], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(StoreError::sqlite("events"))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, ts_ms, kind, payload) = row.map_err(StoreError::sqlite("events"))?;
            let seq = u64::try_from(seq)
                .map_err(|_| StoreError::Corrupt(format!("negative event seq {seq}")))?;
            let payload = serde_json::from_str(&payload).map_err(StoreError::json(format!(
                "payload of event {seq} of run {run_id}"
            )))?;
            out.push(EventRecord {
                seq,
                ts_ms,
                kind,
                payload,
            });
        }
        Ok(out)
    }

    /// The highest committed `seq` of a run, `None` when it has no events.
    pub fn last_seq(&self, run_id: Uuid) -> Result<Option<u64>> {
        let v: Option<i64> = self
            .reader()
            .query_row(
                "SELECT MAX(seq) FROM events WHERE run_id = ?1",
                [run_id.to_string()],
                |r| r.get(0),
            )
            .map_err(StoreError::sqlite("last_seq"))?;
        Ok(v.and_then(|v| u64::try_from(v).ok()))
    }
}

/// Ends a `running` run from a `run_finished` payload; returns whether a row changed.
fn apply_run_finished(tx: &Connection, id_text: &str, e: &EventRecord) -> Result<bool> {
    let p = &e.payload;
    let status = p
        .get("status")
        .and_then(serde_json::Value::as_str)
        .and_then(|s| crate::types::parse_status(s).ok())
        .filter(|s| crate::types::is_terminal(*s))
        .unwrap_or(crate::RunStatus::Failed);
    let tokens = p.get("tokens").cloned().unwrap_or_default();
    let u = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_u64)
            .map_or(0, to_i64)
    };
    let summary = serde_json::json!({
        "message": p.get("message"),
        "steps": p.get("steps"),
        "duration_ms": p.get("duration_ms"),
    });
    let n = tx
        .execute(
            "UPDATE runs SET status = ?2, ended_ms = ?3, termination_code = ?4, summary = ?5,
                    prompt_tokens = ?6, completion_tokens = ?7, cost_usd = ?8
             WHERE id = ?1 AND status = 'running'",
            params![
                id_text,
                status.as_str(),
                e.ts_ms,
                p.get("termination_code")
                    .and_then(serde_json::Value::as_str),
                summary.to_string(),
                u(&tokens, "prompt_tokens"),
                u(&tokens, "completion_tokens"),
                tokens.get("cost_usd").and_then(serde_json::Value::as_f64)
            ],
        )
        .map_err(StoreError::sqlite("append_event"))?;
    Ok(n > 0)
}
