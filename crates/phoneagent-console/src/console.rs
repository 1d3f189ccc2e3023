//! [`Console`]: the consoles' one piece of state, and the thin logic behind the commands
//! (device sources, the virtual phone, runs, mirror, approvals, history). Everything here
//! delegates to the core crates; nothing decides what the agent does (SPEC U7). The desktop
//! app manages one `Arc<Console>`; `phoneagent web` serves the same one over HTTP.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use base64::Engine as _;
use phoneagent_device::direct::key::AdbKey;
use phoneagent_device::direct::{DirectLink, DirectOptions, DirectTarget};
use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device, DeviceState, Transport,
};
use phoneagent_llm::{ApiKey, KeyStore, ModelsConfig, Role, RoleResolution};
use phoneagent_protocol::ApprovalReview;
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AccessMode, AgentEvent, DevicePoint, EventEnvelope};
use phoneagent_review::auto::{
    AutoReviewConfig, AutoReviewHandle, AutoReviewStatus, OverrideGrant,
};
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    Agent, AgentConfig, AgentParts, HumanRequest, Lang, ModelRoute, PendingApprovals,
};
use phoneagent_sim::{SimConfig, SimServer};
use phoneagent_store::Store;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::dto::{
    AnswerInput, AppInfo, CheckView, ConnectionTestView, DemoScenarioView, DeviceEntry,
    DevicesView, ExportResult, FamilyView, KeyStatus, LedgerRow, MirrorMessage, ModelCatalog,
    PendingRequest, RunEnded, RunSummary, SelectedDevice, SetupStatus, SourceProblem,
    StartRunRequest, VirtualPhone,
};
use crate::error::{AppError, AppResult};
use crate::events::{CONSOLE_EVENT_CAPACITY, ConsoleEvent, event_names};
use crate::mirror::{MirrorSlot, PictureResponse, ThumbCache};
use crate::notify::Notifier;
use crate::settings::{AppSettings, ApprovalPolicySettings, ModelProfile, parse_mode};

/// Settings key of the recent tasks list.
pub const RECENT_TASKS_KEY: &str = "app.recent_tasks";
/// Environment variable: port of the in-process virtual phone (default 0 = ephemeral).
pub const SIM_PORT_ENV: &str = "PHONEAGENT_APP_SIM_PORT";

/// The model routes of one run, per role (SPEC M2).
struct Routes {
    actor: ModelRoute,
    verifier: Option<ModelRoute>,
    safety_reviewer: Option<ModelRoute>,
    auto_reviewer: Option<ModelRoute>,
}

struct ActiveRun {
    run_id: Option<String>,
    cancel: CancellationToken,
    /// Pause/resume of this run's agent (set once the agent exists).
    pause: Option<phoneagent_runtime::control::PauseHandle>,
    /// The approve-for-me engine of this run (AR7/AR8), in that mode only.
    auto_review: Option<AutoReviewHandle>,
}

/// The console's state: see the module docs. Made by [`Console::open`], shared as an `Arc`.
pub struct Console {
    /// This console, for the tasks a run spawns.
    me: Weak<Console>,
    /// What the UI is pushed ([`Console::subscribe`]).
    events: broadcast::Sender<ConsoleEvent>,
    store: Store,
    keys: KeyStore,
    db_path: PathBuf,
    export_dir: PathBuf,
    sim: tokio::sync::Mutex<Option<SimServer>>,
    sim_port: u16,
    selected: Mutex<Option<SelectedDevice>>,
    approvals: PendingApprovals,
    run: Arc<Mutex<Option<ActiveRun>>>,
    mirror: Mutex<Option<CancellationToken>>,
    /// The newest mirror frame, served at `pa://localhost/mirror/<seq>`.
    mirror_slot: Arc<MirrorSlot>,
    /// Downscaled stored screenshots served to the timeline and History.
    thumbs: ThumbCache,
    /// The open phones ("addr|serial|capture" → device): the mirror, readiness and a run on one
    /// phone share one device and so one screen stream, which stops when the last user drops
    /// it.
    devices: Mutex<std::collections::HashMap<String, std::sync::Weak<AdbDevice>>>,
    notifier: Notifier,
    /// Where this computer's ADB key lives for direct connections (SPEC D1): the config dir
    /// shared with the CLI, unless [`Console::set_adb_key_dir`] changed it.
    adb_key_dir: Mutex<Option<PathBuf>>,
    /// One direct link per phone (serial → link): the mirror, readiness and the run share its
    /// one connection (a USB interface can be claimed only once).
    direct_links: Mutex<std::collections::HashMap<String, DirectLink>>,
}

/// The refusal of a second run while one is active.
fn busy_error() -> AppError {
    AppError::new(
        "busy",
        "a task is already running: stop it first or wait for it to end",
    )
}

fn settings_lang(s: &AppSettings) -> Lang {
    if s.lang == "zh" { Lang::Zh } else { Lang::En }
}

/// `adb_addr` of phones reached without an adb server over USB (SPEC D1).
pub const DIRECT_USB: &str = "direct:usb";
/// `adb_addr` of phones reached without an adb server over TCP (`serial` = `HOST:PORT`).
pub const DIRECT_TCP: &str = "direct:tcp";
/// Settings key of the phones the user added by address (direct TCP).
pub const DIRECT_TARGETS_KEY: &str = "app.direct_targets";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn parse_addr(s: &str) -> AppResult<AdbServerAddr> {
    Ok(AdbServerAddr::parse(s)?)
}

fn addr_string(a: &AdbServerAddr) -> String {
    format!("{}:{}", a.host, a.port)
}

fn state_name(s: &DeviceState) -> String {
    match s {
        DeviceState::Device => "device".into(),
        DeviceState::Unauthorized => "unauthorized".into(),
        DeviceState::Offline => "offline".into(),
        DeviceState::Other(o) => o.clone(),
    }
}

/// The pending-request view of a runtime request.
pub fn pending_view(r: &HumanRequest) -> PendingRequest {
    let mut p = PendingRequest {
        id: r.id.clone(),
        kind: String::new(),
        tool: None,
        target: None,
        tier: None,
        reasons: vec![],
        text: None,
        task: r.task.clone(),
        expires_at_ms: r.expires_at_ms,
    };
    match &r.kind {
        HumanRequestKind::Approval {
            tool,
            target,
            tier,
            reasons,
            ..
        } => {
            p.kind = "approval".into();
            p.tool = Some(tool.clone());
            p.target = Some(target.clone());
            p.tier = serde_json::to_value(tier)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string));
            p.reasons = reasons.clone();
        }
        HumanRequestKind::AskUser { question } => {
            p.kind = "ask_user".into();
            p.text = Some(question.clone());
        }
        HumanRequestKind::TakeOver { message } => {
            p.kind = "take_over".into();
            p.text = Some(message.clone());
        }
    }
    p
}

fn to_response(a: AnswerInput) -> HumanResponse {
    match a {
        AnswerInput::Approve => HumanResponse::Approve,
        AnswerInput::Reject { note } => HumanResponse::Reject {
            note: note.filter(|n| !n.trim().is_empty()),
        },
        AnswerInput::Answer { text } => HumanResponse::Answer { text },
        AnswerInput::HandBack => HumanResponse::HandBack,
    }
}

fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
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
            selected: Mutex::new(None),
            approvals: PendingApprovals::new(),
            run: Arc::new(Mutex::new(None)),
            mirror: Mutex::new(None),
            mirror_slot: Arc::new(MirrorSlot::default()),
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
    fn emit(&self, name: &str, payload: &impl serde::Serialize) {
        let _ = self.events.send(ConsoleEvent::new(name, payload));
    }

    /// This console as an `Arc` (it is always made as one by [`Console::open`]).
    fn arc(&self) -> AppResult<Arc<Self>> {
        self.me
            .upgrade()
            .ok_or_else(|| AppError::internal("the console is shutting down"))
    }

    /// Use `dir/adbkey` as this computer's ADB key for direct connections instead of the
    /// shared config dir's (tests; a portable install).
    pub fn set_adb_key_dir(&self, dir: PathBuf) {
        *lock(&self.adb_key_dir) = Some(dir);
    }

    fn adb_key(&self) -> AppResult<AdbKey> {
        let dir = match lock(&self.adb_key_dir).clone() {
            Some(d) => d,
            None => phoneagent_device::direct::key::config_dir()?,
        };
        Ok(AdbKey::load_or_create(
            &dir.join("adbkey"),
            phoneagent_device::direct::key::android_adbkey_path().as_deref(),
        )?)
    }

    /// The shared direct link to `target` (created on first use).
    fn direct_link(&self, target: DirectTarget) -> AppResult<DirectLink> {
        let serial = target.serial();
        if let Some(l) = lock(&self.direct_links).get(&serial) {
            return Ok(l.clone());
        }
        let link = DirectLink::new(target, self.adb_key()?, DirectOptions::default());
        Ok(lock(&self.direct_links)
            .entry(serial)
            .or_insert(link)
            .clone())
    }

    /// Phones the user added by address (`HOST:PORT`, direct TCP), in the order added.
    pub fn direct_targets(&self) -> Vec<String> {
        self.store
            .setting::<Vec<String>>(DIRECT_TARGETS_KEY)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Add a phone reached over the network without an adb server (`HOST[:PORT]`, port 5555 by
    /// default; the phone must be in TCP debugging mode, `adb tcpip 5555`). Remembered.
    ///
    /// # Errors
    /// `config` naming the malformed address.
    pub fn add_direct_device(&self, addr: &str) -> AppResult<String> {
        let target = DirectTarget::parse_tcp(addr.trim()).map_err(|_| {
            AppError::invalid(format!(
                "{:?} is not a phone address: use its IP and port, e.g. 192.168.1.20:5555 (the port is 5555 after `adb tcpip 5555`)",
                addr.trim()
            ))
        })?;
        let serial = target.serial();
        let mut list = self.direct_targets();
        if !list.contains(&serial) {
            list.push(serial.clone());
            self.store.set_setting(DIRECT_TARGETS_KEY, &list)?;
        }
        Ok(serial)
    }

    /// Forget a phone added by address (and unselect it if it was selected).
    ///
    /// # Errors
    /// Store errors.
    pub fn remove_direct_device(&self, serial: &str) -> AppResult<()> {
        let list: Vec<String> = self
            .direct_targets()
            .into_iter()
            .filter(|s| s != serial)
            .collect();
        self.store.set_setting(DIRECT_TARGETS_KEY, &list)?;
        lock(&self.direct_links).remove(serial);
        let mut sel = lock(&self.selected);
        if sel
            .as_ref()
            .is_some_and(|d| d.adb_addr == DIRECT_TCP && d.serial == serial)
        {
            *sel = None;
        }
        Ok(())
    }

    /// List the phones reached without an adb server: on USB (only when no adb server answers:
    /// with one running, adb owns the USB interface) and the ones added by address.
    async fn direct_devices(
        &self,
        usb: bool,
        problems: &mut Vec<SourceProblem>,
    ) -> Vec<DeviceEntry> {
        let mut out = vec![];
        if usb {
            match phoneagent_device::direct::usb_devices().await {
                Ok(found) => out.extend(found.into_iter().map(|(serial, product)| DeviceEntry {
                    serial,
                    state: "device".into(),
                    model: product,
                    transport: "usb".into(),
                    fix: Some("no adb server: PhoneAgent talks to this phone directly; the first time, accept \"Allow USB debugging?\" on the phone".into()),
                    adb_addr: DIRECT_USB.into(),
                    is_virtual: false,
                })),
                Err(e) => problems.push(SourceProblem {
                    adb_addr: DIRECT_USB.into(),
                    code: e.code().as_str().into(),
                    message: e.to_string(),
                }),
            }
        }
        for serial in self.direct_targets() {
            let entry = |state: &str, model: Option<String>, fix: Option<String>| DeviceEntry {
                serial: serial.clone(),
                state: state.into(),
                model,
                transport: "tcp".into(),
                fix,
                adb_addr: DIRECT_TCP.into(),
                is_virtual: false,
            };
            let link = match DirectTarget::parse_tcp(&serial)
                .map_err(AppError::from)
                .and_then(|t| self.direct_link(t))
            {
                Ok(l) => l,
                Err(e) => {
                    out.push(entry("offline", None, Some(e.message)));
                    continue;
                }
            };
            // The shared link's own connection when it has one (a run or the mirror may be
            // using it), else a handshake; bounded so a silent address cannot stall the list.
            out.push(
                match tokio::time::timeout(Duration::from_secs(4), link.device_info()).await {
                    Ok(Ok(info)) => entry(&state_name(&info.state), info.model, info.fix),
                    Ok(Err(e)) => entry("offline", None, Some(e.to_string())),
                    Err(_) => entry(
                        "offline",
                        None,
                        Some(format!(
                            "{serial} did not finish connecting within 4 s: if the phone shows \"Allow USB debugging?\", tap Allow and refresh; otherwise check the address, that the phone is on this network and in TCP debugging mode (`adb tcpip 5555` once over USB)"
                        )),
                    ),
                },
            );
        }
        out
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The approvals registry front ends answer.
    pub fn approvals(&self) -> &PendingApprovals {
        &self.approvals
    }

    /// Paths and version.
    pub fn info(&self) -> AppInfo {
        AppInfo {
            db_path: self.db_path.display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            export_dir: self.export_dir.display().to_string(),
        }
    }

    // ---- devices (U1) ----

    async fn sim_addr(&self) -> Option<VirtualPhone> {
        let sim = self.sim.lock().await;
        sim.as_ref().map(|s| VirtualPhone {
            adb_addr: format!("127.0.0.1:{}", s.port()),
            serial: s.serials().into_iter().next().unwrap_or_default(),
        })
    }

    /// Phones from the user's adb server and the virtual phone, with problems per source.
    pub async fn list_devices(&self) -> DevicesView {
        let mut sources: Vec<(String, bool)> = vec![];
        let mut problems = vec![];
        let env_server = AdbServerAddr::resolve(None).ok().map(|a| addr_string(&a));
        match AdbServerAddr::resolve(None) {
            Ok(a) => sources.push((addr_string(&a), false)),
            Err(e) => problems.push(SourceProblem {
                adb_addr: "(environment)".into(),
                code: e.code().as_str().into(),
                message: e.to_string(),
            }),
        }
        let virtual_phone = self.sim_addr().await;
        if let Some(v) = &virtual_phone {
            sources.push((v.adb_addr.clone(), true));
        }
        let mut devices = vec![];
        for (addr, is_virtual) in sources {
            let server = match parse_addr(&addr) {
                Ok(a) => AdbServer::new(a),
                Err(e) => {
                    problems.push(SourceProblem {
                        adb_addr: addr,
                        code: e.code,
                        message: e.message,
                    });
                    continue;
                }
            };
            match tokio::time::timeout(Duration::from_secs(3), server.devices()).await {
                Ok(Ok(list)) => devices.extend(list.into_iter().map(|d| DeviceEntry {
                    serial: d.serial,
                    state: state_name(&d.state),
                    model: d.model,
                    transport: match d.transport {
                        Transport::Usb => "usb".into(),
                        Transport::Tcp => "tcp".into(),
                    },
                    fix: d.fix,
                    adb_addr: addr.clone(),
                    is_virtual,
                })),
                Ok(Err(e)) => problems.push(SourceProblem {
                    message: if matches!(e, phoneagent_device::DeviceError::AdbServerUnreachable { .. }) {
                        format!("no adb server at {addr}: phones on USB are used directly (no adb needed), or add a phone by its network address below; to use adb instead, install Android platform-tools and run `adb start-server`")
                    } else {
                        e.to_string()
                    },
                    adb_addr: addr,
                    code: e.code().as_str().into(),
                }),
                Err(_) => problems.push(SourceProblem {
                    adb_addr: addr.clone(),
                    // Not "unreachable": a slow server still owns its USB phones.
                    code: "adb_server_slow".into(),
                    message: format!("the adb server at {addr} did not answer within 3 s: restart it with `adb kill-server && adb start-server`"),
                }),
            }
        }
        // No adb server answered (and none was named in the environment): look on USB directly.
        let server_down = env_server.as_ref().is_some_and(|a| {
            problems
                .iter()
                .any(|p| &p.adb_addr == a && p.code == "adb_server_unreachable")
        });
        let named = ["ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
        let usb = server_down && !named && phoneagent_device::direct::USB_SUPPORTED;
        devices.extend(self.direct_devices(usb, &mut problems).await);
        DevicesView {
            devices,
            problems,
            selected: lock(&self.selected).clone(),
            virtual_phone,
        }
    }

    /// Choose the phone for tasks and the mirror.
    pub fn select_device(&self, adb_addr: String, serial: String) -> AppResult<SelectedDevice> {
        if adb_addr == DIRECT_TCP {
            DirectTarget::parse_tcp(&serial)?;
        } else if adb_addr != DIRECT_USB {
            parse_addr(&adb_addr)?;
        }
        if serial.trim().is_empty() {
            return Err(AppError::invalid("choose a phone from the list"));
        }
        let sel = SelectedDevice { adb_addr, serial };
        *lock(&self.selected) = Some(sel.clone());
        Ok(sel)
    }

    fn selected(&self) -> AppResult<SelectedDevice> {
        lock(&self.selected).clone().ok_or_else(|| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::NoDevice,
                "no phone selected: pick one in Devices, or start the virtual phone",
            )
        })
    }

    async fn open_selected(&self) -> AppResult<Arc<AdbDevice>> {
        let sel = self.selected()?;
        let opts = self.device_options();
        let key = format!("{}|{}|{}", sel.adb_addr, sel.serial, opts.screenshot_mode);
        if let Some(dev) = lock(&self.devices)
            .get(&key)
            .and_then(std::sync::Weak::upgrade)
        {
            return Ok(dev);
        }
        let dev = Arc::new(match sel.adb_addr.as_str() {
            DIRECT_USB | DIRECT_TCP => {
                let target = if sel.adb_addr == DIRECT_USB {
                    DirectTarget::Usb {
                        serial: sel.serial.clone(),
                    }
                } else {
                    DirectTarget::parse_tcp(&sel.serial)?
                };
                // The link stays shared after an error: it drops a dead connection and dials
                // again, and a second link to a USB phone could not claim the interface the
                // first one holds.
                let link = self.direct_link(target)?;
                AdbDevice::open_direct(link, opts).await?
            }
            addr => AdbDevice::open(AdbServer::new(parse_addr(addr)?), &sel.serial, opts).await?,
        });
        let mut map = lock(&self.devices);
        map.retain(|_, w| w.strong_count() > 0);
        // Another caller may have opened it meanwhile: keep the first.
        if let Some(first) = map.get(&key).and_then(std::sync::Weak::upgrade) {
            return Ok(first);
        }
        map.insert(key, Arc::downgrade(&dev));
        Ok(dev)
    }

    /// Device options from the settings (capture path, SPEC D8), with the phone-keyboard
    /// journal of the data directory, so a killed app or CLI run has the keyboard put back when
    /// the phone is opened again (SPEC D4).
    fn device_options(&self) -> AdbDeviceOptions {
        let capture = AppSettings::load(&self.store)
            .ok()
            .and_then(|s| s.capture.parse().ok())
            .unwrap_or(phoneagent_device::ScreenshotMode::Auto);
        AdbDeviceOptions {
            screenshot_mode: capture,
            ime_journal: phoneagent_store::default_ime_journal_dir().ok(),
            ..AdbDeviceOptions::default()
        }
    }

    /// Start the in-process virtual phone (SPEC D7) and select it. Idempotent.
    pub async fn start_virtual_phone(&self) -> AppResult<VirtualPhone> {
        {
            let mut sim = self.sim.lock().await;
            if sim.is_none() {
                let server = SimServer::start(SimConfig::default(), self.sim_port)
                    .await
                    .map_err(|e| {
                        AppError::coded(
                            phoneagent_protocol::ErrorCode::Config,
                            format!("could not start the virtual phone: {e}"),
                        )
                    })?;
                *sim = Some(server);
            }
        }
        let v = self.sim_addr().await.ok_or_else(|| {
            AppError::internal("the virtual phone stopped right after starting; start it again")
        })?;
        self.select_device(v.adb_addr.clone(), v.serial.clone())?;
        Ok(v)
    }

    /// Readiness checks of the selected phone (SPEC D2).
    pub async fn readiness(&self) -> AppResult<Vec<CheckView>> {
        let dev = self.open_selected().await?;
        let mut r = dev.readiness(&CancellationToken::new()).await?;
        // The gate's own eyes (SPEC S10), as `phoneagent doctor` shows them.
        r.checks.push(phoneagent_runtime::screen_reading_check());
        Ok(r.checks
            .into_iter()
            .map(|c| CheckView {
                name: c.name,
                ok: c.ok,
                detail: c.detail,
                fix: c.fix,
            })
            .collect())
    }

    // ---- mirror (U1) ----

    /// Start mirroring the selected phone (SPEC U1): live video from its screen stream when
    /// one runs, else polled screenshots; messages go to `send` until it fails or the mirror is
    /// stopped / restarted (see [`crate::mirror::run_mirror`]).
    pub async fn start_mirror<F>(&self, send: F) -> AppResult<()>
    where
        F: Fn(MirrorMessage) -> bool + Send + Sync + 'static,
    {
        let dev = self.open_selected().await?;
        let cancel = CancellationToken::new();
        if let Some(old) = lock(&self.mirror).replace(cancel.clone()) {
            old.cancel();
        }
        self.mirror_slot.clear();
        tokio::spawn(crate::mirror::run_mirror(
            dev,
            self.mirror_slot.clone(),
            send,
            cancel,
        ));
        Ok(())
    }

    /// The newest mirror frame (for the `pa:` URI scheme).
    pub fn mirror_slot(&self) -> &MirrorSlot {
        &self.mirror_slot
    }

    /// Downscaled stored screenshots (for the `pa:` URI scheme).
    pub fn thumb_cache(&self) -> &ThumbCache {
        &self.thumbs
    }

    /// Answer a picture path (`mirror/<seq>`, `thumb/<sha256>`, `view/<sha256>`,
    /// `shot/<sha256>`; a leading `/` and `%2F` for `/` are accepted), see
    /// [`crate::mirror::serve`]. Decodes and scales stored screenshots: call it on a blocking
    /// thread.
    pub fn picture(&self, path: &str) -> PictureResponse {
        crate::mirror::serve(path, &self.mirror_slot, &self.thumbs, |h| {
            self.screenshot_bytes(h)
        })
    }

    /// Stop the mirror.
    pub fn stop_mirror(&self) {
        if let Some(c) = lock(&self.mirror).take() {
            c.cancel();
        }
        self.mirror_slot.clear();
    }

    // ---- take over (U4) ----

    /// The person may use the phone through the mirror (SPEC U4, issue #12 item 5) when no
    /// run is active, while the agent waits for them to take over, or while the run is paused.
    ///
    /// # Errors
    /// `pause_first` while a run is driving the phone.
    fn require_person_control(&self) -> AppResult<()> {
        let taking_over = self
            .approvals
            .pending()
            .iter()
            .any(|r| matches!(r.kind, HumanRequestKind::TakeOver { .. }));
        let driving = lock(&self.run).as_ref().is_some_and(|r| {
            // A run whose agent is not built yet is about to drive the phone too.
            r.pause.as_ref().is_none_or(|p| !p.is_paused())
        });
        if taking_over || !driving {
            Ok(())
        } else {
            Err(AppError::new(
                "pause_first",
                "a task is driving the phone: pause it first, then tap or swipe on the mirror",
            ))
        }
    }

    /// The person taps the phone at device pixels through the mirror (see
    /// [`Console::require_person_control`] for when).
    pub async fn take_over_tap(&self, x: u32, y: u32) -> AppResult<()> {
        self.require_person_control()?;
        let dev = self.open_selected().await?;
        dev.tap(DevicePoint { x, y }, &CancellationToken::new())
            .await?;
        Ok(())
    }

    /// The person swipes between device pixels through the mirror (as
    /// [`Console::take_over_tap`]; 50..=3000 ms).
    pub async fn take_over_swipe(
        &self,
        from: (u32, u32),
        to: (u32, u32),
        duration_ms: u32,
    ) -> AppResult<()> {
        self.require_person_control()?;
        let dev = self.open_selected().await?;
        let d = duration_ms.clamp(50, 3000);
        dev.swipe(
            DevicePoint {
                x: from.0,
                y: from.1,
            },
            DevicePoint { x: to.0, y: to.1 },
            d,
            &CancellationToken::new(),
        )
        .await?;
        Ok(())
    }

    // ---- approvals (U4) ----

    /// Requests waiting for a human.
    pub fn pending(&self) -> Vec<PendingRequest> {
        self.approvals.pending().iter().map(pending_view).collect()
    }

    /// Answer request `id` (validated against the pending id, its expiry and the answers
    /// it takes). Requests are registered before they are announced, so an unknown id is
    /// refused at once.
    pub async fn answer(&self, id: &str, answer: AnswerInput) -> AppResult<()> {
        Ok(self.approvals.answer(id, to_response(answer))?)
    }

    // ---- runs (U2, U3) ----

    /// Resolve the actor, verifier and safety reviewer through the llm crate's role chain
    /// (keys read from the OS keyring on a blocking thread).
    async fn routes(&self, cfg: ModelsConfig) -> AppResult<Routes> {
        let keys = self.keys.clone();
        let resolved = tokio::task::spawn_blocking(move || {
            let actor = cfg.resolve(Role::Actor, &keys)?;
            let verifier = cfg.resolve(Role::Verifier, &keys)?;
            let reviewer = cfg.resolve(Role::SafetyReviewer, &keys)?;
            let auto_reviewer = cfg.resolve(Role::AutoReviewer, &keys)?;
            Ok::<_, phoneagent_llm::LlmError>((actor, verifier, reviewer, auto_reviewer))
        })
        .await
        .map_err(|e| AppError::internal(format!("model setup task failed: {e}")))??;
        let route = |r: &RoleResolution| -> AppResult<Option<ModelRoute>> {
            r.model()
                .map(ModelRoute::from_resolved)
                .transpose()
                .map_err(AppError::from)
        };
        let actor = route(&resolved.0)?.ok_or_else(|| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::ModelConfig,
                "no planner model: add a profile in Settings and pick it",
            )
        })?;
        Ok(Routes {
            actor,
            verifier: route(&resolved.1)?,
            safety_reviewer: route(&resolved.2)?,
            auto_reviewer: route(&resolved.3)?,
        })
    }

    /// Start a run on the selected phone. Its events go to [`Console::subscribe`] as they
    /// happen (`agent-event`); the run ends with `run-ended`. Refuses while another run is
    /// active.
    pub async fn start_run(&self, req: StartRunRequest) -> AppResult<SelectedDevice> {
        let task = req.task.trim().to_string();
        if task.is_empty() {
            return Err(AppError::invalid(
                "type a task first, e.g. “Open Settings and turn on Wi-Fi”",
            ));
        }
        if task.chars().count() > 4000 {
            return Err(AppError::invalid(
                "the task is too long: keep it under 4000 characters",
            ));
        }
        if !(1..=500).contains(&req.max_steps) {
            return Err(AppError::invalid("max steps must be between 1 and 500"));
        }
        let mode = parse_mode(&req.mode)?;
        let settings = AppSettings::load(&self.store)?;
        let actor_name = if req.profile.is_empty() {
            settings.roles.actor.clone()
        } else {
            req.profile.clone()
        };
        if settings.profile(&actor_name).is_none() {
            return Err(AppError::invalid(format!(
                "no model profile named {actor_name:?}: add it in Settings"
            )));
        }
        if lock(&self.run).is_some() {
            return Err(busy_error());
        }
        let sel = self.selected()?;
        let device = self.open_selected().await?;
        let routes = self.routes(settings.models_config(&actor_name)?).await?;
        let config = AgentConfig {
            max_steps: req.max_steps,
            max_duration: Duration::from_secs(settings.max_duration_secs),
            mode,
            token_budget: (settings.token_budget > 0).then_some(settings.token_budget),
            finish_verify: settings.finish_verify_mode()?,
            lang: settings_lang(&settings),
            ..AgentConfig::default()
        };
        self.launch(
            task.clone(),
            device,
            routes,
            config,
            settings.notifications,
            None,
        )?;
        self.remember_task(&task);
        Ok(sel)
    }

    /// Run a demo scenario (SPEC C1) with no phone and no model: the in-app virtual phone
    /// (started and selected if needed, put on the scenario's first screen) and the scripted
    /// model server in this process, both over their real protocols, like `phoneagent demo`.
    /// The run is labelled a demo in its events and history.
    ///
    /// # Errors
    /// `invalid_input` for an unknown scenario (the message lists them); `busy` while a run is
    /// active; errors starting the virtual phone or the model server.
    pub async fn start_demo(&self, name: &str, mode: Option<&str>) -> AppResult<SelectedDevice> {
        let mode = mode.filter(|m| !m.is_empty()).map(parse_mode).transpose()?;
        let scenario = phoneagent_testkit::demo::find(name, mode).ok_or_else(|| {
            AppError::invalid(format!(
                "no demo scenario {name:?}: choose one of {}",
                phoneagent_testkit::demo::SCENARIOS
                    .iter()
                    .map(|s| format!("{} ({})", s.name, s.mode))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if lock(&self.run).is_some() {
            return Err(busy_error());
        }
        let phone = self.start_virtual_phone().await?;
        {
            let sim = self.sim.lock().await;
            if let Some(p) = sim.as_ref().and_then(|s| s.phone(&phone.serial)) {
                p.reset(scenario.start_screen).map_err(|e| {
                    AppError::internal(format!("cannot reset the virtual phone: {e}"))
                })?;
            }
        }
        let sim_port: u16 = phone
            .adb_addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| AppError::internal("the virtual phone has no port"))?;
        let script = phoneagent_testkit::Script::parse_jsonl(scenario.script)
            .map_err(|e| AppError::internal(format!("the demo script is invalid: {e}")))?;
        let model =
            phoneagent_testkit::ScriptedModel::start(phoneagent_testkit::ScriptedModelConfig {
                script,
                space: phoneagent_protocol::CoordinateSpace::Relative0999,
                sim: Some(phoneagent_testkit::SimTarget {
                    port: sim_port,
                    serial: Some(phone.serial.clone()),
                }),
                ..phoneagent_testkit::ScriptedModelConfig::default()
            })
            .await
            .map_err(|e| AppError::internal(format!("cannot start the demo model server: {e}")))?;
        let route = |role: &str| {
            ModelRoute::unkeyed(
                &model.base_url(),
                "scripted-model",
                phoneagent_protocol::CoordinateSpace::Relative0999,
                format!("demo-{role}"),
            )
        };
        let routes = Routes {
            actor: route("actor")?,
            verifier: Some(route("verifier")?),
            safety_reviewer: None,
            auto_reviewer: Some(route("auto-reviewer")?),
        };
        let settings = AppSettings::load(&self.store)?;
        let config = AgentConfig {
            mode: scenario.mode,
            max_steps: 20,
            demo: true,
            lang: settings_lang(&settings),
            ..AgentConfig::default()
        };
        // The virtual phone itself, not "the selected phone": the user may pick another phone
        // while this starts, and a scripted demo must never touch a real one.
        let addr = parse_addr(&phone.adb_addr)?;
        let device = Arc::new(
            AdbDevice::open(
                AdbServer::new(addr),
                &phone.serial,
                AdbDeviceOptions::default(),
            )
            .await?,
        );
        self.launch(
            scenario.task.to_string(),
            device,
            routes,
            config,
            settings.notifications,
            Some(model),
        )?;
        Ok(SelectedDevice {
            adb_addr: phone.adb_addr,
            serial: phone.serial,
        })
    }

    /// The demo scenarios the app offers (`name`, `mode`, `task`, `about`).
    pub fn demo_scenarios(&self) -> Vec<DemoScenarioView> {
        phoneagent_testkit::demo::SCENARIOS
            .iter()
            .map(|s| DemoScenarioView {
                name: s.name.into(),
                mode: s.mode.as_str().into(),
                task: s.task.into(),
                about: s.about.into(),
            })
            .collect()
    }

    /// Start `task` on `device` with `routes` and `config` (one run at a time): the agent's
    /// events go to the subscribers (and to notifications), then its end. `demo_model`,
    /// the demo's scripted model server, is shut down when this run ends (dropped at once when
    /// the run cannot start).
    fn launch(
        &self,
        task: String,
        device: Arc<AdbDevice>,
        routes: Routes,
        config: AgentConfig,
        notifications: bool,
        demo_model: Option<phoneagent_testkit::ScriptedModel>,
    ) -> AppResult<()> {
        let me = self.arc()?;
        let mode = config.mode;
        let Routes {
            actor,
            verifier,
            safety_reviewer,
            auto_reviewer,
        } = routes;
        let parts = AgentParts {
            device,
            actor,
            verifier,
            safety_reviewer,
            approver: Arc::new(self.approvals.clone()),
            recorder: Arc::new(StoreRecorder::new(self.store.clone())),
            calibration_cache: None,
        };
        let cancel = CancellationToken::new();
        {
            let mut run = lock(&self.run);
            if run.is_some() {
                return Err(busy_error());
            }
            *run = Some(ActiveRun {
                run_id: None,
                cancel: cancel.clone(),
                pause: None,
                auto_review: None,
            });
        }
        let mut agent = Agent::new(parts, config);
        if mode == AccessMode::ApproveForMe {
            // SPEC AR1: the policy table, rules and gate options saved in Settings, else
            // `approval-policy.toml` (or `.json`) next to the database, else the defaults;
            // reviewer = the `auto_reviewer` role.
            let with =
                ApprovalPolicySettings::load(&self.store, self.config_dir()).and_then(|policy| {
                    agent
                        .with_approve_for_me(policy.config, auto_reviewer)
                        .map_err(|e| AppError::invalid(e.to_string()))
                });
            agent = match with {
                Ok(a) => a,
                Err(e) => {
                    lock(&self.run).take();
                    return Err(e);
                }
            };
        }
        let agent = Arc::new(agent.with_screen_reader(screen_reader()));
        if let Some(r) = lock(&self.run).as_mut() {
            r.pause = Some(agent.pause_handle());
            r.auto_review =
                (mode == AccessMode::ApproveForMe).then(|| agent.approve_for_me_handle());
        }
        let mut rx = agent.subscribe();
        let this = me.clone();
        let forwarder = tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(env) => {
                        this.on_event(&env, notifications);
                        this.emit(event_names::AGENT_EVENT, &env);
                        if matches!(env.event, AgentEvent::RunFinished { .. }) {
                            break;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(skipped = n, "UI event forwarder lagged");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let this = me;
        tokio::spawn(async move {
            let outcome = agent.run(&task, cancel).await;
            // Let the forwarder deliver RunFinished before announcing the end.
            let _ = tokio::time::timeout(Duration::from_secs(2), forwarder).await;
            let ended = match outcome {
                Ok(o) => RunEnded {
                    run_id: o.run_id,
                    status: o.status.as_str().into(),
                    termination_code: o.termination_code,
                    message: o.message,
                },
                Err(e) => {
                    let e = AppError::from(e);
                    RunEnded {
                        run_id: String::new(),
                        status: "error".into(),
                        termination_code: e.code,
                        message: e.message,
                    }
                }
            };
            if let Some(m) = demo_model {
                m.shutdown().await;
            }
            lock(&this.run).take();
            this.emit(event_names::RUN_ENDED, &ended);
        });
        Ok(())
    }

    /// The app's language (Settings), for text the backend shows itself (notifications).
    fn lang(&self) -> Lang {
        AppSettings::load(&self.store)
            .map(|s| settings_lang(&s))
            .unwrap_or(Lang::En)
    }

    fn on_event(&self, env: &EventEnvelope, notifications: bool) {
        match &env.event {
            AgentEvent::RunStarted { .. } => {
                if let Some(r) = lock(&self.run).as_mut() {
                    r.run_id = Some(env.run_id.clone());
                }
            }
            AgentEvent::HumanRequested {
                request_id,
                request,
                ..
            } if notifications => {
                self.notifier.show(
                    request_id.clone(),
                    request.clone(),
                    self.approvals.clone(),
                    self.lang(),
                );
            }
            AgentEvent::HumanResolved { request_id, .. } => {
                self.notifier.withdraw(request_id, self.lang());
            }
            _ => {}
        }
    }

    /// Cancel the active run (SPEC R7): the in-flight model call is aborted and no further
    /// device command is sent. Errors when nothing runs.
    pub fn stop_run(&self) -> AppResult<()> {
        match lock(&self.run).as_ref() {
            Some(r) => {
                r.cancel.cancel();
                Ok(())
            }
            None => Err(AppError::new("not_running", "no task is running")),
        }
    }

    /// Pause (`true`) or resume (`false`) the running task (U2): a paused agent finishes the
    /// device command in flight, sends no further ones and keeps its state until resumed.
    ///
    /// # Errors
    /// `not_running` when no task is running.
    pub fn set_paused(&self, paused: bool) -> AppResult<()> {
        match lock(&self.run).as_ref().and_then(|r| r.pause.clone()) {
            Some(p) if paused => {
                p.pause();
                Ok(())
            }
            Some(p) => {
                p.resume();
                Ok(())
            }
            None => Err(AppError::new("not_running", "no task is running")),
        }
    }

    /// Live approve-for-me state of the running task (SPEC AR7/AR8: reviews and failures left,
    /// breaker counters, recent denials), or `None` when no approve-for-me run is going.
    pub fn approval_status(&self) -> Option<AutoReviewStatus> {
        lock(&self.run)
            .as_ref()
            .and_then(|r| r.auto_review.as_ref().map(AutoReviewHandle::status))
    }

    /// One-time override of the running approve-for-me task's denial `request_id` (the one the
    /// user clicked; SPEC AR7): the identical call may pass once, within the TTL, and the
    /// reviewer still decides, seeing the grant.
    ///
    /// # Errors
    /// `not_running` without an approve-for-me run; `invalid_input` when the denial is no longer
    /// among the recent ones.
    pub fn grant_override(&self, request_id: &str) -> AppResult<OverrideGrant> {
        let handle = lock(&self.run)
            .as_ref()
            .and_then(|r| r.auto_review.clone())
            .ok_or_else(|| AppError::new("not_running", "no approve-for-me task is running"))?;
        handle
            .grant_override_for(request_id)
            .map_err(|e| AppError::invalid(e.to_string()))
    }

    /// Switch the approve-for-me reviewer of the running task off (`true`: requests the policy
    /// sends to the reviewer go to the human instead) or back on (SPEC AR8, the Approvals
    /// tab's switch). `never` rules keep denying either way.
    ///
    /// # Errors
    /// `not_running` without an approve-for-me run.
    pub fn set_auto_review_suspended(&self, suspended: bool) -> AppResult<AutoReviewStatus> {
        let handle = lock(&self.run)
            .as_ref()
            .and_then(|r| r.auto_review.clone())
            .ok_or_else(|| AppError::new("not_running", "no approve-for-me task is running"))?;
        handle.set_suspended(suspended);
        Ok(handle.status())
    }

    /// The directory next to the database, where `approval-policy.toml` is looked up.
    fn config_dir(&self) -> &std::path::Path {
        self.db_path.parent().unwrap_or(std::path::Path::new("."))
    }

    /// The approve-for-me policy runs will use, and where it comes from (SPEC AR2–AR7); with an
    /// invalid `approval-policy.toml` next to the database, the defaults and the problem.
    ///
    /// # Errors
    /// Store errors.
    pub fn approval_policy(&self) -> AppResult<ApprovalPolicySettings> {
        ApprovalPolicySettings::load_for_editing(&self.store, self.config_dir())
    }

    /// Validate and save the approve-for-me policy; used from the next approve-for-me run.
    ///
    /// # Errors
    /// `invalid_input` naming the wrong rule or option.
    pub fn save_approval_policy(&self, config: &AutoReviewConfig) -> AppResult<()> {
        ApprovalPolicySettings::save(&self.store, config)
    }

    /// Set the app's language (`en`/`zh`): the UI's, and that of receipts and reviewer reasons
    /// of the runs started from now on (issue 7: reasons follow the app's language).
    ///
    /// # Errors
    /// `invalid_input` for another language.
    pub fn set_language(&self, lang: &str) -> AppResult<()> {
        let mut s = self.settings()?;
        if !matches!(lang, "en" | "zh") {
            return Err(AppError::invalid(format!(
                "language {lang:?}: use en or zh"
            )));
        }
        s.lang = lang.to_string();
        self.store
            .set_setting(crate::settings::SETTINGS_KEY, &s)
            .map_err(AppError::from)
    }

    /// The approve-for-me ledger of a run (SPEC AR8): one row per approval request, in order,
    /// rebuilt from the run's events.
    ///
    /// # Errors
    /// `invalid_input` for a malformed id; store errors.
    pub fn approval_reviews(&self, id: &str) -> AppResult<Vec<ApprovalReview>> {
        Ok(self.store.approval_reviews(Self::run_uuid(id)?)?)
    }

    /// Id of the active run, if one is running.
    pub fn active_run(&self) -> Option<String> {
        lock(&self.run)
            .as_ref()
            .map(|r| r.run_id.clone().unwrap_or_default())
    }

    fn remember_task(&self, task: &str) {
        let mut list: Vec<String> = self
            .store
            .setting(RECENT_TASKS_KEY)
            .ok()
            .flatten()
            .unwrap_or_default();
        list.retain(|t| t != task);
        list.insert(0, task.to_string());
        list.truncate(12);
        if let Err(e) = self.store.set_setting(RECENT_TASKS_KEY, &list) {
            tracing::warn!(error = %e, "could not save recent tasks");
        }
    }

    /// Recent tasks, newest first.
    pub fn recent_tasks(&self) -> AppResult<Vec<String>> {
        Ok(self.store.setting(RECENT_TASKS_KEY)?.unwrap_or_default())
    }

    // ---- settings and keys (U5, P5) ----

    /// The settings.
    pub fn settings(&self) -> AppResult<AppSettings> {
        AppSettings::load(&self.store)
    }

    /// Validate and save the settings.
    pub fn save_settings(&self, s: &AppSettings) -> AppResult<()> {
        s.save(&self.store)
    }

    /// The OS keyring the app's keys live in (for Settings' connection test and the
    /// first-start check, `crate::connection`).
    pub fn key_store(&self) -> &KeyStore {
        &self.keys
    }

    /// The provider presets and model families Settings offers (SPEC M7, M8).
    pub fn model_catalog(&self) -> ModelCatalog {
        crate::connection::catalog()
    }

    /// The family a profile talks in: as set, or detected from its model name (SPEC M7).
    ///
    /// # Errors
    /// `invalid_input` for a family setting that does not parse.
    pub fn profile_family(&self, profile: &ModelProfile) -> AppResult<FamilyView> {
        crate::connection::family_of(profile)
    }

    /// Settings' Test connection of a profile as edited (SPEC M1, M4, M7, M8): the shared
    /// step-by-step connection test on synthetic images, with its key from the keyring.
    ///
    /// # Errors
    /// A profile that does not make a model route.
    pub async fn test_connection(&self, profile: &ModelProfile) -> AppResult<ConnectionTestView> {
        crate::connection::test_connection(&self.keys, profile).await
    }

    /// Whether profile `profile` (the actor's when empty) can start a task (issue #14 item 3).
    ///
    /// # Errors
    /// Store errors reading the settings.
    pub async fn setup_status(&self, profile: &str) -> AppResult<SetupStatus> {
        let settings = self.settings()?;
        Ok(crate::connection::setup_status(&self.keys, &settings, profile).await)
    }

    /// Whether each keyring entry holds a key (never the key).
    pub async fn key_status(&self, entries: Vec<String>) -> Vec<KeyStatus> {
        let keys = self.keys.clone();
        let res = tokio::task::spawn_blocking(move || {
            entries
                .into_iter()
                .map(|entry| match keys.has(&entry) {
                    Ok(present) => KeyStatus {
                        entry,
                        present,
                        error: None,
                    },
                    Err(e) => KeyStatus {
                        entry,
                        present: false,
                        error: Some(e.to_string()),
                    },
                })
                .collect::<Vec<_>>()
        })
        .await;
        res.unwrap_or_default()
    }

    /// Store (or replace) the API key of keyring entry `entry`. The key goes straight to the
    /// OS keyring; it is not logged, stored elsewhere or returned.
    pub async fn set_api_key(&self, entry: String, key: String) -> AppResult<()> {
        phoneagent_llm::keystore::validate_entry_name(&entry)?;
        let key = ApiKey::new(key);
        if key.is_empty() {
            return Err(AppError::invalid(
                "the key is empty: paste the key, or use Delete to remove it",
            ));
        }
        let keys = self.keys.clone();
        tokio::task::spawn_blocking(move || keys.set(&entry, &key))
            .await
            .map_err(|e| AppError::internal(format!("keyring task failed: {e}")))??;
        Ok(())
    }

    /// Delete the API key of `entry`; true when one was stored.
    pub async fn delete_api_key(&self, entry: String) -> AppResult<bool> {
        phoneagent_llm::keystore::validate_entry_name(&entry)?;
        let keys = self.keys.clone();
        Ok(tokio::task::spawn_blocking(move || keys.delete(&entry))
            .await
            .map_err(|e| AppError::internal(format!("keyring task failed: {e}")))??)
    }

    // ---- history (U6) ----

    fn run_uuid(id: &str) -> AppResult<uuid::Uuid> {
        uuid::Uuid::parse_str(id).map_err(|_| AppError::invalid(format!("{id:?} is not a run id")))
    }

    /// Past runs, newest first.
    pub fn list_runs(&self, limit: usize) -> AppResult<Vec<RunSummary>> {
        Ok(self
            .store
            .list_runs(limit.clamp(1, 1000))?
            .into_iter()
            .map(|r| RunSummary {
                demo: r.metadata.get("demo") == Some(&serde_json::Value::Bool(true)),
                id: r.id.to_string(),
                duration_ms: r.duration_ms(),
                task: r.task,
                status: r.status.as_str().into(),
                started_ms: r.started_ms,
                serial: r.device_serial,
                model: r.model,
                mode: r.access_mode.as_str().into(),
                termination_code: r.termination_code,
                steps: r.step_count,
                tokens: r.prompt_tokens + r.completion_tokens,
                cost_usd: r.cost_usd,
            })
            .collect())
    }

    /// The recorded events of a run, in order (for replay).
    pub fn run_events(&self, id: &str) -> AppResult<Vec<EventEnvelope>> {
        let uuid = Self::run_uuid(id)?;
        Ok(self
            .store
            .events(uuid)?
            .iter()
            .filter_map(|e| e.to_envelope(uuid))
            .collect())
    }

    /// A stored screenshot's MIME type and bytes (`None` when not stored or not a hash).
    pub fn screenshot_bytes(&self, sha256: &str) -> Option<(String, Vec<u8>)> {
        let shot = self.store.screenshot(sha256).ok().flatten()?;
        Some((shot.mime, shot.bytes))
    }

    /// A stored screenshot as a data URL.
    pub fn screenshot(&self, sha256: &str) -> AppResult<String> {
        if sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(AppError::invalid("not a screenshot hash"));
        }
        let shot = self.store.screenshot(sha256)?.ok_or_else(|| {
            AppError::new(
                "not_found",
                format!("screenshot {} is not in the store", &sha256[..12]),
            )
        })?;
        Ok(data_url(&shot.mime, &shot.bytes))
    }

    /// The approval ledger of a run.
    pub fn ledger(&self, id: &str) -> AppResult<Vec<LedgerRow>> {
        let uuid = Self::run_uuid(id)?;
        Ok(self
            .store
            .approval_ledger(Some(uuid), 1000)?
            .into_iter()
            .map(|l| LedgerRow {
                request_id: l.request_id,
                kind: l.kind,
                step: l.step,
                ts_ms: l.ts_ms,
                tool: l.tool,
                tier: l.tier,
                decision: l.decision,
                decided_by: l.decided_by,
                latency_ms: l.latency_ms,
            })
            .collect())
    }

    /// Export a run as `json` (trajectory schema 1.3) or `html` (self-contained report) into
    /// the export directory.
    pub fn export(&self, id: &str, format: &str) -> AppResult<ExportResult> {
        let uuid = Self::run_uuid(id)?;
        std::fs::create_dir_all(&self.export_dir).map_err(|e| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::Store,
                format!(
                    "cannot create the export directory {}: {e}",
                    self.export_dir.display()
                ),
            )
        })?;
        let short = &id[..8.min(id.len())];
        let path = match format {
            "json" => {
                let p = self.export_dir.join(format!("phoneagent-run-{short}.json"));
                phoneagent_store::export::write_trajectory_json(
                    &self.store,
                    uuid,
                    &Default::default(),
                    &p,
                )?;
                p
            }
            "html" => {
                let p = self.export_dir.join(format!("phoneagent-run-{short}.html"));
                phoneagent_store::export::write_html_report(
                    &self.store,
                    uuid,
                    &Default::default(),
                    &p,
                )?;
                p
            }
            other => {
                return Err(AppError::invalid(format!(
                    "unknown export format {other:?}: use json or html"
                )));
            }
        };
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok(ExportResult {
            path: path.display().to_string(),
            bytes,
        })
    }
}

/// The safety gate's screen reader (SPEC S10), loaded on the first run and shared by every run
/// after it; `None` (with a warning in the log) when the OCR engine is not installed.
fn screen_reader() -> Option<Arc<phoneagent_vision::ScreenReader>> {
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
