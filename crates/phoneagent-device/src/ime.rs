//! The IME guard (SPEC D4): the user's original input method is restored on every exit path.
//!
//! [`ImeGuard`] is created *before* the switch to ADB Keyboard. It is disarmed only by a
//! successful [`ImeGuard::restore`]. If it is dropped while still armed (error path, cancelled
//! task, panic unwinding, the device value dropped), its `Drop` schedules the restore on a
//! dedicated thread with its own small tokio runtime — deliberately not on the caller's runtime,
//! which may be shutting down at that moment and would drop a spawned task unrun. Front ends
//! call [`wait_for_ime_restores`] before exiting so the process does not end first.

use crate::link::AdbLink;
use crate::server::ShellProtocol;
use crate::text::shell_escape;
use crate::types::DeviceError;
use crate::{Result, parse};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Time limit of one restore attempt (all its commands).
pub const RESTORE_TIMEOUT: Duration = Duration::from_secs(10);

static PENDING: Mutex<usize> = Mutex::new(0);
static PENDING_CV: Condvar = Condvar::new();

fn pending_add(delta: isize) {
    let mut g = PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *g = g.saturating_add_signed(delta);
    PENDING_CV.notify_all();
}

/// Number of IME restores scheduled by dropped guards and not finished yet.
pub fn pending_ime_restores() -> usize {
    *PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Block until every scheduled IME restore has finished, or `timeout` passes. Returns `true`
/// when none is pending. For front ends at exit (outside async code).
pub fn wait_for_ime_restores_blocking(timeout: Duration) -> bool {
    let g = PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (g, _) = PENDING_CV
        .wait_timeout_while(g, timeout, |n| *n > 0)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *g == 0
}

/// Async form of [`wait_for_ime_restores_blocking`].
pub async fn wait_for_ime_restores(timeout: Duration) -> bool {
    tokio::task::spawn_blocking(move || wait_for_ime_restores_blocking(timeout))
        .await
        .unwrap_or(false)
}

/// The IME journal (SPEC D4): before the first switch to ADB Keyboard the user's IME is
/// written to `<dir>/<serial>.ime` (one line, empty for "no setting") and the file is kept
/// locked (an OS file lock) while the switch lasts; a successful restore removes it. A process
/// killed with SIGKILL leaves the file behind, unlocked, and the next [`crate::AdbDevice`]
/// opened on that phone with the same directory puts the IME back. An entry still locked
/// belongs to a live run (this process or another) and is left alone.
#[derive(Debug, Clone)]
pub struct ImeJournal {
    file: std::path::PathBuf,
}

/// A recorded, locked journal entry, held by the [`ImeGuard`] while ADB Keyboard is on.
#[derive(Debug)]
pub struct JournalEntry {
    path: std::path::PathBuf,
    _lock: std::fs::File,
}

impl JournalEntry {
    /// Remove the entry (the IME is back), then release the lock.
    pub fn clear(self) {
        remove_quietly(&self.path);
    }
}

fn remove_quietly(path: &std::path::Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(file = %path.display(), "cannot remove the IME journal: {e}");
    }
}

impl ImeJournal {
    /// The journal entry of `serial` in `dir` (the serial's characters outside
    /// `[A-Za-z0-9._-]` become `_`, so `192.168.1.5:5555` is a plain file name).
    pub fn new(dir: &std::path::Path, serial: &str) -> Self {
        let name: String = serial
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            file: dir.join(format!("{name}.ime")),
        }
    }

    /// The file of this entry.
    pub fn path(&self) -> &std::path::Path {
        &self.file
    }

    /// Record `original` (the IME to put back) and lock the entry. Creates the directory.
    ///
    /// # Errors
    /// [`DeviceError::Config`] naming the file when it cannot be written or locked.
    pub fn record(&self, original: Option<&str>) -> Result<JournalEntry> {
        use std::io::Write as _;
        let write = || -> std::io::Result<std::fs::File> {
            if let Some(d) = self.file.parent() {
                std::fs::create_dir_all(d)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&self.file)?;
            f.lock()?;
            f.set_len(0)?;
            f.write_all(format!("{}\n", original.unwrap_or("")).as_bytes())?;
            f.sync_all()?;
            Ok(f)
        };
        let lock = write().map_err(|e| {
            DeviceError::Config(format!(
                "cannot write the IME journal {}: {e} (check that the data directory is writable)",
                self.file.display()
            ))
        })?;
        Ok(JournalEntry {
            path: self.file.clone(),
            _lock: lock,
        })
    }

    /// The recorded IME: `None` when there is no entry, `Some(None)` for "no setting".
    pub fn read(&self) -> Option<Option<String>> {
        let s = std::fs::read_to_string(&self.file).ok()?;
        let line = s.lines().next().unwrap_or("").trim().to_string();
        Some((!line.is_empty()).then_some(line))
    }

    /// Take an entry left by a dead process: `None` when there is none or a live run holds
    /// it (locked).
    fn take_orphan(&self) -> Option<(Option<String>, JournalEntry)> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.file)
            .ok()?;
        if f.try_lock().is_err() {
            return None;
        }
        let original = self.read()?;
        Some((
            original,
            JournalEntry {
                path: self.file.clone(),
                _lock: f,
            },
        ))
    }
}

/// Put back an IME a killed process left switched (SPEC D4): when `journal` has an entry no
/// live run holds and the phone's IME is still ADB Keyboard, restore the recorded one; then
/// clear the entry. Returns the restored IME (`Some(None)`: the setting was reset) or `None`
/// when there was nothing to do.
///
/// # Errors
/// Transport errors and [`DeviceError::ImeSwitchFailed`]; the entry is kept for a later try.
pub(crate) async fn recover_from_journal(
    server: &AdbLink,
    serial: &str,
    p: ShellProtocol,
    journal: &ImeJournal,
    adb_keyboard: &str,
) -> Result<Option<Option<String>>> {
    let Some((original, entry)) = journal.take_orphan() else {
        return Ok(None);
    };
    let current = current_ime_on(server, serial, p).await?;
    if current.as_deref() != Some(adb_keyboard) || original.as_deref() == Some(adb_keyboard) {
        // The user (or a finished restore) already changed it: nothing to put back.
        entry.clear();
        return Ok(None);
    }
    restore_ime_on(server, serial, p, original.as_deref()).await?;
    entry.clear();
    tracing::info!(%serial, ime = ?original, "restored the IME a killed run left switched");
    Ok(Some(original))
}

/// Restores the user's IME when disarmed by [`ImeGuard::restore`] or, failing that, on drop.
#[derive(Debug)]
pub struct ImeGuard {
    server: AdbLink,
    serial: String,
    protocol: ShellProtocol,
    original: Option<String>,
    armed: bool,
    journal: Option<JournalEntry>,
}

impl ImeGuard {
    /// Arm a guard that will put `original` back on `serial` (`None`: the setting was empty,
    /// restored with `ime reset`), reaching the phone through `link` (an [`crate::AdbServer`]
    /// or a [`crate::DirectLink`]).
    pub fn new(
        link: impl Into<AdbLink>,
        serial: String,
        protocol: ShellProtocol,
        original: Option<String>,
    ) -> Self {
        Self {
            server: link.into(),
            serial,
            protocol,
            original,
            armed: true,
            journal: None,
        }
    }

    /// Hold `journal` (recorded before the switch): it is cleared when this guard restores
    /// the IME, and stays (unlocked once the process is gone) when it cannot.
    pub fn with_journal(mut self, journal: Option<JournalEntry>) -> Self {
        self.journal = journal;
        self
    }

    /// The IME to restore.
    pub fn original(&self) -> Option<&str> {
        self.original.as_deref()
    }

    /// True until a restore succeeded.
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// Put the original IME back and verify it with `settings get secure
    /// default_input_method`. On success the guard is disarmed; on failure it stays armed (a
    /// later call, or the drop, tries again).
    ///
    /// # Errors
    /// [`DeviceError::ImeSwitchFailed`] when the setting does not take; transport errors.
    pub async fn restore(&mut self) -> Result<()> {
        if !self.armed {
            return Ok(());
        }
        let fut = restore_ime_on(
            &self.server,
            &self.serial,
            self.protocol,
            self.original.as_deref(),
        );
        match tokio::time::timeout(RESTORE_TIMEOUT, fut).await {
            Ok(Ok(())) => {
                self.armed = false;
                if let Some(j) = self.journal.take() {
                    j.clear();
                }
                tracing::info!(serial = %self.serial, ime = ?self.original, "restored the original IME");
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(DeviceError::Timeout {
                command: "restore IME".into(),
                ms: RESTORE_TIMEOUT.as_millis() as u64,
            }),
        }
    }
}

impl Drop for ImeGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.armed = false;
        // A direct link gets its own connection: the restore runs on another runtime.
        let (server, serial, protocol, original, journal) = (
            self.server.detached(),
            self.serial.clone(),
            self.protocol,
            self.original.clone(),
            self.journal.take(),
        );
        tracing::info!(serial = %serial, "IME guard dropped while armed: scheduling the restore");
        pending_add(1);
        let spawned = std::thread::Builder::new()
            .name("phoneagent-ime-restore".into())
            .spawn(move || {
                struct Done;
                impl Drop for Done {
                    fn drop(&mut self) {
                        pending_add(-1);
                    }
                }
                let _done = Done;
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        tracing::warn!(%serial, "cannot restore the IME: no runtime: {e}");
                        return;
                    }
                };
                let r = rt.block_on(async {
                    tokio::time::timeout(
                        RESTORE_TIMEOUT,
                        restore_ime_on(&server, &serial, protocol, original.as_deref()),
                    )
                    .await
                });
                match r {
                    Ok(Ok(())) => {
                        if let Some(j) = journal {
                            j.clear();
                        }
                        tracing::info!(%serial, "restored the original IME (from drop)")
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(%serial, "could not restore the original IME: {e}")
                    }
                    Err(_) => tracing::warn!(%serial, "restoring the original IME timed out"),
                }
            });
        if let Err(e) = spawned {
            pending_add(-1);
            tracing::warn!("cannot start the IME restore thread: {e}");
        }
    }
}

async fn sh(server: &AdbLink, serial: &str, p: ShellProtocol, cmd: &str) -> Result<String> {
    let out = server.shell(serial, cmd, p).await?;
    if out.failed() {
        return Err(DeviceError::CommandFailed {
            command: cmd.into(),
            detail: out.combined().trim().to_string(),
        });
    }
    Ok(out.combined())
}

/// Read `settings get secure default_input_method`.
pub(crate) async fn current_ime_on(
    server: &AdbLink,
    serial: &str,
    p: ShellProtocol,
) -> Result<Option<String>> {
    let out = sh(
        server,
        serial,
        p,
        "settings get secure default_input_method",
    )
    .await?;
    Ok(parse::parse_settings_value(&out))
}

/// `ime set ID` (after `ime enable ID` when `enable`), verified by reading the setting back a
/// few times (the setting may lag the command by a moment).
pub(crate) async fn set_ime_on(
    server: &AdbLink,
    serial: &str,
    p: ShellProtocol,
    id: &str,
    enable: bool,
) -> Result<()> {
    let esc = shell_escape(id);
    if enable {
        sh(server, serial, p, &format!("ime enable {esc}"))
            .await
            .map_err(|e| ime_err(e, id))?;
    }
    let out = sh(server, serial, p, &format!("ime set {esc}"))
        .await
        .map_err(|e| ime_err(e, id))?;
    let mut seen = None;
    for i in 0..5 {
        seen = current_ime_on(server, serial, p).await?;
        if seen.as_deref() == Some(id) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50 * (i + 1))).await;
    }
    Err(DeviceError::ImeSwitchFailed(format!(
        "`ime set {id}` said {:?} but the current input method is {:?}: enable the keyboard in Settings → System → Languages & input",
        out.trim(),
        seen
    )))
}

fn ime_err(e: DeviceError, id: &str) -> DeviceError {
    match e {
        DeviceError::CommandFailed { command, detail } => DeviceError::ImeSwitchFailed(format!(
            "`{command}` failed ({detail}): check that {id} is installed and enabled in Settings → System → Languages & input"
        )),
        // Transport errors keep their type, so a lost device stays recognisable (D6).
        other => other,
    }
}

async fn restore_ime_on(
    server: &AdbLink,
    serial: &str,
    p: ShellProtocol,
    original: Option<&str>,
) -> Result<()> {
    match original {
        Some(id) => set_ime_on(server, serial, p, id, false).await,
        None => sh(server, serial, p, "ime reset").await.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counter_waits() {
        pending_add(1);
        assert!(!wait_for_ime_restores_blocking(Duration::from_millis(20)));
        let t = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(30));
            pending_add(-1);
        });
        assert!(wait_for_ime_restores_blocking(Duration::from_secs(5)));
        t.join().unwrap();
    }
}
