//! Schema migrations (`rusqlite_migration`, tracked in SQLite's `user_version`).
//!
//! Append new migrations at the end; never edit a released one.

use rusqlite_migration::{M, Migrations};

/// Migration 1: the initial schema.
///
/// * `runs`: one row per run; `status` is a [`crate::RunStatus`] name; times in ms since the
///   Unix epoch; `summary`/`metadata` are JSON text; token/cost totals are set at the end.
/// * `events`: the append-only event stream, `PRIMARY KEY (run_id, seq)`, payload JSON text.
/// * `screenshots`: encoded images stored once, keyed by lowercase hex SHA-256.
/// * `settings`: JSON values by key (U5). Never secrets.
/// * `calibration_cache`: frozen coordinate contracts by cache key (M4).
/// * `approvals`: the approval ledger (AR8, S9): one row per gate decision and per human
///   request, maintained from events in the same transaction that records them and rebuildable
///   from the events (see [`crate::ledger`]).
const M1: &str = r#"
CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    task              TEXT NOT NULL,
    status            TEXT NOT NULL,
    started_ms        INTEGER NOT NULL,
    ended_ms          INTEGER,
    device_serial     TEXT,
    model_profile     TEXT,
    model             TEXT,
    access_mode       TEXT NOT NULL,
    termination_code  TEXT,
    summary           TEXT NOT NULL DEFAULT 'null',
    metadata          TEXT NOT NULL DEFAULT '{}',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL
) STRICT;
CREATE INDEX runs_by_start ON runs(started_ms DESC);
CREATE INDEX runs_by_status ON runs(status);

CREATE TABLE events (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    ts_ms   INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE screenshots (
    sha256     TEXT PRIMARY KEY NOT NULL,
    mime       TEXT NOT NULL,
    width      INTEGER NOT NULL,
    height     INTEGER NOT NULL,
    bytes      BLOB NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE calibration_cache (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE approvals (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    request_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    step        INTEGER NOT NULL,
    ts_ms       INTEGER NOT NULL,
    tool        TEXT,
    tier        TEXT,
    decision    TEXT NOT NULL,
    decided_by  TEXT,
    latency_ms  INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (run_id, request_id)
) STRICT;
CREATE INDEX approvals_by_time ON approvals(ts_ms DESC);
"#;

/// All migrations, oldest first.
pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(vec![M::up(M1)])
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
    }
}
