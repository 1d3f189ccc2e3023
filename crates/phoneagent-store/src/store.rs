//! The [`Store`] handle: opening, runs, events, screenshots, settings, calibration cache.
//!
//! This file opens the store (connections, pragmas, migrations, the data directory) and holds
//! the shared helpers; `runs`, `events`, `screenshots` and `settings` (with the calibration
//! cache) add the methods of each table.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode as SqlCode};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Result, StoreError};

mod events;
mod runs;
mod screenshots;
mod settings;

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

    pub(crate) fn with_reader<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        f(&self.reader())
    }

    pub(crate) fn with_writer<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        f(&mut self.writer())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::NewRun;

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
}
