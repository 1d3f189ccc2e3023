//! [`Console`]: the consoles' one piece of state, and the thin logic behind the commands
//! (device sources, the virtual phone, runs, mirror, approvals, history). Everything here
//! delegates to the core crates; nothing decides what the agent does (SPEC U7). The desktop
//! app manages one `Arc<Console>`; `phoneagent web` serves the same one over HTTP.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use phoneagent_device::AdbDevice;
use phoneagent_device::direct::DirectLink;
use phoneagent_llm::KeyStore;
use phoneagent_runtime::{Lang, Session};
use phoneagent_store::Store;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::dto::{AppInfo, SelectedDevice};
use crate::error::{AppError, AppResult};
use crate::events::{CONSOLE_EVENT_CAPACITY, ConsoleEvent};
use crate::mirror::{MirrorSlot, ThumbCache};
use crate::notify::Notifier;
use crate::settings::AppSettings;

/// A phone's runtime session: the phone it drives and the session of the last run started on
/// it (kept until the next start there, so the controls reach the run it is running).
#[derive(Clone)]
pub(crate) struct PhoneSession {
    /// The phone.
    pub(crate) device: SelectedDevice,
    /// Its session.
    pub(crate) session: Session,
}

/// A phone's mirror: how to stop it and its newest frame.
pub(crate) struct PhoneMirror {
    /// Stops the mirror task.
    pub(crate) cancel: CancellationToken,
    /// The newest frame.
    pub(crate) slot: Arc<MirrorSlot>,
}

/// Environment variable: port of the in-process virtual phone (default 0 = ephemeral).
pub const SIM_PORT_ENV: &str = "PHONEAGENT_APP_SIM_PORT";

/// The console's state: see the module docs. Made by [`Console::open`], shared as an `Arc`.
pub struct Console {
    /// This console, for the tasks a run spawns.
    pub(crate) me: Weak<Console>,
    /// What the UI is pushed ([`Console::subscribe`]).
    pub(crate) events: broadcast::Sender<ConsoleEvent>,
    pub(crate) store: Store,
    pub(crate) keys: KeyStore,
    pub(crate) db_path: PathBuf,
    pub(crate) export_dir: PathBuf,
    /// The virtual phone when it was started ([`crate::virtual_phone`]).
    pub(crate) sim: tokio::sync::Mutex<Option<crate::virtual_phone::VirtualPhoneHost>>,
    pub(crate) sim_port: u16,
    /// How to start the virtual phone in its own process (`None`: in this process).
    pub(crate) sim_process: Mutex<Option<crate::virtual_phone::VirtualPhoneProcess>>,
    pub(crate) selected: Mutex<Option<SelectedDevice>>,
    /// One runtime session per phone (serial → the session of the last run started on it;
    /// runs go through it, SPEC A7): phones run at once, one run per phone.
    pub(crate) sessions: Mutex<HashMap<String, PhoneSession>>,
    /// One mirror per phone (serial → its cancellation and newest frame, served at
    /// `pa://localhost/mirror/<serial>/<seq>`, and at `mirror/<seq>` for the selected phone).
    pub(crate) mirrors: Mutex<HashMap<String, PhoneMirror>>,
    /// Downscaled stored screenshots served to the timeline and History.
    pub(crate) thumbs: ThumbCache,
    /// The open phones ("addr|serial|capture" → device): the mirror, readiness and a run on one
    /// phone share one device and so one screen stream, which stops when the last user drops
    /// it.
    pub(crate) devices: Mutex<std::collections::HashMap<String, std::sync::Weak<AdbDevice>>>,
    pub(crate) notifier: Notifier,
    /// Where this computer's ADB key lives for direct connections (SPEC D1): the config dir
    /// shared with the CLI, unless [`Console::set_adb_key_dir`] changed it.
    pub(crate) adb_key_dir: Mutex<Option<PathBuf>>,
    /// One direct link per phone (serial → link): the mirror, readiness and the run share its
    /// one connection (a USB interface can be claimed only once).
    pub(crate) direct_links: Mutex<std::collections::HashMap<String, DirectLink>>,
}

pub(crate) fn settings_lang(s: &AppSettings) -> Lang {
    if s.lang == "zh" { Lang::Zh } else { Lang::En }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Console {
    /// Open the store at `db_path` (created if missing; runs left `running` are marked
    /// `interrupted`, SPEC T1) and set up the state. Exports go to `export_dir`.
    pub fn open(db_path: PathBuf, export_dir: PathBuf) -> AppResult<Arc<Self>> {
        if let Some(dir) = db_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                AppError::coded(
                    phoneagent_protocol::ErrorCode::Store,
                    format!("cannot create the data directory {}: {e}", dir.display()),
                )
            })?;
        }
        let store = Store::open(&db_path)?;
        let sim_port = std::env::var(SIM_PORT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(Arc::new_cyclic(|me| Self {
            me: me.clone(),
            events: broadcast::channel(CONSOLE_EVENT_CAPACITY).0,
            store,
            keys: KeyStore::new(),
            db_path,
            export_dir,
            sim: tokio::sync::Mutex::new(None),
            sim_port,
            sim_process: Mutex::new(None),
            selected: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            mirrors: Mutex::new(HashMap::new()),
            thumbs: ThumbCache::default(),
            devices: Mutex::new(std::collections::HashMap::new()),
            notifier: Notifier::new(),
            adb_key_dir: Mutex::new(None),
            direct_links: Mutex::new(std::collections::HashMap::new()),
        }))
    }

    /// Follow what the console pushes to the UI: every agent event of its runs (`agent-event`)
    /// and each run's end (`run-ended`), in order. A front end forwards each to its clients.
    pub fn subscribe(&self) -> broadcast::Receiver<ConsoleEvent> {
        self.events.subscribe()
    }

    /// Push an event to every subscriber (none listening is fine).
    pub(crate) fn emit(&self, name: &str, payload: &impl serde::Serialize) {
        let _ = self.events.send(ConsoleEvent::new(name, payload));
    }

    /// This console as an `Arc` (it is always made as one by [`Console::open`]).
    pub(crate) fn arc(&self) -> AppResult<Arc<Self>> {
        self.me
            .upgrade()
            .ok_or_else(|| AppError::internal("the console is shutting down"))
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Paths and version.
    pub fn info(&self) -> AppInfo {
        AppInfo {
            db_path: self.db_path.display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            export_dir: self.export_dir.display().to_string(),
        }
    }

    /// The app's language (Settings), for text the backend shows itself (notifications).
    pub(crate) fn lang(&self) -> Lang {
        AppSettings::load(&self.store)
            .map(|s| settings_lang(&s))
            .unwrap_or(Lang::En)
    }

    /// Run the virtual phone in its own process started as `process` describes (the front
    /// end's binary must call [`crate::virtual_phone::run_child_if_asked`] first in `main`),
    /// from the next start of the phone on. Without this it runs in this process.
    pub fn set_virtual_phone_process(&self, process: crate::virtual_phone::VirtualPhoneProcess) {
        *lock(&self.sim_process) = Some(process);
    }

    /// The process id of the virtual phone's own process while one runs (issue #14: its memory
    /// is reported apart from the app's).
    pub async fn virtual_phone_pid(&self) -> Option<u32> {
        self.sim.lock().await.as_ref().and_then(|s| s.child_pid())
    }

    /// The directory next to the database, where `approval-policy.toml` is looked up.
    pub(crate) fn config_dir(&self) -> &std::path::Path {
        self.db_path.parent().unwrap_or(std::path::Path::new("."))
    }
}

/// The safety gate's screen reader (SPEC S10), loaded on the first run and shared by every run
/// after it; `None` (with a warning in the log) when the OCR engine is not installed.
pub(crate) fn screen_reader() -> Option<Arc<phoneagent_vision::ScreenReader>> {
    static READER: std::sync::OnceLock<Option<Arc<phoneagent_vision::ScreenReader>>> =
        std::sync::OnceLock::new();
    READER
        .get_or_init(|| {
            match phoneagent_vision::ScreenReader::new(phoneagent_vision::ReaderConfig::default()) {
                Ok(r) => Some(Arc::new(r)),
                Err(e) => {
                    tracing::warn!("the safety gate cannot read the screen: {e}");
                    None
                }
            }
        })
        .clone()
}

/// Where exports go for a console on `db_path` (the desktop app and `phoneagent web` alike):
/// `$PHONEAGENT_EXPORT_DIR` when set and not empty, else `exports/` next to the database.
pub fn default_export_dir(db_path: &std::path::Path) -> PathBuf {
    std::env::var_os("PHONEAGENT_EXPORT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            db_path
                .parent()
                .map(|p| p.join("exports"))
                .unwrap_or_else(|| PathBuf::from("exports"))
        })
}
