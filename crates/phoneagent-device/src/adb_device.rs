//! [`AdbDevice`]: the [`Device`] trait over an adb server (SPEC D1-D4, D6).

use crate::direct::{DirectLink, DirectOptions, DirectTarget, key::AdbKey};
use crate::frame;
use crate::ime::{self, ImeGuard};
use crate::link::AdbLink;
use crate::parse;
use crate::server::{self, AdbServer, AdbServerAddr, ShellProtocol};
use crate::stream::hook::Gesture;
use crate::stream::{CapturePath, InputPath};
use crate::text::{self, ADB_KEYBOARD_IME};
use crate::types::{DeviceError, DeviceState, KeyCode, Readiness, ReadinessCheck, Screenshot};
use crate::wire::ShellOutput;
use crate::{Device, Result, Settle};
use async_trait::async_trait;
use phoneagent_protocol::{DevicePoint, Rotation, ScreenGeometry};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How screenshots are taken (SPEC D3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScreenshotMode {
    /// `exec:screencap -p`: the device encodes PNG (default; works everywhere).
    #[default]
    Png,
    /// `exec:screencap`: raw RGBA from the device, PNG encoded on the host (less device CPU,
    /// more bytes on the wire — faster over fast links).
    Raw,
    /// scrcpy's live H.264 stream (SPEC D8) and its control socket for input (D9); needs
    /// `scrcpy-server` (see [`crate::stream::locate`]). Falls back to [`ScreenshotMode::Raw`]
    /// and `input` when it cannot start or dies.
    Scrcpy,
    /// Android's `screenrecord --output-format=h264` stream (nothing to install), restarted at
    /// its time limit; input stays `input`. Falls back to [`ScreenshotMode::Raw`].
    Screenrecord,
    /// The fastest available: scrcpy, else screenrecord, else raw `screencap`.
    Auto,
}

impl ScreenshotMode {
    /// The names `--capture` and the `capture` setting take (SPEC D8).
    pub const NAMES: &'static [&'static str] = &["auto", "scrcpy", "screenrecord", "raw", "png"];

    /// The name of this mode (one of [`ScreenshotMode::NAMES`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Scrcpy => "scrcpy",
            Self::Screenrecord => "screenrecord",
            Self::Raw => "raw",
            Self::Png => "png",
        }
    }
}

impl std::fmt::Display for ScreenshotMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ScreenshotMode {
    type Err = String;
    /// `auto`, `scrcpy`, `screenrecord`, `raw` or `png` (case-insensitive).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "scrcpy" => Ok(Self::Scrcpy),
            "screenrecord" => Ok(Self::Screenrecord),
            "raw" => Ok(Self::Raw),
            "png" => Ok(Self::Png),
            other => Err(format!(
                "unknown capture path {other:?}: use one of auto, scrcpy, screenrecord, raw, png"
            )),
        }
    }
}

/// Tunables of an [`AdbDevice`].
#[derive(Debug, Clone)]
pub struct AdbDeviceOptions {
    /// Time limit of one ordinary shell command (swipes add their duration).
    pub command_timeout: Duration,
    /// Time limit of one screenshot attempt.
    pub screenshot_timeout: Duration,
    /// Attempts before [`DeviceError::ScreenshotFailed`] (at least 1).
    pub screenshot_attempts: u32,
    /// Capture path.
    pub screenshot_mode: ScreenshotMode,
    /// Pause after switching to ADB Keyboard, so the keyboard binds to the focused field.
    pub ime_settle: Duration,
    /// Pause between the two taps of a double tap.
    pub double_tap_gap: Duration,
    /// How long geometry read from the phone (`wm size`, `wm density`, `dumpsys input`) is
    /// reused (SPEC D2, issue #12): it is read again sooner when a screenshot's size differs
    /// from the one it was read with (a rotation or `wm size` change flips or changes the
    /// frame) and after the device was lost. `Duration::ZERO` reads it on every call.
    pub geometry_max_age: Duration,
    /// `scrcpy-server` path from settings (else `SCRCPY_SERVER_PATH`, else the scrcpy
    /// package's install locations), for the stream modes.
    pub scrcpy_server: Option<std::path::PathBuf>,
    /// The scrcpy version to announce (the server refuses another); else `scrcpy --version`,
    /// else [`crate::stream::locate::DEFAULT_SCRCPY_VERSION`].
    pub scrcpy_version: Option<String>,
    /// Longest wait for a stream frame newer than the last action; after it the newest frame is
    /// used (an unchanged screen may send no new frame).
    pub stream_fresh_wait: Duration,
    /// A frame counts as newer than an action when decoded at least this long after it.
    pub stream_fresh_margin: Duration,
    /// Limit for starting a stream (push, server start, first frame).
    pub stream_start_timeout: Duration,
    /// `screenrecord --time-limit` (1–180 s); it is restarted when it stops.
    pub screenrecord_time_limit: Duration,
    /// Directory of the IME journal (SPEC D4, [`crate::ime::ImeJournal`]): the user's IME is
    /// written there before the switch to ADB Keyboard, and opening the phone again puts it
    /// back when a killed process (SIGKILL, power loss) left it switched. `None` (the
    /// default): no journal. Front ends pass their data directory's `ime-journal`.
    pub ime_journal: Option<std::path::PathBuf>,
}

impl Default for AdbDeviceOptions {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(20),
            screenshot_timeout: Duration::from_secs(15),
            screenshot_attempts: 3,
            screenshot_mode: ScreenshotMode::Png,
            ime_settle: Duration::from_millis(150),
            double_tap_gap: Duration::from_millis(0),
            geometry_max_age: Duration::from_secs(30),
            scrcpy_server: None,
            scrcpy_version: None,
            stream_fresh_wait: Duration::from_millis(500),
            stream_fresh_margin: Duration::from_millis(20),
            stream_start_timeout: Duration::from_secs(10),
            screenrecord_time_limit: Duration::from_secs(180),
            ime_journal: None,
        }
    }
}

struct Inner {
    server: AdbLink,
    serial: String,
    protocol: ShellProtocol,
    opts: AdbDeviceOptions,
    adb_keyboard: tokio::sync::Mutex<Option<bool>>,
    ime: tokio::sync::Mutex<Option<ImeGuard>>,
    last_frame: std::sync::Mutex<Option<(u32, u32)>>,
    /// The last frame decoded: `screencap` output byte-identical to it (an unchanged screen)
    /// reuses its pixels instead of decoding again.
    last_decoded: std::sync::Mutex<Option<Arc<DecodedFrame>>>,
    /// Geometry as last read from the phone, see [`AdbDeviceOptions::geometry_max_age`].
    geometry_cache: std::sync::Mutex<Option<CachedGeometry>>,
    /// The live stream and fast input (SPEC D8, D9), when a stream mode is chosen.
    stream: crate::stream::hook::StreamState,
}

/// Geometry read from the phone, with the frame size it was read beside.
#[derive(Clone, Copy)]
struct CachedGeometry {
    geometry: ScreenGeometry,
    frame: Option<(u32, u32)>,
    read_at: Instant,
}

/// `screencap` output and what it decoded to.
struct DecodedFrame {
    /// The bytes as received (PNG, or a raw frame in [`ScreenshotMode::Raw`]).
    received: bytes::Bytes,
    /// The PNG (the received bytes in PNG mode).
    png: bytes::Bytes,
    image: Arc<image::RgbaImage>,
    blocked: bool,
}

/// One phone behind an adb server. Cheap to clone (shared state). Every command names the
/// serial (`host:transport:SERIAL`). While ADB Keyboard is switched on for typing, an
/// [`ImeGuard`] inside restores the user's IME: on [`Device::restore_ime`], when a call is
/// cancelled, and when the last clone is dropped.
#[derive(Clone)]
pub struct AdbDevice {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AdbDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdbDevice")
            .field("serial", &self.inner.serial)
            .field("link", &self.inner.server.describe())
            .field("protocol", &self.inner.protocol)
            .finish()
    }
}

/// `ANDROID_SERIAL`, when set and not empty.
pub fn serial_from_env() -> Option<String> {
    std::env::var("ANDROID_SERIAL")
        .ok()
        .filter(|s| !s.trim().is_empty())
}

impl AdbDevice {
    /// Open `serial` on `server`: checks that it is listed in state `device` and reads its
    /// features (shell v2 when advertised, else shell v1).
    ///
    /// # Errors
    /// [`DeviceError::SerialNotFound`], [`DeviceError::Unauthorized`], [`DeviceError::Offline`],
    /// [`DeviceError::AdbServerUnreachable`].
    pub async fn open(server: AdbServer, serial: &str, opts: AdbDeviceOptions) -> Result<Self> {
        let list = server.devices().await?;
        let info = server::choose_device(&list, Some(serial))?;
        let features = server.features(&info.serial).await?;
        let protocol = if features.iter().any(|f| f == "shell_v2") {
            ShellProtocol::V2
        } else {
            ShellProtocol::V1
        };
        tracing::debug!(serial, ?protocol, ?features, "opened device");
        Ok(Self::with_link(server.into(), info.serial, protocol, opts)
            .recover_ime()
            .await)
    }

    /// Put back an IME a killed run left switched (the journal, SPEC D4). Never fails the
    /// open: a failure is logged and the entry kept for the next open.
    async fn recover_ime(self) -> Self {
        if let Some(dir) = &self.inner.opts.ime_journal {
            let j = ime::ImeJournal::new(dir, &self.inner.serial);
            let i = &self.inner;
            if let Err(e) =
                ime::recover_from_journal(&i.server, &i.serial, i.protocol, &j, ADB_KEYBOARD_IME)
                    .await
            {
                tracing::warn!(serial = %i.serial, "cannot put back the IME a killed run left: {e}");
            }
        }
        self
    }

    fn with_link(
        link: AdbLink,
        serial: String,
        protocol: ShellProtocol,
        opts: AdbDeviceOptions,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                server: link,
                serial,
                protocol,
                opts,
                adb_keyboard: tokio::sync::Mutex::new(None),
                ime: tokio::sync::Mutex::new(None),
                last_frame: std::sync::Mutex::new(None),
                last_decoded: std::sync::Mutex::new(None),
                geometry_cache: std::sync::Mutex::new(None),
                stream: crate::stream::hook::StreamState::default(),
            }),
        }
    }

    /// Open a phone directly, without an adb server (SPEC D1): connect to its adbd over
    /// `link` (USB or TCP), authenticate with this computer's key (the phone asks "Allow USB
    /// debugging?" the first time) and read its features from the CNXN banner.
    ///
    /// # Errors
    /// [`DeviceError::DirectUnreachable`] (nothing answers), [`DeviceError::Unauthorized`] (the
    /// prompt was not accepted within the auth timeout), [`DeviceError::Config`] (TLS-only
    /// wireless-debugging port), protocol errors.
    pub async fn open_direct(link: DirectLink, opts: AdbDeviceOptions) -> Result<Self> {
        let features = link.features().await?;
        let protocol = if features.iter().any(|f| f == "shell_v2") {
            ShellProtocol::V2
        } else {
            ShellProtocol::V1
        };
        let serial = link.serial();
        tracing::debug!(serial, ?protocol, ?features, target = %link.target(), "opened device directly");
        Ok(Self::with_link(link.into(), serial, protocol, opts)
            .recover_ime()
            .await)
    }

    /// Connect the way the user's flags and environment ask (SPEC D1), see [`ConnectPlan`]:
    /// `--direct HOST:PORT` / `PHONEAGENT_ADB_DIRECT` → direct TCP; else the adb server when one
    /// answers; else (no adb server) a phone on USB directly, when built with the `usb`
    /// feature. The serial is `explicit`, else `ANDROID_SERIAL`, else the only device.
    ///
    /// # Errors
    /// As [`AdbDevice::select`] / [`AdbDevice::open_direct`]; [`DeviceError::NoDevice`] when
    /// neither an adb server nor a USB phone is there (the message says how to fix it), and
    /// [`DeviceError::AdbServerUnreachable`] without USB support.
    pub async fn connect(
        plan: &ConnectPlan,
        explicit: Option<&str>,
        opts: AdbDeviceOptions,
    ) -> Result<Self> {
        let chosen = explicit
            .map(str::to_string)
            .or_else(serial_from_env)
            .filter(|s| !s.trim().is_empty());
        match plan.resolve().await? {
            Route::Server(server) => Self::select(server, chosen.as_deref(), opts).await,
            Route::Direct(target) => {
                let key = AdbKey::for_user()?;
                Self::open_direct(DirectLink::new(target, key, plan.direct.clone()), opts).await
            }
            Route::Usb(server_err) => {
                let found = crate::direct::usb_devices().await?;
                let pick = match chosen.as_deref() {
                    Some(s) => found
                        .iter()
                        .find(|(serial, _)| serial == s)
                        .cloned()
                        .ok_or_else(|| DeviceError::SerialNotFound {
                            serial: s.to_string(),
                            available: found.iter().map(|(x, _)| x.clone()).collect(),
                        })?,
                    None => match found.as_slice() {
                        [one] => one.clone(),
                        [] => {
                            tracing::info!("no adb server ({server_err}) and no phone on USB");
                            return Err(DeviceError::NoDevice);
                        }
                        many => {
                            return Err(DeviceError::MultipleDevices {
                                serials: many
                                    .iter()
                                    .map(|(s, p)| match p {
                                        Some(p) => format!("{s} ({p})"),
                                        None => s.clone(),
                                    })
                                    .collect(),
                            });
                        }
                    },
                };
                let key = AdbKey::for_user()?;
                let target = DirectTarget::Usb { serial: pick.0 };
                Self::open_direct(DirectLink::new(target, key, plan.direct.clone()), opts).await
            }
        }
    }

    /// Choose and open a device (SPEC D1): `explicit`, else `ANDROID_SERIAL`, else the only
    /// device in state `device`.
    ///
    /// # Errors
    /// As [`server::select_device`] and [`AdbDevice::open`].
    pub async fn select(
        server: AdbServer,
        explicit: Option<&str>,
        opts: AdbDeviceOptions,
    ) -> Result<Self> {
        let env = serial_from_env();
        let chosen = explicit.map(str::to_string).or(env);
        let info = server::select_device(&server, chosen.as_deref()).await?;
        Self::open(server, &info.serial, opts).await
    }

    /// The adb server this device is reached through (`None` in direct mode).
    pub fn server(&self) -> Option<&AdbServer> {
        match &self.inner.server {
            AdbLink::Server(s) => Some(s),
            AdbLink::Direct(_) => None,
        }
    }

    /// How this device is reached (adb server or direct USB/TCP).
    pub fn link(&self) -> &AdbLink {
        &self.inner.server
    }

    /// The capture and input paths in use (SPEC D8, D9) — starting the stream first in a stream
    /// [`ScreenshotMode`] — and why the faster one is not used, for `doctor` and the run record.
    pub async fn stream_paths(&self) -> (CapturePath, InputPath, Option<String>) {
        let i = &self.inner;
        i.stream.paths(&i.server, &i.serial, &i.opts).await
    }

    /// The running stream, if one runs (for the mirror and the stream benchmark).
    pub async fn stream(&self) -> Option<Arc<crate::stream::StreamSession>> {
        self.inner.stream.current().await
    }

    /// Which shell protocol commands use.
    pub fn shell_protocol(&self) -> ShellProtocol {
        self.inner.protocol
    }

    /// Wait (bounded) for this serial to be back in state `device` after a
    /// [`DeviceError::DeviceLost`] (SPEC D6).
    ///
    /// # Errors
    /// [`DeviceError::DeviceLost`] on timeout, [`DeviceError::Cancelled`].
    pub async fn wait_until_back(
        &self,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<()> {
        match &self.inner.server {
            AdbLink::Server(s) => {
                server::wait_for_device(s, &self.inner.serial, timeout, cancel).await
            }
            AdbLink::Direct(d) => wait_for_direct(d, timeout, cancel).await,
        }
    }

    /// Run a shell command on the device (for diagnostics; the agent only uses the trait).
    ///
    /// # Errors
    /// [`DeviceError::DeviceLost`] when the device goes away, [`DeviceError::Timeout`],
    /// [`DeviceError::Cancelled`].
    pub async fn shell(&self, cmd: &str, cancel: &CancellationToken) -> Result<ShellOutput> {
        let t = self.inner.opts.command_timeout;
        self.with_cancel(cancel, self.inner.shell(cmd, t)).await
    }

    /// True when ADB Keyboard is installed (cached after the first successful check).
    ///
    /// # Errors
    /// Transport errors, [`DeviceError::Cancelled`].
    pub async fn adb_keyboard_installed(&self, cancel: &CancellationToken) -> Result<bool> {
        self.with_cancel(cancel, self.inner.adb_keyboard_installed())
            .await
    }

    /// The current IME (`settings get secure default_input_method`).
    ///
    /// # Errors
    /// Transport errors, [`DeviceError::Cancelled`].
    pub async fn current_ime(&self, cancel: &CancellationToken) -> Result<Option<String>> {
        let i = &self.inner;
        self.with_cancel(cancel, async {
            i.map_err(
                "settings get secure default_input_method",
                ime::current_ime_on(&i.server, &i.serial, i.protocol).await,
            )
            .await
        })
        .await
    }

    /// Run `fut` unless `cancel` fires first. A cancelled call also restores the user's IME
    /// right away (the task is ending; a later `type_text` switches again).
    async fn with_cancel<T>(
        &self,
        cancel: &CancellationToken,
        fut: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        if cancel.is_cancelled() {
            self.inner.restore_after_cancel().await;
            return Err(DeviceError::Cancelled);
        }
        let r = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(DeviceError::Cancelled),
            r = fut => r,
        };
        if matches!(r, Err(DeviceError::Cancelled)) {
            self.inner.restore_after_cancel().await;
        }
        r
    }
}

impl Inner {
    /// Send `g` through scrcpy's control socket when a stream with one runs (SPEC D9):
    /// `Ok(None)` — no control socket, use `input`; a failed write is
    /// [`DeviceError::DeviceLost`] (it may have happened: the runtime re-observes, never
    /// replays it).
    async fn fast_input(&self, what: &str, g: &Gesture) -> Result<Option<()>> {
        match self
            .stream
            .input(&self.server, &self.serial, &self.opts, g)
            .await
        {
            None => Ok(None),
            Some(Ok(())) => Ok(Some(())),
            Some(Err(detail)) => Err(DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: format!("scrcpy control: {what}"),
                detail,
            }),
        }
    }

    /// `capture` and `input` readiness lines (SPEC D8, D9).
    async fn stream_checks(&self) -> Vec<ReadinessCheck> {
        let (capture, input, note) = self
            .stream
            .paths(&self.server, &self.serial, &self.opts)
            .await;
        let faster = !matches!(capture, CapturePath::Scrcpy(_));
        let fix = match (&note, faster) {
            (Some(n), _) => Some(format!(
                "{n} — install scrcpy or set SCRCPY_SERVER_PATH, and use the auto capture mode"
            )),
            (None, true) => Some(
                "install scrcpy or set SCRCPY_SERVER_PATH, and use the auto capture mode for the live stream and fast input".to_string(),
            ),
            (None, false) => None,
        };
        vec![
            ReadinessCheck {
                name: "capture".into(),
                ok: true,
                detail: capture.to_string(),
                fix: fix.clone(),
            },
            ReadinessCheck {
                name: "input_path".into(),
                ok: true,
                detail: input.to_string(),
                fix: if input == InputPath::ShellInput {
                    fix
                } else {
                    None
                },
            },
        ]
    }

    /// Map a transport failure of `cmd` to [`DeviceError::DeviceLost`] where it means the
    /// device (or the server) went away (SPEC D6).
    async fn map_err<T>(&self, cmd: &str, r: Result<T>) -> Result<T> {
        let e = match r {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let lost = |detail: String| {
            // A phone that comes back may have another geometry: read it again (D6).
            self.forget_geometry();
            DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail,
            }
        };
        Err(match e {
            DeviceError::SerialNotFound { .. }
            | DeviceError::Offline { .. }
            | DeviceError::AdbServerUnreachable { .. }
            | DeviceError::DirectUnreachable { .. } => lost(e.to_string()),
            DeviceError::Io(io) => match io.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
                    DeviceError::Protocol(format!("`{cmd}`: {io}"))
                }
                _ => lost(self.server.broke(&io)),
            },
            other => other,
        })
    }

    /// After a timeout: lost if the device is gone from the list, else a plain timeout.
    async fn timeout_error(&self, cmd: &str, limit: Duration) -> DeviceError {
        self.forget_geometry();
        match self.server.state_of(&self.serial).await {
            Ok(Some(DeviceState::Device)) => DeviceError::Timeout {
                command: cmd.to_string(),
                ms: limit.as_millis() as u64,
            },
            Ok(state) => DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail: format!(
                    "no answer within {} ms and the device is now {state:?}",
                    limit.as_millis()
                ),
            },
            Err(e) => DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail: e.to_string(),
            },
        }
    }

    async fn shell(&self, cmd: &str, limit: Duration) -> Result<ShellOutput> {
        tracing::trace!(serial = %self.serial, cmd, "shell");
        match tokio::time::timeout(limit, self.server.shell(&self.serial, cmd, self.protocol)).await
        {
            Ok(r) => self.map_err(cmd, r).await,
            Err(_) => Err(self.timeout_error(cmd, limit).await),
        }
    }

    /// A shell command whose non-zero exit is an error.
    async fn shell_ok(&self, cmd: &str) -> Result<String> {
        let out = self.shell(cmd, self.opts.command_timeout).await?;
        if out.failed() {
            return Err(DeviceError::CommandFailed {
                command: cmd.to_string(),
                detail: out.combined().trim().to_string(),
            });
        }
        Ok(out.combined())
    }

    async fn exec(&self, cmd: &str, limit: Duration) -> Result<Vec<u8>> {
        match tokio::time::timeout(limit, self.server.exec(&self.serial, cmd)).await {
            Ok(r) => self.map_err(cmd, r).await,
            Err(_) => Err(self.timeout_error(cmd, limit).await),
        }
    }

    /// An `input …` command, its stderr and exit status checked (SPEC D4).
    async fn input(&self, cmd: &str, extra: Duration) -> Result<()> {
        // A stream frame must be newer than this action (and differ from the frame shown when
        // it was sent) to count as its result.
        self.stream.note_action();
        let out = self.shell(cmd, self.opts.command_timeout + extra).await;
        self.stream.note_action_sent();
        let out = out?;
        let all = out.combined();
        if parse::is_inject_events_denied(&all) {
            return Err(DeviceError::InjectEventsDenied);
        }
        let failed = match out.exit_code {
            Some(c) => c != 0,
            None => parse::input_output_shows_error(&all),
        };
        if failed {
            return Err(DeviceError::CommandFailed {
                command: cmd.to_string(),
                detail: first_lines(&all, 3),
            });
        }
        Ok(())
    }

    async fn adb_keyboard_installed(&self) -> Result<bool> {
        let mut cached = self.adb_keyboard.lock().await;
        if let Some(v) = *cached {
            return Ok(v);
        }
        // `-a` lists installed IMEs, enabled or not; old `ime` tools may not know it.
        let mut ids = Vec::new();
        for cmd in ["ime list -a -s", "ime list -s"] {
            match self.shell(cmd, self.opts.command_timeout).await {
                Ok(out) if !out.failed() => {
                    ids = parse::parse_ime_list(&out.stdout_str());
                    if !ids.is_empty() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        let v = ids.iter().any(|i| i == ADB_KEYBOARD_IME);
        *cached = Some(v);
        Ok(v)
    }

    /// Make ADB Keyboard the current IME, arming the guard (before the switch) the first time.
    async fn ensure_adb_ime(&self) -> Result<()> {
        let mut slot = self.ime.lock().await;
        let current = self
            .map_err(
                "settings get secure default_input_method",
                ime::current_ime_on(&self.server, &self.serial, self.protocol).await,
            )
            .await?;
        if current.as_deref() == Some(ADB_KEYBOARD_IME) {
            return Ok(());
        }
        let fresh = slot.is_none();
        if fresh {
            // Before the switch: a kill right after it still finds the user's IME.
            let journal = match self.opts.ime_journal.as_deref() {
                Some(d) => Some(ime::ImeJournal::new(d, &self.serial).record(current.as_deref())?),
                None => None,
            };
            *slot = Some(
                ImeGuard::new(
                    self.server.clone(),
                    self.serial.clone(),
                    self.protocol,
                    current.clone(),
                )
                .with_journal(journal),
            );
        }
        let r = self
            .map_err(
                "ime set",
                ime::set_ime_on(
                    &self.server,
                    &self.serial,
                    self.protocol,
                    ADB_KEYBOARD_IME,
                    true,
                )
                .await,
            )
            .await;
        match r {
            Ok(()) => {
                tracing::info!(serial = %self.serial, from = ?current, "switched to ADB Keyboard");
                tokio::time::sleep(self.opts.ime_settle).await;
                Ok(())
            }
            Err(e) => {
                // Half-switched: put the user's IME back now unless the device is gone (then
                // the guard stays armed for later).
                if !e.is_device_lost()
                    && let Some(g) = slot.as_mut()
                    && g.restore().await.is_ok()
                {
                    *slot = None;
                }
                Err(e)
            }
        }
    }

    async fn restore_ime(&self) -> Result<()> {
        let mut slot = self.ime.lock().await;
        if let Some(g) = slot.as_mut() {
            let r = g.restore().await;
            self.map_err("restore IME", r).await?;
            *slot = None;
        }
        Ok(())
    }

    async fn restore_after_cancel(&self) {
        if let Err(e) = self.restore_ime().await {
            tracing::warn!(serial = %self.serial, "could not restore the IME after cancel: {e}");
        }
    }

    async fn type_text(&self, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        // scrcpy's clipboard paste types any Unicode without switching the IME (SPEC D9).
        if self
            .fast_input("type text", &Gesture::Text(text.to_string()))
            .await?
            .is_some()
        {
            return Ok(());
        }
        if self.adb_keyboard_installed().await? {
            self.ensure_adb_ime().await?;
            self.stream.note_action();
            for cmd in text::adb_keyboard_commands(text) {
                let out = self.shell(&cmd, self.opts.command_timeout).await?;
                let all = out.combined();
                if out.failed() || !all.contains("Broadcast completed") {
                    return Err(DeviceError::CommandFailed {
                        command: "am broadcast -a ADB_INPUT_B64".into(),
                        detail: format!(
                            "ADB Keyboard did not take the text ({}): check that ADB Keyboard is enabled",
                            first_lines(&all, 3)
                        ),
                    });
                }
            }
            self.stream.note_action_sent();
            Ok(())
        } else {
            let steps = text::ascii_input_steps(text).ok_or(DeviceError::AdbKeyboardMissing)?;
            for s in steps {
                self.input(&s.command(), Duration::ZERO).await?;
            }
            Ok(())
        }
    }

    async fn capture_once(&self) -> Result<Screenshot> {
        let t0 = Instant::now();
        if let Some(shot) = self
            .stream
            .screenshot(&self.server, &self.serial, &self.opts)
            .await
        {
            if let Ok(mut g) = self.last_frame.lock() {
                *g = Some(shot.image.dimensions());
            }
            return Ok(shot);
        }
        // No stream (or it died): raw screencap, PNG only when asked for.
        let mode = match self.opts.screenshot_mode {
            ScreenshotMode::Png => ScreenshotMode::Png,
            _ => ScreenshotMode::Raw,
        };
        let cmd = match mode {
            ScreenshotMode::Png => "screencap -p",
            _ => "screencap",
        };
        let received = bytes::Bytes::from(self.exec(cmd, self.opts.screenshot_timeout).await?);
        let previous = self.last_decoded.lock().ok().and_then(|g| g.clone());
        let frame = tokio::task::spawn_blocking(move || -> Result<Arc<DecodedFrame>> {
            // Host CPU, not device time: the runtime's step benchmark counts it as overhead.
            let _phase = tracing::trace_span!(target: "phoneagent::phase", "png_decode").entered();
            if let Some(prev) = previous.filter(|p| p.received == received) {
                return Ok(prev);
            }
            let (png, image) = match mode {
                ScreenshotMode::Png => (received.clone(), frame::decode_png(&received)?),
                _ => {
                    let img = frame::decode_raw(&received)?;
                    (bytes::Bytes::from(frame::encode_png(&img)?), img)
                }
            };
            let blocked = frame::is_blank(&image);
            Ok(Arc::new(DecodedFrame {
                received,
                png,
                image: Arc::new(image),
                blocked,
            }))
        })
        .await
        .map_err(|e| DeviceError::Protocol(format!("screenshot decoder crashed: {e}")))??;
        if let Ok(mut g) = self.last_frame.lock() {
            *g = Some(frame.image.dimensions());
        }
        if let Ok(mut g) = self.last_decoded.lock() {
            *g = Some(frame.clone());
        }
        Ok(Screenshot {
            png: frame.png.clone(),
            image: frame.image.clone(),
            blocked: frame.blocked,
            capture_ms: t0.elapsed().as_millis().min(u128::from(u32::MAX)) as u32,
        })
    }

    async fn screenshot(&self) -> Result<Screenshot> {
        let attempts = self.opts.screenshot_attempts.max(1);
        let mut last = String::new();
        for n in 1..=attempts {
            match self.capture_once().await {
                Ok(s) => {
                    if s.blocked {
                        tracing::info!(serial = %self.serial, "screenshot is blank: screenshot_blocked");
                    }
                    return Ok(s);
                }
                Err(e) if e.is_device_lost() => return Err(e),
                Err(e @ (DeviceError::Unauthorized { .. } | DeviceError::Cancelled)) => {
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!(serial = %self.serial, attempt = n, "screenshot failed: {e}");
                    last = e.to_string();
                    if n < attempts {
                        tokio::time::sleep(Duration::from_millis(100 * u64::from(n))).await;
                    }
                }
            }
        }
        Err(DeviceError::ScreenshotFailed {
            attempts,
            detail: last,
        })
    }

    async fn wm_size(&self) -> Result<parse::WmSize> {
        let out = self.shell_ok("wm size").await?;
        parse::parse_wm_size(&out).ok_or_else(|| DeviceError::CommandFailed {
            command: "wm size".into(),
            detail: format!("no size in {:?}", first_lines(&out, 2)),
        })
    }

    async fn density(&self) -> Result<Option<u32>> {
        Ok(parse::parse_wm_density(&self.shell_ok("wm density").await?))
    }

    async fn rotation(&self) -> Result<Option<Rotation>> {
        Ok(parse::parse_orientation(
            &self.shell_ok("dumpsys input").await?,
        ))
    }

    fn forget_geometry(&self) {
        if let Ok(mut g) = self.geometry_cache.lock() {
            *g = None;
        }
    }

    /// Geometry, from the cache while the frame size is the one it was read with and it is
    /// younger than [`AdbDeviceOptions::geometry_max_age`] (issue #12: not three commands
    /// before every screenshot); else read from the phone.
    async fn geometry(&self) -> Result<ScreenGeometry> {
        let frame = self.last_frame.lock().ok().and_then(|g| *g);
        let cached = self.geometry_cache.lock().ok().and_then(|g| *g);
        if let Some(c) = cached
            && c.frame == frame
            && c.read_at.elapsed() < self.opts.geometry_max_age
        {
            return Ok(c.geometry);
        }
        let geometry = self.read_geometry().await?;
        if let Ok(mut g) = self.geometry_cache.lock() {
            *g = Some(CachedGeometry {
                geometry,
                frame,
                read_at: Instant::now(),
            });
        }
        Ok(geometry)
    }

    /// `wm size`, `wm density` and `dumpsys input` (three commands).
    async fn read_geometry(&self) -> Result<ScreenGeometry> {
        let size = self.wm_size().await?;
        let (nw, nh) = size.effective().ok_or_else(|| DeviceError::CommandFailed {
            command: "wm size".into(),
            detail: "no size".into(),
        })?;
        let density = self.density().await.unwrap_or(None);
        let rotation = self.rotation().await?.unwrap_or_else(|| {
            tracing::warn!(serial = %self.serial, "no SurfaceOrientation in dumpsys input: assuming 0°");
            Rotation::R0
        });
        let (mut w, mut h) = if rotation.is_landscape() {
            (nh, nw)
        } else {
            (nw, nh)
        };
        // The size of the screenshot actually taken wins when it has the same orientation.
        if let Some((sw, sh)) = self.last_frame.lock().ok().and_then(|g| *g)
            && (sw > sh) == (w > h)
            && (sw, sh) != (w, h)
        {
            tracing::debug!(serial = %self.serial, wm = ?(w, h), shot = ?(sw, sh), "screenshot size wins over wm size");
            (w, h) = (sw, sh);
        }
        Ok(ScreenGeometry {
            width_px: w,
            height_px: h,
            density_dpi: density,
            rotation,
        })
    }

    async fn readiness(&self, cancel: &CancellationToken) -> Result<Readiness> {
        let mut checks = Vec::new();
        let mut push = |name: &str, r: std::result::Result<String, (String, String)>| {
            checks.push(match r {
                Ok(detail) => ReadinessCheck {
                    name: name.into(),
                    ok: true,
                    detail,
                    fix: None,
                },
                Err((detail, fix)) => ReadinessCheck {
                    name: name.into(),
                    ok: false,
                    detail,
                    fix: Some(fix),
                },
            });
        };
        let fail = |e: &DeviceError| (e.to_string(), fix_for(e));
        let bail = |e: &DeviceError| matches!(e, DeviceError::Cancelled) || cancel.is_cancelled();

        // state
        let state = match self.server.state_of(&self.serial).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                let (detail, fix) = if self.server.is_direct() {
                    (
                        format!("not reachable ({})", self.server.describe()),
                        "connect the phone with USB debugging on; for --direct, check the phone's IP and that `adb tcpip 5555` was run since its last reboot".to_string(),
                    )
                } else {
                    (
                        "not listed by the adb server".to_string(),
                        "connect the phone with USB debugging on (or `adb connect HOST:PORT`)"
                            .to_string(),
                    )
                };
                push("state", Err((detail, fix)));
                return Ok(Readiness {
                    serial: self.serial.clone(),
                    checks,
                });
            }
            Err(e) => return Err(e),
        };
        if state != DeviceState::Device {
            let fix = parse::fix_for_state(&state).unwrap_or_default();
            push("state", Err((format!("{state:?}").to_lowercase(), fix)));
            return Ok(Readiness {
                serial: self.serial.clone(),
                checks,
            });
        }
        push("state", Ok(format!("device ({})", self.server.describe())));

        // screen size
        let mut wm_natural = None;
        match self.wm_size().await {
            Ok(s) => {
                wm_natural = s.effective();
                let detail = match (s.physical, s.override_size) {
                    (Some((w, h)), Some((ow, oh))) => {
                        format!("{ow}x{oh} (override of physical {w}x{h})")
                    }
                    (Some((w, h)), None) | (None, Some((w, h))) => format!("{w}x{h}"),
                    (None, None) => "unknown".into(),
                };
                push("screen_size", Ok(detail));
            }
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("screen_size", Err(fail(&e))),
        }
        match self.density().await {
            Ok(Some(d)) => push("density", Ok(format!("{d} dpi"))),
            Ok(None) => push(
                "density",
                Err((
                    "`wm density` printed no density".into(),
                    "unlock the phone and retry; if it persists, run `adb shell wm density` to see what the phone says".into(),
                )),
            ),
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("density", Err(fail(&e))),
        }
        match self.rotation().await {
            Ok(Some(r)) => push(
                "rotation",
                Ok(format!(
                    "{}°{}",
                    r.quarter_turns() * 90,
                    if r.is_landscape() { " (landscape)" } else { "" }
                )),
            ),
            Ok(None) => push("rotation", Ok("unknown (assuming 0°)".into())),
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("rotation", Err(fail(&e))),
        }
        match self.adb_keyboard_installed().await {
            Ok(true) => push("adb_keyboard", Ok(format!("{ADB_KEYBOARD_IME} installed"))),
            Ok(false) => push(
                "adb_keyboard",
                Err((
                    "ADB Keyboard is not installed: only ASCII text can be typed".into(),
                    "install ADB Keyboard (package com.android.adbkeyboard, from github.com/senzhk/ADBKeyBoard) for Chinese, emoji and other text, or use ASCII-only text".into(),
                )),
            ),
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("adb_keyboard", Err(fail(&e))),
        }
        match self.screenshot().await {
            Ok(s) if s.blocked => push(
                "screenshot",
                Err((
                    format!("the {}x{} frame is blank (black/uniform)", s.image.width(), s.image.height()),
                    "turn the screen on and unlock the phone; apps with protected windows (banking, payment) cannot be captured, so go to the home screen".into(),
                )),
            ),
            Ok(s) => {
                let (w, h) = s.image.dimensions();
                let mut detail = format!("{w}x{h} PNG in {} ms", s.capture_ms);
                if let Some((nw, nh)) = wm_natural
                    && (nw, nh) != (w, h)
                    && (nh, nw) != (w, h)
                {
                    detail.push_str(&format!(
                        " (wm size says {nw}x{nh}; the screenshot size is used)"
                    ));
                }
                push("screenshot", Ok(detail));
            }
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("screenshot", Err(fail(&e))),
        }
        // A harmless input: KEYCODE_UNKNOWN (0) reaches the input system but does nothing.
        match self.input("input keyevent 0", Duration::ZERO).await {
            Ok(()) => push("input", Ok("input events are accepted".into())),
            Err(e) if bail(&e) => return Err(DeviceError::Cancelled),
            Err(e) => push("input", Err(fail(&e))),
        }
        // The capture and input paths in use, and how to get the faster one (SPEC D8, D9).
        for c in self.stream_checks().await {
            checks.push(c);
        }
        Ok(Readiness {
            serial: self.serial.clone(),
            checks,
        })
    }
}

/// Wait (bounded) until a direct link connects again (SPEC D6), polling every 200 ms.
async fn wait_for_direct(
    d: &DirectLink,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match d.state().await {
            Ok(Some(DeviceState::Device)) => return Ok(()),
            Ok(Some(s)) => format!("{s:?}").to_lowercase(),
            Ok(None) => "not reachable".to_string(),
            Err(e) => e.to_string(),
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(DeviceError::DeviceLost {
                serial: d.serial(),
                command: "wait_for_device".into(),
                detail: format!(
                    "did not come back within {} ms ({last}): reconnect the phone and unlock it",
                    timeout.as_millis()
                ),
            });
        }
        let nap = Duration::from_millis(200).min(deadline - now);
        tokio::select! {
            () = cancel.cancelled() => return Err(DeviceError::Cancelled),
            () = tokio::time::sleep(nap) => {}
        }
    }
}

/// How [`AdbDevice::connect`] finds the phone (SPEC D1): flags and environment, resolved.
#[derive(Debug, Clone, Default)]
pub struct ConnectPlan {
    /// `--adb HOST:PORT` (else `ADB_SERVER_SOCKET`, `ANDROID_ADB_SERVER_PORT`, 127.0.0.1:5037).
    pub adb: Option<String>,
    /// `--direct HOST:PORT` (else `PHONEAGENT_ADB_DIRECT`): drive a TCP adbd directly.
    pub direct_tcp: Option<String>,
    /// When no adb server answers, look for a phone on USB directly (needs the `usb` feature;
    /// [`ConnectPlan::from_flags`] turns it on unless `--adb`, `ADB_SERVER_SOCKET` or
    /// `ANDROID_ADB_SERVER_PORT` named a server).
    pub usb_fallback: bool,
    /// Timeouts of direct connections.
    pub direct: DirectOptions,
}

/// Where [`ConnectPlan::resolve`] decided to go.
#[derive(Debug)]
pub enum Route {
    /// Through this adb server (it answered `host:version`).
    Server(AdbServer),
    /// Directly to this adbd.
    Direct(DirectTarget),
    /// No adb server answered (the error says why) and USB support is built in: look for a
    /// phone on USB.
    Usb(DeviceError),
}

impl ConnectPlan {
    /// From flags: `adb` (`--adb`), `direct` (`--direct`); `PHONEAGENT_ADB_DIRECT` fills in a
    /// missing `direct`.
    pub fn from_flags(adb: Option<&str>, direct: Option<&str>) -> Self {
        let direct_tcp = direct
            .map(str::to_string)
            .or_else(|| std::env::var(crate::direct::DIRECT_ENV).ok())
            .filter(|s| !s.trim().is_empty());
        // A server the user named (flag or environment) is meant: no silent USB fallback.
        let named_server = adb.is_some()
            || ["ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
        Self {
            usb_fallback: !named_server && crate::direct::USB_SUPPORTED,
            adb: adb.map(str::to_string),
            direct_tcp,
            direct: DirectOptions::default(),
        }
    }

    /// Decide: an explicit direct TCP target wins; else the adb server when it answers
    /// `host:version`; else USB directly when built in and [`ConnectPlan::usb_fallback`] is
    /// set; else the server's error.
    ///
    /// # Errors
    /// [`DeviceError::Config`] for malformed addresses; [`DeviceError::AdbServerUnreachable`]
    /// when no server answers and USB support is not built in.
    pub async fn resolve(&self) -> Result<Route> {
        if let Some(d) = &self.direct_tcp {
            return Ok(Route::Direct(DirectTarget::parse_tcp(d)?));
        }
        let server = AdbServer::new(AdbServerAddr::resolve(self.adb.as_deref())?);
        match server.version().await {
            Ok(_) => Ok(Route::Server(server)),
            Err(e @ DeviceError::AdbServerUnreachable { .. })
                if crate::direct::USB_SUPPORTED && self.usb_fallback =>
            {
                Ok(Route::Usb(e))
            }
            Err(e) => Err(e),
        }
    }
}

/// The plain-language fix for an error in a readiness check.
fn fix_for(e: &DeviceError) -> String {
    match e {
        DeviceError::InjectEventsDenied => "on Xiaomi/MIUI/HyperOS: Settings → Additional settings → Developer options → turn on \"USB debugging (Security settings)\" (needs a SIM and a Mi account), then replug".into(),
        DeviceError::DeviceLost { .. } | DeviceError::Offline { .. } | DeviceError::SerialNotFound { .. } => {
            "the phone disconnected: replug the cable, unlock the phone and retry".into()
        }
        DeviceError::Unauthorized { .. } => {
            "unlock the phone and accept the \"Allow USB debugging\" prompt".into()
        }
        DeviceError::Timeout { .. } => "the phone did not answer in time: unlock it, close heavy apps and retry".into(),
        DeviceError::ScreenshotFailed { .. } => {
            "the phone could not take a screenshot: unlock it and retry; if it persists, reboot the phone".into()
        }
        _ => format!("{e}"),
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect::<Vec<_>>()
        .join(" | ")
}

#[async_trait]
impl Device for AdbDevice {
    fn serial(&self) -> &str {
        &self.inner.serial
    }

    async fn geometry(&self, cancel: &CancellationToken) -> Result<ScreenGeometry> {
        self.with_cancel(cancel, self.inner.geometry()).await
    }

    async fn screenshot(&self, cancel: &CancellationToken) -> Result<Screenshot> {
        self.with_cancel(cancel, self.inner.screenshot()).await
    }

    async fn tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: 0,
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("tap", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input tap {} {}", p.x, p.y);
        self.with_cancel(cancel, self.inner.input(&cmd, Duration::ZERO))
            .await
    }

    async fn double_tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: 0,
        };
        let i = &self.inner;
        let fast = self
            .with_cancel(cancel, async {
                if i.fast_input("double tap", &g).await?.is_none() {
                    return Ok(None);
                }
                if !i.opts.double_tap_gap.is_zero() {
                    tokio::time::sleep(i.opts.double_tap_gap).await;
                }
                i.fast_input("double tap", &g).await
            })
            .await?;
        if fast.is_some() {
            return Ok(());
        }
        let cmd = format!("input tap {} {}", p.x, p.y);
        self.with_cancel(cancel, async {
            i.input(&cmd, Duration::ZERO).await?;
            if !i.opts.double_tap_gap.is_zero() {
                tokio::time::sleep(i.opts.double_tap_gap).await;
            }
            i.input(&cmd, Duration::ZERO).await
        })
        .await
    }

    async fn long_press(
        &self,
        p: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: duration_ms.max(1),
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("long press", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input swipe {} {} {} {} {duration_ms}", p.x, p.y, p.x, p.y);
        let extra = Duration::from_millis(u64::from(duration_ms));
        self.with_cancel(cancel, self.inner.input(&cmd, extra))
            .await
    }

    async fn swipe(
        &self,
        from: DevicePoint,
        to: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let g = Gesture::Touch {
            from: (from.x, from.y),
            to: (to.x, to.y),
            ms: duration_ms,
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("swipe", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!(
            "input swipe {} {} {} {} {duration_ms}",
            from.x, from.y, to.x, to.y
        );
        let extra = Duration::from_millis(u64::from(duration_ms));
        self.with_cancel(cancel, self.inner.input(&cmd, extra))
            .await
    }

    async fn key(&self, key: KeyCode, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Key(key.code());
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("key", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input keyevent {}", key.code());
        self.with_cancel(cancel, self.inner.input(&cmd, Duration::ZERO))
            .await
    }

    async fn type_text(&self, text: &str, cancel: &CancellationToken) -> Result<()> {
        self.with_cancel(cancel, self.inner.type_text(text)).await
    }

    async fn restore_ime(&self) -> Result<()> {
        self.inner.restore_ime().await
    }

    async fn readiness(&self, cancel: &CancellationToken) -> Result<Readiness> {
        self.with_cancel(cancel, self.inner.readiness(cancel)).await
    }

    /// With a live stream, [`Settle::UntilStill`] and [`Settle::Adaptive`] watch decoded frames
    /// (no device command) and return the newest as the verification frame; a stream that
    /// dies while waiting, or none, falls back to [`crate::settle_by_screenshots`].
    async fn settle(&self, how: Settle, cancel: &CancellationToken) -> Result<Option<Screenshot>> {
        let watch = match how {
            Settle::Fixed(_) => None,
            Settle::UntilStill { quiet, max, .. } | Settle::Adaptive { quiet, max, .. } => {
                Some((quiet, max))
            }
        };
        if let Some((quiet, max)) = watch {
            let t0 = Instant::now();
            let i = &self.inner;
            let shot = self
                .with_cancel(cancel, async {
                    Ok(i.stream
                        .settle(
                            quiet,
                            max,
                            i.opts.stream_fresh_wait,
                            i.opts.stream_fresh_margin,
                            t0,
                        )
                        .await)
                })
                .await?;
            if let Some(shot) = shot {
                if let Ok(mut g) = i.last_frame.lock() {
                    *g = Some(shot.image.dimensions());
                }
                return Ok(Some(shot));
            }
        }
        crate::settle_by_screenshots(self, how, cancel).await
    }

    async fn paths(&self) -> Option<(String, String, Option<String>)> {
        let (c, i, note) = self.stream_paths().await;
        Some((c.to_string(), i.to_string(), note))
    }
}
