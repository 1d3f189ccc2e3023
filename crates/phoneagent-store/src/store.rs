//! The [`Store`] handle: opening, runs, events, screenshots, settings, calibration cache.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use phoneagent_protocol::AccessMode;
use rusqlite::{Connection, ErrorCode as SqlCode, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Result, StoreError};
use crate::ledger;
use crate::types::{
    CalibrationEntry, EventRecord, NewRun, RunEnd, RunRecord, StoredScreenshot, now_ms,
};

/// Environment variable that overrides the data directory (`$PHONEAGENT_HOME/phoneagent.sqlite3`).
pub const HOME_ENV: &str = "PHONEAGENT_HOME";

/// File name of the database inside the data directory.
pub const DB_FILE_NAME: &str = "phoneagent.sqlite3";

/// How hard each commit is pushed to disk (SQLite `synchronous` in WAL mode).
///
/// Both keep every committed event through a process crash (`kill -9`, panic, OOM kill): a WAL
/// commit is in the OS page cache before `append_event` returns (the SIGKILL test proves it for
/// the default). They differ on a power cut or kernel panic: `Full` fsyncs the WAL on every
/// commit, so at most the in-flight event is lost; `Normal` fsyncs at checkpoints, so the last
/// commits since the previous checkpoint can be rolled back (the database stays consistent).
///
/// Measured with `benches/store.rs` on the 2-core build VM under heavy load: `append_event`
/// p50 0.02 ms / p99 4.7 ms with `Normal`, p50 8 ms / p99 22 ms with `Full`. A step writes about
/// ten events, so `Full` would cost ~80 ms per step — more than the runtime's whole 50 ms
/// overhead budget — hence `Normal` is the default (SPEC T1 speaks of process crashes). Pick
/// `Full` where power-loss durability matters more than latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `PRAGMA synchronous=FULL`: fsync the WAL on every commit.
    Full,
    /// `PRAGMA synchronous=NORMAL`: fsync only at checkpoints; survives process crashes.
    #[default]
    Normal,
}

/// Options for [`Store::open_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Commit durability (default [`Durability::Normal`]).
    pub durability: Durability,
    /// How long a statement waits for another process's write lock before failing (default 5 s).
    pub busy_timeout: Duration,
    /// Run [`Store::mark_interrupted_runs`] while opening (default true).
    pub mark_interrupted: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(5),
            mark_interrupted: true,
        }
    }
}

/// A cheap-to-clone handle on the run store (SPEC T1).
///
/// # Concurrency
/// All methods are synchronous and take `&self`. Writes go through one connection behind a
/// `Mutex` (SQLite has one writer anyway); reads of a file-backed store use a second,
/// read-only connection, so an export or a history query never delays `append_event` (WAL lets
/// readers and the writer proceed together). Clones share both connections; the handle is
/// `Send + Sync`.
///
/// From async code: [`Store::append_event`], settings and calibration calls are short (tens of
/// µs with the default [`Durability::Normal`]; add one WAL fsync per commit under
/// [`Durability::Full`] — see the benchmark) and may be called directly on a tokio worker;
/// `put_screenshot` hashes and writes a whole PNG (~15 ms for 1080×2400 on a loaded VM) and
/// exports render whole runs, so call those inside `tokio::task::spawn_blocking` with a clone
/// of the handle. The store has no async runtime dependency.
///
/// Several processes (the CLI and the desktop app) may open the same file: WAL and a busy
/// timeout serialize their writes, and each live run holds an advisory lock file so another
/// process's [`Store::mark_interrupted_runs`] leaves it alone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Mutex<Connection>,
    reader: Option<Mutex<Connection>>,
    path: Option<PathBuf>,
    /// Directory of per-run lock files (file-backed stores only).
    lock_dir: Option<PathBuf>,
    /// Runs started through this handle and not yet finished, with their held lock file.
    live: Mutex<HashMap<Uuid, Option<File>>>,
    interrupted_at_open: usize,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

fn lock(m: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A panic while holding the lock leaves no half-done transaction: rusqlite rolls back an
    // unfinished `Transaction` on drop, so the connection is still consistent.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The default database path: `$PHONEAGENT_HOME/phoneagent.sqlite3` when the variable is set
/// and non-empty, else `<platform data dir>/phoneagent.sqlite3` (Linux:
/// `~/.local/share/phoneagent/`, macOS: `~/Library/Application Support/dev.phoneagent.PhoneAgent/`,
/// Windows: `%APPDATA%\phoneagent\PhoneAgent\data\`).
pub fn default_db_path() -> Result<PathBuf> {
    db_path_for(std::env::var_os(HOME_ENV))
}

/// The directory of the phone-keyboard journal (SPEC D4, `phoneagent_device::ImeJournal`):
/// `ime-journal` beside [`default_db_path`], so every front end of one data directory finds
/// what a killed run left.
///
/// # Errors
/// [`StoreError::NoDataDir`] as [`default_db_path`].
pub fn default_ime_journal_dir() -> Result<PathBuf> {
    let db = default_db_path()?;
    Ok(db
        .parent()
        .map_or_else(|| PathBuf::from("ime-journal"), |d| d.join("ime-journal")))
}

/// [`default_db_path`] with the value of `PHONEAGENT_HOME` passed in (empty counts as unset).
fn db_path_for(home: Option<std::ffi::OsString>) -> Result<PathBuf> {
    if let Some(home) = home.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home).join(DB_FILE_NAME));
    }
    directories::ProjectDirs::from("dev", "phoneagent", "PhoneAgent")
        .map(|d| d.data_dir().join(DB_FILE_NAME))
        .ok_or(StoreError::NoDataDir)
}

fn configure(conn: &Connection, path: &Path, opts: &StoreOptions, reader: bool) -> Result<()> {
    let open_err = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    conn.busy_timeout(opts.busy_timeout).map_err(open_err)?;
    if !reader {
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(StoreError::Corrupt(format!(
                "SQLite refused WAL mode for {} (journal_mode is {mode}); put PHONEAGENT_HOME on a local disk",
                path.display()
            )));
        }
    }
    let sync = match opts.durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(open_err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(open_err)?;
    if reader {
        conn.pragma_update(None, "query_only", "ON")
            .map_err(open_err)?;
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the store at `path` with default options: WAL,
    /// `synchronous=NORMAL` (see [`Durability`]), migrations to the latest schema, and runs left `running` by a crashed
    /// process marked `interrupted` (see [`Store::interrupted_at_open`]).
    ///
    /// Errors: the parent directory cannot be created, the file is not a SQLite database or is
    /// not writable, or its schema is newer than this build.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, StoreOptions::default())
    }

    /// Opens the store at [`default_db_path`] (`PHONEAGENT_HOME` or the platform data dir).
    pub fn open_default() -> Result<Self> {
        Self::open(default_db_path()?)
    }

    /// Opens the store at `path` with explicit options.
    pub fn open_with(path: impl AsRef<Path>, opts: StoreOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let mut writer = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        configure(&writer, &path, &opts, false)?;
        crate::schema::migrations()
            .to_latest(&mut writer)
            .map_err(|source| StoreError::Migrate { source })?;
        let reader = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        configure(&reader, &path, &opts, true)?;
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".runlocks");
        let lock_dir = path.with_file_name(lock_name);
        Self::finish_open(writer, Some(reader), Some(path), Some(lock_dir), opts)
    }

    /// A private in-memory store (for tests): same schema and behaviour, nothing on disk, gone
    /// when the last clone is dropped.
    pub fn open_in_memory() -> Result<Self> {
        let path = PathBuf::from(":memory:");
        let opts = StoreOptions::default();
        let mut writer = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        configure(&writer, &path, &opts, false)?;
        crate::schema::migrations()
            .to_latest(&mut writer)
            .map_err(|source| StoreError::Migrate { source })?;
        Self::finish_open(writer, None, None, None, opts)
    }

    fn finish_open(
        writer: Connection,
        reader: Option<Connection>,
        path: Option<PathBuf>,
        lock_dir: Option<PathBuf>,
        opts: StoreOptions,
    ) -> Result<Self> {
        let mut store = Self {
            inner: Arc::new(Inner {
                writer: Mutex::new(writer),
                reader: reader.map(Mutex::new),
                path,
                lock_dir,
                live: Mutex::new(HashMap::new()),
                interrupted_at_open: 0,
            }),
        };
        if opts.mark_interrupted {
            let n = store.mark_interrupted_runs()?;
            if n > 0 {
                tracing::warn!(
                    count = n,
                    "marked runs left running by a crashed process as interrupted"
                );
            }
            if let Some(inner) = Arc::get_mut(&mut store.inner) {
                inner.interrupted_at_open = n;
            }
        }
        Ok(store)
    }

    /// The database file, `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// How many runs [`Store::mark_interrupted_runs`] marked while this store was opened.
    pub fn interrupted_at_open(&self) -> usize {
        self.inner.interrupted_at_open
    }

    fn writer(&self) -> MutexGuard<'_, Connection> {
        lock(&self.inner.writer)
    }

    fn reader(&self) -> MutexGuard<'_, Connection> {
        match &self.inner.reader {
            Some(r) => lock(r),
            None => lock(&self.inner.writer),
        }
    }

    fn live(&self) -> MutexGuard<'_, HashMap<Uuid, Option<File>>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_path(&self, id: Uuid) -> Option<PathBuf> {
        self.inner
            .lock_dir
            .as_ref()
            .map(|d| d.join(format!("{id}.lock")))
    }

    /// SQLite's journal mode as it reports it (`wal` for a file-backed store).
    pub fn journal_mode(&self) -> Result<String> {
        self.writer()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(StoreError::sqlite("journal_mode"))
    }

    /// The schema version (SQLite `user_version`) after migrations.
    pub fn schema_version(&self) -> Result<i64> {
        self.writer()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(StoreError::sqlite("schema_version"))
    }

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

    fn release_run_lock(&self, id: Uuid) {
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

    // ---------------------------------------------------------------------------- screenshots

    /// Stores an encoded screenshot once by content hash and returns the hash (lowercase hex
    /// SHA-256, 64 chars). Storing the same bytes again is a cheap no-op returning the same hash.
    /// `width`/`height` are in px; `mime` is e.g. `image/png`.
    pub fn put_screenshot(
        &self,
        bytes: &[u8],
        mime: &str,
        width: u32,
        height: u32,
    ) -> Result<String> {
        let hash = sha256_hex(bytes);
        self.writer()
            .prepare_cached(
                "INSERT OR IGNORE INTO screenshots (sha256, mime, width, height, bytes, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| s.execute(params![hash, mime, width, height, bytes, now_ms()]))
            .map_err(StoreError::sqlite("put_screenshot"))?;
        Ok(hash)
    }

    /// A stored screenshot by hash, `None` when absent.
    pub fn screenshot(&self, sha256: &str) -> Result<Option<StoredScreenshot>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT sha256, mime, width, height, bytes FROM screenshots WHERE sha256 = ?1",
            )
            .map_err(StoreError::sqlite("screenshot"))?;
        stmt.query_row([sha256.to_ascii_lowercase()], |r| {
            Ok(StoredScreenshot {
                sha256: r.get(0)?,
                mime: r.get(1)?,
                width: r.get(2)?,
                height: r.get(3)?,
                bytes: r.get(4)?,
            })
        })
        .optional()
        .map_err(StoreError::sqlite("screenshot"))
    }

    /// Number of distinct screenshots stored.
    pub fn screenshot_count(&self) -> Result<u64> {
        let n: i64 = self
            .reader()
            .query_row("SELECT COUNT(*) FROM screenshots", [], |r| r.get(0))
            .map_err(StoreError::sqlite("screenshot_count"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    // ------------------------------------------------------------------------------- settings

    /// A setting decoded as `T`, `None` when unset (SPEC U5).
    ///
    /// Errors: [`StoreError::Json`] when the stored JSON does not fit `T`.
    pub fn setting<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let raw: Option<String> = self
            .reader()
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(StoreError::sqlite("setting"))?;
        raw.map(|s| serde_json::from_str(&s).map_err(StoreError::json(format!("setting '{key}'"))))
            .transpose()
    }

    /// Sets a setting to `value` (as JSON), replacing any previous value.
    ///
    /// Errors: [`StoreError::SecretInSettings`] when the value has a field that looks like an API
    /// key, password or token (see [`crate::secrets`]) — those go in the OS keyring.
    pub fn set_setting<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let json =
            serde_json::to_value(value).map_err(StoreError::json(format!("setting '{key}'")))?;
        if crate::secrets::is_secret_name(key) && json.as_str().is_some_and(|s| !s.is_empty()) {
            return Err(StoreError::SecretInSettings {
                key: key.to_owned(),
                field: "$".to_owned(),
            });
        }
        if let Some(field) = crate::secrets::find_secret(&json) {
            return Err(StoreError::SecretInSettings {
                key: key.to_owned(),
                field,
            });
        }
        let text = json.to_string();
        self.writer()
            .execute(
                "INSERT INTO settings (key, value, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms",
                params![key, text, now_ms()],
            )
            .map_err(StoreError::sqlite("set_setting"))?;
        Ok(())
    }

    /// Removes a setting; returns whether it existed.
    pub fn remove_setting(&self, key: &str) -> Result<bool> {
        let n = self
            .writer()
            .execute("DELETE FROM settings WHERE key = ?1", [key])
            .map_err(StoreError::sqlite("remove_setting"))?;
        Ok(n > 0)
    }

    /// All settings as raw JSON, ordered by key.
    pub fn settings(&self) -> Result<Vec<(String, serde_json::Value)>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare("SELECT key, value FROM settings ORDER BY key")
            .map_err(StoreError::sqlite("settings"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(StoreError::sqlite("settings"))?;
        let mut out = Vec::new();
        for row in rows {
            let (k, v) = row.map_err(StoreError::sqlite("settings"))?;
            let v = serde_json::from_str(&v).map_err(StoreError::json(format!("setting '{k}'")))?;
            out.push((k, v));
        }
        Ok(out)
    }

    // ---------------------------------------------------------------------- calibration cache

    /// A cached calibration result by key (SPEC M4: the key encodes endpoint, model, thinking
    /// mode and screenshot sizing policy; the caller builds it). `None` when absent.
    pub fn calibration_get(&self, key: &str) -> Result<Option<CalibrationEntry>> {
        let raw: Option<(String, i64)> = self
            .reader()
            .query_row(
                "SELECT value, created_ms FROM calibration_cache WHERE key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(StoreError::sqlite("calibration_get"))?;
        raw.map(|(v, created_ms)| {
            Ok(CalibrationEntry {
                value: serde_json::from_str(&v)
                    .map_err(StoreError::json(format!("calibration cache entry '{key}'")))?,
                created_ms,
            })
        })
        .transpose()
    }

    /// Stores (or replaces) a calibration result.
    pub fn calibration_put<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string(value)
            .map_err(StoreError::json(format!("calibration cache entry '{key}'")))?;
        self.writer()
            .execute(
                "INSERT INTO calibration_cache (key, value, created_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, created_ms = excluded.created_ms",
                params![key, text, now_ms()],
            )
            .map_err(StoreError::sqlite("calibration_put"))?;
        Ok(())
    }

    /// Removes a calibration result; returns whether it existed.
    pub fn calibration_remove(&self, key: &str) -> Result<bool> {
        let n = self
            .writer()
            .execute("DELETE FROM calibration_cache WHERE key = ?1", [key])
            .map_err(StoreError::sqlite("calibration_remove"))?;
        Ok(n > 0)
    }

    pub(crate) fn with_reader<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        f(&self.reader())
    }

    pub(crate) fn with_writer<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        f(&mut self.writer())
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

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    s
}

pub(crate) fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("run id {s:?} is not a UUID: {e}")))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

enum ConstraintKind {
    ForeignKey,
    Other,
}

fn constraint_kind(e: &rusqlite::Error) -> Option<ConstraintKind> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == SqlCode::ConstraintViolation => {
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY {
                Some(ConstraintKind::ForeignKey)
            } else {
                Some(ConstraintKind::Other)
            }
        }
        _ => None,
    }
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    constraint_kind(e).is_some()
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

    #[test]
    fn sha256_of_empty_is_known() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn default_path_honours_phoneagent_home() {
        let p = db_path_for(Some("/srv/pa".into())).unwrap();
        assert_eq!(p, Path::new("/srv/pa/phoneagent.sqlite3"));
        // Empty or unset: the platform data dir, same file name.
        let fallback = db_path_for(Some("".into())).unwrap();
        assert_eq!(fallback, db_path_for(None).unwrap());
        assert_eq!(fallback.file_name().unwrap(), DB_FILE_NAME);
        assert_ne!(fallback.parent().unwrap(), Path::new("/srv/pa"));
    }

    #[test]
    fn store_handle_is_send_sync_and_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<Store>();
        // Clones share one database.
        let a = Store::open_in_memory().unwrap();
        let b = a.clone();
        let run = NewRun::new("shared");
        a.start_run(&run).unwrap();
        assert!(b.run(run.id).unwrap().is_some());
    }

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
