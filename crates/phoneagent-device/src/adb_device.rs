//! [`AdbDevice`]: the [`Device`](crate::Device) trait over an adb server (SPEC D1-D4, D6).
//!
//! The code is split by job: `connect` opens the phone (adb server, direct USB/TCP, the
//! [`ConnectPlan`]) and waits for it to come back, `shell` runs commands and maps transport
//! failures, `capture` takes screenshots and reads geometry, `input` sends gestures and keys
//! (the `Device` impl), `typing` types text through ADB Keyboard, `readiness` is the doctor
//! check list.

use crate::Result;
use crate::ime::{self, ImeGuard};
use crate::link::AdbLink;
use crate::server::{AdbServer, ShellProtocol};
use crate::stream::{CapturePath, InputPath};
use crate::types::DeviceError;
use crate::wire::ShellOutput;
use phoneagent_protocol::ScreenGeometry;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod capture;
mod connect;
mod input;
mod readiness;
mod shell;
mod typing;

pub use connect::{ConnectPlan, Route};

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
/// [`ImeGuard`] inside restores the user's IME: on
/// [`Device::restore_ime`](crate::Device::restore_ime), when a call is cancelled, and when the
/// last clone is dropped.
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

fn first_lines(s: &str, n: usize) -> String {
    s.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect::<Vec<_>>()
        .join(" | ")
}
