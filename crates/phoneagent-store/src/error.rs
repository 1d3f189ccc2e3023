//! The store's error type. Every variant names what went wrong and what to do about it.

use std::path::PathBuf;

use uuid::Uuid;

/// Result alias for this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything the run store can fail with.
///
/// Front ends map all of these to [`phoneagent_protocol::ErrorCode::Store`] (see
/// [`StoreError::code`]); the message is meant for the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Neither `PHONEAGENT_HOME` nor a platform data directory is available.
    #[error(
        "could not find a data directory for PhoneAgent (no home directory?): set PHONEAGENT_HOME to a writable directory"
    )]
    NoDataDir,

    /// The data directory could not be created.
    #[error(
        "could not create the data directory {path}: {source}; check its permissions or set PHONEAGENT_HOME to a writable directory"
    )]
    CreateDir {
        /// The directory we tried to create.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// SQLite refused to open (or configure) the database file.
    #[error(
        "could not open the run store {path}: {source}; check that the file is a PhoneAgent database and is writable, or set PHONEAGENT_HOME to another directory"
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },

    /// The schema could not be brought to the current version.
    #[error(
        "could not migrate the run store schema: {source}; if the database was written by a newer PhoneAgent, use that version or set PHONEAGENT_HOME to another directory"
    )]
    Migrate {
        /// The migration error.
        #[source]
        source: rusqlite_migration::Error,
    },

    /// A SQLite statement failed.
    #[error(
        "run store operation '{op}' failed: {source}; the disk may be full or the database damaged"
    )]
    Sqlite {
        /// What we were doing (`append_event`, `list_runs`, …).
        op: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },

    /// A run id that is not in the store.
    #[error("no run with id {0} in the store; list runs with `phoneagent runs`")]
    UnknownRun(Uuid),

    /// A run id that is already in the store.
    #[error("a run with id {0} already exists in the store; every run needs a fresh id")]
    DuplicateRun(Uuid),

    /// An event with this (run, seq) was already committed.
    #[error(
        "event {seq} of run {run_id} was already recorded; events are append-only and each seq is used once"
    )]
    DuplicateEvent {
        /// The run.
        run_id: Uuid,
        /// The sequence number used twice.
        seq: u64,
    },

    /// A run id that is not a UUID.
    #[error("run id {0:?} is not a UUID; run ids come from NewRun::new (v4 UUIDs)")]
    BadRunId(String),

    /// The run is still in progress (in this or another process).
    #[error("run {0} is still running; cancel it or wait for it to end first")]
    RunStillRunning(Uuid),

    /// `finish_run` was given `running` as the final status.
    #[error(
        "run {0} cannot be finished with status 'running': give its final status (succeeded, failed, cancelled, taken_over or interrupted)"
    )]
    NotTerminal(Uuid),

    /// A run that already ended cannot be ended again.
    #[error("run {0} has already ended; a run's outcome is recorded once")]
    RunAlreadyEnded(Uuid),

    /// A stored value could not be (de)serialized.
    #[error("{what} could not be read or written as JSON: {source}")]
    Json {
        /// What it was (`setting 'x'`, `payload of event 3`, …).
        what: String,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },

    /// A stored value is not what this version of PhoneAgent writes.
    #[error(
        "the run store holds an unexpected value: {0}; the database may be damaged or from another version"
    )]
    Corrupt(String),

    /// Refused to write something that looks like a secret into SQLite.
    #[error(
        "setting '{key}' contains a field '{field}' that looks like a secret; API keys and passwords belong in the OS keyring, never in the settings store"
    )]
    SecretInSettings {
        /// The setting key.
        key: String,
        /// The JSON path of the offending field.
        field: String,
    },

    /// Writing an export file failed.
    #[error("could not write the export to {path}: {source}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The stable error code front ends show (`store`).
    pub fn code(&self) -> phoneagent_protocol::ErrorCode {
        phoneagent_protocol::ErrorCode::Store
    }

    pub(crate) fn sqlite(op: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Self::Sqlite { op, source }
    }

    pub(crate) fn json(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> Self {
        let what = what.into();
        move |source| Self::Json { what, source }
    }
}
