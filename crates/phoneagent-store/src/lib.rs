//! # phoneagent-store
//!
//! PhoneAgent's run store (SPEC T1–T2, U5–U6): one SQLite file (rusqlite, bundled SQLite, WAL,
//! schema migrations with `rusqlite_migration`) holding
//!
//! * **runs** — task, status (`running`, `succeeded`, `failed`, `cancelled`, `taken_over`,
//!   `interrupted`), start/end times (ms since the Unix epoch), device serial, model profile and
//!   model, access mode, termination code, summary JSON, token and cost totals;
//! * **events** — the append-only `AgentEvent` stream in a generic shape
//!   ([`EventRecord`]: `seq`, `ts_ms`, `kind`, JSON `payload`), `PRIMARY KEY (run_id, seq)`, each
//!   committed before [`Store::append_event`] returns, so a crash loses at most the in-flight step;
//! * **screenshots** — encoded images stored once by SHA-256 ([`Store::put_screenshot`]);
//! * **settings** — JSON values by key, typed through serde ([`Store::setting`]); secrets are
//!   refused ([`StoreError::SecretInSettings`]), they belong in the OS keyring;
//! * **calibration cache** — frozen coordinate contracts by key ([`Store::calibration_get`]);
//! * **approval ledger** — a materialized view of gate decisions and human requests, kept in
//!   step with the events ([`ledger`]).
//!
//! Runs left `running` by a crashed process are marked `interrupted` when the store is next
//! opened ([`Store::mark_interrupted_runs`]); a run that is still alive in another process is
//! recognized by its advisory lock file and left alone.
//!
//! Exports ([`export`]): the trajectory JSON (schema `1.3`, with the pure-vision policy block,
//! execution facts, recovery counters and token metrics derived from the events) and a
//! self-contained HTML report.
//!
//! The data directory is `$PHONEAGENT_HOME` when set, else the platform data directory
//! ([`default_db_path`]). See [`Store`] for the concurrency model.

mod error;
pub mod export;
pub mod ledger;
mod schema;
pub mod secrets;
mod store;
mod types;

pub use error::{Result, StoreError};
pub use ledger::{LedgerEntry, approval_reviews_from_events};
pub use store::{
    DB_FILE_NAME, Durability, HOME_ENV, Store, StoreOptions, default_db_path,
    default_ime_journal_dir, sha256_hex,
};
pub use types::{
    CalibrationEntry, EventRecord, NewRun, RunEnd, RunRecord, RunStatus, StoredScreenshot, now_ms,
};
