//! The approval ledger (SPEC S9, AR8): a table derived from the event stream.
//!
//! Design: the `approvals` table is a *materialized view* of a run's events. It is updated by
//! [`crate::Store::append_event`] in the same transaction as the event, so it can never disagree
//! with the committed events, and [`crate::Store::rebuild_approval_ledger`] recomputes it from
//! the events (after an import, or if the derivation rules change). It exists so the desktop
//! app's ledger tab can list decisions across all runs without scanning every event.
//!
//! Events read (kinds of [`phoneagent_protocol::AgentEvent`]):
//! * `gate_decision` → one row, `request_id = "gate:<seq>"`, `kind = "gate"`, with `tool`,
//!   `tier`, `decision` = the gate `outcome` (`allow`, `warned`, `needs_approval`, …),
//!   `decided_by`, `latency_ms`; `record` holds the whole payload (reasons, mode, receipt).
//! * `human_requested` → one row keyed by its `request_id`, `kind` = the request type
//!   (`approval`, `ask_user`, `take_over`), `decision = "pending"`, `tool`/`tier` for
//!   approvals; `record.request` holds the request and `expires_at_ms`.
//! * `human_resolved` → updates that row: `decision` = the response type (`approve`, `reject`,
//!   `answer`, `hand_back`), `decided_by`, `latency_ms`, `record.response`. A resolution whose
//!   request was never recorded gets its own row with `kind = "unknown"`.
//! * `approval_review` (approve-for-me, SPEC AR8) → one row keyed by its `request_id`
//!   (`ar-<uuid>`), `kind = "auto_review"`, `decision` = the final outcome (`allowed` /
//!   `denied`), `decided_by` (`auto_reviewer`, `human`, `rule`, `policy`), `latency_ms`;
//!   `record` is the whole [`phoneagent_protocol::ApprovalReview`] (policy and its source,
//!   verdict, risk, authorization, reason, suggestion, gate, reviewer route, budget left, breaker
//!   state). [`crate::Store::approval_reviews`] and [`approval_reviews_from_events`] return
//!   them typed.
//!
//! Other kinds are ignored here.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Result, StoreError};
use crate::store::parse_uuid;
use crate::types::EventRecord;

/// One row of the approval ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The run.
    pub run_id: Uuid,
    /// `gate:<seq>` for gate decisions, else the human request id.
    pub request_id: String,
    /// `gate`, `approval`, `ask_user`, `take_over`, `auto_review` (or `unknown`).
    pub kind: String,
    /// Seq of the first event of this entry.
    pub first_seq: u64,
    /// Seq of the latest event that updated it.
    pub last_seq: u64,
    /// Step number of the first event.
    pub step: u32,
    /// Time of the first event, ms since the Unix epoch.
    pub ts_ms: i64,
    /// Tool name (gated calls and approvals).
    pub tool: Option<String>,
    /// Risk tier name (`none`, `soft`, `reviewer`, `hard`).
    pub tier: Option<String>,
    /// Gate outcome, `pending`, the human response type, or `allowed`/`denied` (auto_review).
    pub decision: String,
    /// `rule`, `reviewer`, `auto_reviewer`, `human`, `policy`.
    pub decided_by: Option<String>,
    /// Decision latency in ms.
    pub latency_ms: Option<u64>,
    /// The event payload(s) this row was built from.
    pub record: serde_json::Value,
}

fn s(v: &serde_json::Value, key: &str) -> Option<String> {
    v.get(key).and_then(|x| x.as_str()).map(str::to_owned)
}

fn u(v: &serde_json::Value, key: &str) -> Option<i64> {
    v.get(key)
        .and_then(serde_json::Value::as_u64)
        .and_then(|x| i64::try_from(x).ok())
}

/// Inserts (or replaces) the ledger row `request_id` of `kind` built from one event alone: its
/// tool, tier, `outcome` as the decision, `decided_by`, `latency_ms`, and the payload as record.
fn insert_single_event_row(
    conn: &Connection,
    run_id: &str,
    request_id: &str,
    kind: &str,
    seq: i64,
    step: i64,
    e: &EventRecord,
) -> Result<()> {
    let p = &e.payload;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO approvals
         (run_id, request_id, kind, first_seq, last_seq, step, ts_ms, tool, tier, decision, decided_by, latency_ms, record)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )
    .and_then(|mut st| {
        st.execute(params![
            run_id,
            request_id,
            kind,
            seq,
            step,
            e.ts_ms,
            s(p, "tool"),
            s(p, "tier"),
            s(p, "outcome").unwrap_or_else(|| "unknown".into()),
            s(p, "decided_by"),
            u(p, "latency_ms"),
            p.to_string()
        ])
    })
    .map_err(StoreError::sqlite("approval ledger"))?;
    Ok(())
}

/// Applies one event to the ledger inside the caller's transaction.
pub(crate) fn apply_event(conn: &Connection, run_id: &str, e: &EventRecord) -> Result<()> {
    let p = &e.payload;
    let seq = i64::try_from(e.seq).unwrap_or(i64::MAX);
    let step = i64::from(e.step());
    let err = StoreError::sqlite("approval ledger");
    match e.kind.as_str() {
        // A gate decision and an approve-for-me review are each a complete row on their own.
        "gate_decision" => insert_single_event_row(
            conn,
            run_id,
            &format!("gate:{}", e.seq),
            "gate",
            seq,
            step,
            e,
        )?,
        "approval_review" => {
            let Some(request_id) = s(p, "request_id") else {
                return Ok(());
            };
            insert_single_event_row(conn, run_id, &request_id, "auto_review", seq, step, e)?;
        }
        "human_requested" => {
            let Some(request_id) = s(p, "request_id") else {
                return Ok(());
            };
            let req = p.get("request").cloned().unwrap_or_default();
            let kind = s(&req, "type").unwrap_or_else(|| "unknown".into());
            let record = serde_json::json!({
                "request": req,
                "expires_at_ms": p.get("expires_at_ms"),
            });
            conn.prepare_cached(
                "INSERT INTO approvals
                 (run_id, request_id, kind, first_seq, last_seq, step, ts_ms, tool, tier, decision, record)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, 'pending', ?9)
                 ON CONFLICT(run_id, request_id) DO UPDATE SET last_seq = excluded.last_seq",
            )
            .and_then(|mut st| {
                st.execute(params![
                    run_id,
                    request_id,
                    kind,
                    seq,
                    step,
                    e.ts_ms,
                    s(&req, "tool"),
                    s(&req, "tier"),
                    record.to_string()
                ])
            })
            .map_err(err)?;
        }
        "human_resolved" => {
            let Some(request_id) = s(p, "request_id") else {
                return Ok(());
            };
            let response = p.get("response").cloned().unwrap_or_default();
            let decision = s(&response, "type").unwrap_or_else(|| "unknown".into());
            let existing: Option<String> = conn
                .query_row(
                    "SELECT record FROM approvals WHERE run_id = ?1 AND request_id = ?2",
                    params![run_id, request_id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(StoreError::sqlite("approval ledger"))?;
            let mut record: serde_json::Value = match &existing {
                Some(text) => serde_json::from_str(text)
                    .map_err(StoreError::json(format!("ledger row {request_id}")))?,
                None => serde_json::json!({}),
            };
            if let serde_json::Value::Object(m) = &mut record {
                m.insert("response".into(), response);
            }
            if existing.is_some() {
                conn.execute(
                    "UPDATE approvals SET last_seq = ?3, decision = ?4, decided_by = ?5, latency_ms = ?6, record = ?7
                     WHERE run_id = ?1 AND request_id = ?2",
                    params![
                        run_id,
                        request_id,
                        seq,
                        decision,
                        s(p, "decided_by"),
                        u(p, "latency_ms"),
                        record.to_string()
                    ],
                )
                .map_err(StoreError::sqlite("approval ledger"))?;
            } else {
                conn.execute(
                    "INSERT INTO approvals
                     (run_id, request_id, kind, first_seq, last_seq, step, ts_ms, decision, decided_by, latency_ms, record)
                     VALUES (?1, ?2, 'unknown', ?3, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        run_id,
                        request_id,
                        seq,
                        step,
                        e.ts_ms,
                        decision,
                        s(p, "decided_by"),
                        u(p, "latency_ms"),
                        record.to_string()
                    ],
                )
                .map_err(StoreError::sqlite("approval ledger"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

const LEDGER_SELECT: &str =
    "SELECT run_id, request_id, kind, first_seq, last_seq, step, ts_ms, tool, tier,
    decision, decided_by, latency_ms, record FROM approvals";

fn row_to_entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, LedgerEntry)> {
    let run_id: String = r.get(0)?;
    let record: String = r.get(12)?;
    Ok((
        record,
        LedgerEntry {
            run_id: Uuid::nil(),
            request_id: r.get(1)?,
            kind: r.get(2)?,
            first_seq: u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            last_seq: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
            step: u32::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
            ts_ms: r.get(6)?,
            tool: r.get(7)?,
            tier: r.get(8)?,
            decision: r.get(9)?,
            decided_by: r.get(10)?,
            latency_ms: r
                .get::<_, Option<i64>>(11)?
                .and_then(|v| u64::try_from(v).ok()),
            record: serde_json::Value::String(run_id),
        },
    ))
}

fn finish_entry((record, mut entry): (String, LedgerEntry)) -> Result<LedgerEntry> {
    let run_text = entry.record.as_str().unwrap_or_default().to_owned();
    entry.run_id = parse_uuid(&run_text)?;
    entry.record = serde_json::from_str(&record)
        .map_err(StoreError::json(format!("ledger row {}", entry.request_id)))?;
    Ok(entry)
}

pub(crate) fn query(
    conn: &Connection,
    run_id: Option<Uuid>,
    limit: usize,
) -> Result<Vec<LedgerEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let err = StoreError::sqlite("approval_ledger");
    let rows: Vec<(String, LedgerEntry)> = match run_id {
        Some(id) => {
            let mut st = conn
                .prepare_cached(&format!(
                    "{LEDGER_SELECT} WHERE run_id = ?1 ORDER BY first_seq LIMIT ?2"
                ))
                .map_err(StoreError::sqlite("approval_ledger"))?;
            st.query_map(params![id.to_string(), limit], row_to_entry)
                .and_then(|rows| rows.collect())
                .map_err(err)?
        }
        None => {
            let mut st = conn
                .prepare_cached(&format!(
                    "{LEDGER_SELECT} ORDER BY ts_ms DESC, first_seq DESC LIMIT ?1"
                ))
                .map_err(StoreError::sqlite("approval_ledger"))?;
            st.query_map(params![limit], row_to_entry)
                .and_then(|rows| rows.collect())
                .map_err(err)?
        }
    };
    rows.into_iter().map(finish_entry).collect()
}

/// The approve-for-me ledger of a run, rebuilt from its events alone (pure; SPEC AR8): every
/// `approval_review` event, in event order. Events whose payload does not parse (written by a
/// newer version) are skipped.
pub fn approval_reviews_from_events(
    events: &[EventRecord],
) -> Vec<phoneagent_protocol::ApprovalReview> {
    events
        .iter()
        .filter(|e| e.kind == "approval_review")
        .filter_map(|e| serde_json::from_value(e.payload.clone()).ok())
        .collect()
}

impl crate::Store {
    /// The approve-for-me ledger of one run (SPEC AR8), typed, in event order: one
    /// [`phoneagent_protocol::ApprovalReview`] per approval request, from the materialized
    /// `approvals` rows of kind `auto_review` (the same rows [`approval_reviews_from_events`]
    /// derives from the events).
    ///
    /// # Errors
    /// SQLite errors, or a row whose record does not parse.
    pub fn approval_reviews(
        &self,
        run_id: Uuid,
    ) -> Result<Vec<phoneagent_protocol::ApprovalReview>> {
        let rows = self.approval_ledger(Some(run_id), usize::MAX)?;
        rows.into_iter()
            .filter(|r| r.kind == "auto_review")
            .map(|r| {
                serde_json::from_value(r.record).map_err(StoreError::json(format!(
                    "approval review {}",
                    r.request_id
                )))
            })
            .collect()
    }

    /// Ledger rows of one run (in event order) or, with `None`, of all runs (newest first), at
    /// most `limit` (SPEC S9, AR8).
    pub fn approval_ledger(&self, run_id: Option<Uuid>, limit: usize) -> Result<Vec<LedgerEntry>> {
        self.with_reader(|c| query(c, run_id, limit))
    }

    /// Recomputes a run's ledger rows from its events (one transaction); returns the row count.
    pub fn rebuild_approval_ledger(&self, run_id: Uuid) -> Result<usize> {
        let events = self.events(run_id)?;
        let id_text = run_id.to_string();
        self.with_writer(|conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(StoreError::sqlite("rebuild_approval_ledger"))?;
            tx.execute("DELETE FROM approvals WHERE run_id = ?1", [&id_text])
                .map_err(StoreError::sqlite("rebuild_approval_ledger"))?;
            for e in &events {
                apply_event(&tx, &id_text, e)?;
            }
            let n: i64 = tx
                .query_row(
                    "SELECT COUNT(*) FROM approvals WHERE run_id = ?1",
                    [&id_text],
                    |r| r.get(0),
                )
                .map_err(StoreError::sqlite("rebuild_approval_ledger"))?;
            tx.commit()
                .map_err(StoreError::sqlite("rebuild_approval_ledger"))?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }
}
