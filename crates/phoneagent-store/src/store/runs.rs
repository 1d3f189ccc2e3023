//! Runs (SPEC T1): starting one with its liveness lock file, finishing it, marking runs a dead
//! process left `running` as `interrupted`, reading, listing, finding by id prefix, deleting.

use std::fs::File;
use std::path::Path;

use phoneagent_protocol::AccessMode;
use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{Store, is_constraint, parse_uuid, to_i64};
use crate::error::{Result, StoreError};
use crate::types::{NewRun, RunEnd, RunRecord, now_ms};

impl Store {
    // ----------------------------------------------------------------------------------- runs

    /// Records a new run with status `running` and takes its liveness lock (held until
    /// [`Store::finish_run`] or until every clone of this handle is dropped).
    ///
    /// Errors: [`StoreError::DuplicateRun`] when the id is already used.
    pub fn start_run(&self, run: &NewRun) -> Result<()> {
        // Take the lock file first: another process's mark_interrupted_runs must never see the
        // row `running` without a held lock.
        let lock_file = match self.lock_path(run.id) {
            Some(p) => Some(take_run_lock(&p, run.id)?),
            None => None,
        };
        let metadata =
            serde_json::to_string(&run.metadata).map_err(StoreError::json("run metadata"))?;
        let res = self.writer().execute(
            "INSERT INTO runs (id, task, status, started_ms, device_serial, model_profile, model, access_mode, metadata)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.id.to_string(),
                run.task,
                run.started_ms,
                run.device_serial,
                run.model_profile,
                run.model,
                run.access_mode.as_str(),
                metadata
            ],
        );
        match res {
            Ok(_) => {
                self.live().insert(run.id, lock_file);
                Ok(())
            }
            Err(e) => {
                if let (Some(_), Some(p)) = (&lock_file, self.lock_path(run.id)) {
                    drop(lock_file);
                    let _ = std::fs::remove_file(p);
                }
                if is_constraint(&e) {
                    Err(StoreError::DuplicateRun(run.id))
                } else {
                    Err(StoreError::Sqlite {
                        op: "start_run",
                        source: e,
                    })
                }
            }
        }
    }

    /// Records how a run ended and releases its liveness lock.
    ///
    /// Calling it again with the *same* status (e.g. after a `run_finished` event already ended
    /// the run, see [`Store::append_event`]) replaces the recorded end, summary and totals.
    ///
    /// Errors: [`StoreError::UnknownRun`]; [`StoreError::RunAlreadyEnded`] when the run already
    /// ended with a different status (including runs marked `interrupted`);
    /// [`StoreError::NotTerminal`] when `end.status` is `running`.
    pub fn finish_run(&self, id: Uuid, end: &RunEnd) -> Result<()> {
        if !crate::types::is_terminal(end.status) {
            return Err(StoreError::NotTerminal(id));
        }
        let summary =
            serde_json::to_string(&end.summary).map_err(StoreError::json("run summary"))?;
        let conn = self.writer();
        let n = conn
            .execute(
                "UPDATE runs SET status = ?2, ended_ms = ?3, termination_code = ?4, summary = ?5,
                        prompt_tokens = ?6, completion_tokens = ?7, cost_usd = ?8
                 WHERE id = ?1 AND (status = 'running' OR status = ?2)",
                params![
                    id.to_string(),
                    end.status.as_str(),
                    end.ended_ms,
                    end.termination_code,
                    summary,
                    to_i64(end.prompt_tokens),
                    to_i64(end.completion_tokens),
                    end.cost_usd
                ],
            )
            .map_err(StoreError::sqlite("finish_run"))?;
        if n == 0 {
            let exists: Option<String> = conn
                .query_row(
                    "SELECT status FROM runs WHERE id = ?1",
                    [id.to_string()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(StoreError::sqlite("finish_run"))?;
            return Err(match exists {
                None => StoreError::UnknownRun(id),
                Some(_) => StoreError::RunAlreadyEnded(id),
            });
        }
        drop(conn);
        self.release_run_lock(id);
        Ok(())
    }

    pub(super) fn release_run_lock(&self, id: Uuid) {
        let held = self.live().remove(&id);
        if let (Some(Some(file)), Some(p)) = (held, self.lock_path(id)) {
            let _ = std::fs::remove_file(&p);
            drop(file);
        }
    }

    /// Marks every run left `running` by a process that no longer exists as `interrupted`
    /// (SPEC T1), with `ended_ms` = its last event's time (or its start) and termination code
    /// `interrupted`. Runs still alive — started through this handle, or holding their lock
    /// file in another process — are left alone. Returns how many runs were marked. Called by
    /// [`Store::open`]; safe to call again.
    pub fn mark_interrupted_runs(&self) -> Result<usize> {
        let running: Vec<String> = {
            let conn = self.writer();
            let mut stmt = conn
                .prepare("SELECT id FROM runs WHERE status = 'running'")
                .map_err(StoreError::sqlite("mark_interrupted_runs"))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(StoreError::sqlite("mark_interrupted_runs"))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(StoreError::sqlite("mark_interrupted_runs"))?
        };
        let mut marked = 0;
        for id_text in running {
            let id = parse_uuid(&id_text)?;
            if self.live().contains_key(&id) {
                continue;
            }
            // Holding the dead run's lock (if any) while we update keeps a concurrent opener from
            // racing us; it is released when `_guard` drops.
            let _guard = match self.lock_path(id) {
                Some(p) => match probe_run_lock(&p) {
                    LockProbe::Alive => continue,
                    LockProbe::Dead(f) => Some((f, p)),
                },
                None => None,
            };
            let n = self
                .writer()
                .execute(
                    "UPDATE runs SET status = 'interrupted', termination_code = 'interrupted',
                        ended_ms = COALESCE((SELECT MAX(ts_ms) FROM events WHERE run_id = ?1), started_ms)
                     WHERE id = ?1 AND status = 'running'",
                    [&id_text],
                )
                .map_err(StoreError::sqlite("mark_interrupted_runs"))?;
            marked += n;
            if let Some((_, p)) = &_guard {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(marked)
    }

    /// One run with its counts, `None` when the id is unknown.
    pub fn run(&self, id: Uuid) -> Result<Option<RunRecord>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(&format!("{RUN_SELECT} WHERE r.id = ?1"))
            .map_err(StoreError::sqlite("run"))?;
        let row = stmt
            .query_row([id.to_string()], RawRun::from_row)
            .optional()
            .map_err(StoreError::sqlite("run"))?;
        row.map(RawRun::into_record).transpose()
    }

    /// The newest `limit` runs, newest first (by start time), with event and step counts.
    pub fn list_runs(&self, limit: usize) -> Result<Vec<RunRecord>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(&format!(
                "{RUN_SELECT} ORDER BY r.started_ms DESC, r.rowid DESC LIMIT ?1"
            ))
            .map_err(StoreError::sqlite("list_runs"))?;
        let rows = stmt
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], RawRun::from_row)
            .map_err(StoreError::sqlite("list_runs"))?;
        let raw: Vec<RawRun> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(StoreError::sqlite("list_runs"))?;
        raw.into_iter().map(RawRun::into_record).collect()
    }

    /// Runs whose id starts with `prefix` (as users type ids from `phoneagent runs`), at most
    /// 10; the caller treats one match as the run and several as ambiguous. A prefix that is not
    /// hex digits and dashes matches nothing.
    pub fn find_runs_by_prefix(&self, prefix: &str) -> Result<Vec<Uuid>> {
        let p = prefix.trim().to_ascii_lowercase();
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Ok(Vec::new());
        }
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY started_ms DESC LIMIT 10")
            .map_err(StoreError::sqlite("find_runs_by_prefix"))?;
        let ids: Vec<String> = stmt
            .query_map([&p], |r| r.get(0))
            .map_err(StoreError::sqlite("find_runs_by_prefix"))?
            .collect::<rusqlite::Result<_>>()
            .map_err(StoreError::sqlite("find_runs_by_prefix"))?;
        ids.iter().map(|s| parse_uuid(s)).collect()
    }

    /// Deletes an ended run with its events and ledger rows, then removes screenshots that no
    /// remaining `observation` event references and that are older than one hour (younger ones
    /// may belong to a live run whose observation event is about to be written). Returns
    /// whether the run existed.
    ///
    /// Errors: [`StoreError::RunStillRunning`] for a `running` run.
    pub fn delete_run(&self, id: Uuid) -> Result<bool> {
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("delete_run"))?;
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM runs WHERE id = ?1",
                [id.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(StoreError::sqlite("delete_run"))?;
        match status.as_deref() {
            None => return Ok(false),
            Some("running") => return Err(StoreError::RunStillRunning(id)),
            Some(_) => {}
        }
        tx.execute("DELETE FROM runs WHERE id = ?1", [id.to_string()])
            .map_err(StoreError::sqlite("delete_run"))?;
        tx.execute(
            "DELETE FROM screenshots WHERE created_ms < ?1 AND sha256 NOT IN (
                 SELECT json_extract(payload, '$.screenshot') FROM events
                 WHERE kind = 'observation' AND json_valid(payload)
                   AND json_extract(payload, '$.screenshot') IS NOT NULL)",
            [now_ms().saturating_sub(3_600_000)],
        )
        .map_err(StoreError::sqlite("delete_run"))?;
        tx.commit().map_err(StoreError::sqlite("delete_run"))?;
        Ok(true)
    }
}

const RUN_SELECT: &str = "SELECT r.id, r.task, r.status, r.started_ms, r.ended_ms, r.device_serial,
        r.model_profile, r.model, r.access_mode, r.termination_code, r.summary, r.metadata,
        r.prompt_tokens, r.completion_tokens, r.cost_usd,
        (SELECT COUNT(*) FROM events e WHERE e.run_id = r.id),
        (SELECT COALESCE(MAX(CAST(json_extract(e.payload, '$.step') AS INTEGER)), 0)
           FROM events e WHERE e.run_id = r.id AND json_valid(e.payload))
    FROM runs r";

struct RawRun {
    id: String,
    task: String,
    status: String,
    started_ms: i64,
    ended_ms: Option<i64>,
    device_serial: Option<String>,
    model_profile: Option<String>,
    model: Option<String>,
    access_mode: String,
    termination_code: Option<String>,
    summary: String,
    metadata: String,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: Option<f64>,
    event_count: i64,
    step_count: i64,
}

impl RawRun {
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            task: r.get(1)?,
            status: r.get(2)?,
            started_ms: r.get(3)?,
            ended_ms: r.get(4)?,
            device_serial: r.get(5)?,
            model_profile: r.get(6)?,
            model: r.get(7)?,
            access_mode: r.get(8)?,
            termination_code: r.get(9)?,
            summary: r.get(10)?,
            metadata: r.get(11)?,
            prompt_tokens: r.get(12)?,
            completion_tokens: r.get(13)?,
            cost_usd: r.get(14)?,
            event_count: r.get(15)?,
            step_count: r.get::<_, Option<i64>>(16)?.unwrap_or(0),
        })
    }

    fn into_record(self) -> Result<RunRecord> {
        let id = parse_uuid(&self.id)?;
        let access_mode: AccessMode = self
            .access_mode
            .parse()
            .map_err(|e: String| StoreError::Corrupt(e))?;
        Ok(RunRecord {
            id,
            task: self.task,
            status: crate::types::parse_status(&self.status)?,
            started_ms: self.started_ms,
            ended_ms: self.ended_ms,
            device_serial: self.device_serial,
            model_profile: self.model_profile,
            model: self.model,
            access_mode,
            termination_code: self.termination_code,
            summary: serde_json::from_str(&self.summary)
                .map_err(StoreError::json(format!("summary of run {id}")))?,
            metadata: serde_json::from_str(&self.metadata)
                .map_err(StoreError::json(format!("metadata of run {id}")))?,
            prompt_tokens: u64::try_from(self.prompt_tokens).unwrap_or(0),
            completion_tokens: u64::try_from(self.completion_tokens).unwrap_or(0),
            cost_usd: self.cost_usd,
            event_count: u64::try_from(self.event_count).unwrap_or(0),
            step_count: u64::try_from(self.step_count).unwrap_or(0),
        })
    }
}

fn take_run_lock(path: &Path, id: Uuid) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| StoreError::CreateDir {
            path: path.to_path_buf(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::DuplicateRun(id)),
        Err(std::fs::TryLockError::Error(e)) => {
            // Locking unsupported (some network file systems): run without the liveness lock;
            // another process may then mark this run interrupted, which is the safe side.
            tracing::warn!(path = %path.display(), error = %e, "run lock file could not be locked");
            Ok(file)
        }
    }
}

enum LockProbe {
    Alive,
    Dead(Option<File>),
}

fn probe_run_lock(path: &Path) -> LockProbe {
    match std::fs::OpenOptions::new().write(true).open(path) {
        Err(_) => LockProbe::Dead(None),
        Ok(f) => match f.try_lock() {
            Ok(()) => LockProbe::Dead(Some(f)),
            Err(std::fs::TryLockError::WouldBlock) => LockProbe::Alive,
            Err(std::fs::TryLockError::Error(_)) => LockProbe::Dead(None),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::NewRun;

    #[test]
    fn finish_requires_terminal_status() {
        let s = Store::open_in_memory().unwrap();
        let run = NewRun::new("t");
        s.start_run(&run).unwrap();
        let end = RunEnd {
            status: crate::RunStatus::Running,
            ended_ms: 1,
            termination_code: None,
            summary: serde_json::Value::Null,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: None,
        };
        assert!(matches!(
            s.finish_run(run.id, &end),
            Err(StoreError::NotTerminal(id)) if id == run.id
        ));
    }
}
