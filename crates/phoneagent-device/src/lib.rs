//! # phoneagent-device
//!
//! The [`Device`] trait the runtime drives, and its ADB implementation (SPEC D1-D6).
//! Input-equivalent actions only (SPEC D4): no app launch, package or window queries.
//!
//! ## Code map
//! * `wire` — the adb smart-socket format: `hex4` requests, `OKAY`/`FAIL`, shell-v2 packets.
//! * [`AdbServer`] — a client of one adb server (`--adb HOST:PORT`, `ADB_SERVER_SOCKET`,
//!   `ANDROID_ADB_SERVER_PORT`, default `127.0.0.1:5037`, see [`AdbServerAddr::resolve`]):
//!   host services (`host:devices-l`, `host-serial:S:features`, …) and transport services
//!   (`shell,v2,raw:`, `shell:`, `exec:`), one TCP connection per command as adb does. All I/O
//!   is async (tokio); nothing blocks the runtime.
//! * [`select_device`] / [`choose_device`] — explicit serial, `ANDROID_SERIAL`, or the only
//!   device in state `device`; several → [`DeviceError::MultipleDevices`]; `unauthorized` /
//!   `offline` skipped and reported with their fix.
//! * [`wait_for_device`] — after [`DeviceError::DeviceLost`], poll until the same serial is back.
//! * [`parse`] — parsers of adb output, apart from I/O, tested on captured output.
//! * [`text`] — ADB Keyboard base64 broadcasts and the ASCII `input text` fallback.
//! * [`frame`] — PNG/raw decoding, blank-frame detection (`screenshot_blocked`), downscaling.
//! * [`AdbDevice`] — the [`Device`] implementation; [`ImeGuard`] restores the user's IME on
//!   every exit path.
//!
//! ## Invariants
//! * Every device command carries the chosen serial (`host:transport:SERIAL`).
//! * Every `input` command's exit status and stderr are checked; the `INJECT_EVENTS`
//!   SecurityException becomes [`DeviceError::InjectEventsDenied`].
//! * A blank frame is returned with `blocked = true`; a failed capture is retried then reported
//!   as [`DeviceError::ScreenshotFailed`]; no image is ever made up.
//! * A transport failure mid-command (stream closed, device gone from the list, `offline`,
//!   server gone) is [`DeviceError::DeviceLost`]; the runtime waits and re-observes (D6).
//! * Every call takes a [`CancellationToken`]; a cancelled call returns
//!   [`DeviceError::Cancelled`], stops sending commands and restores the user's IME.
//!
//! ## Direct mode (no adb server): USB and TCP adbd (SPEC D1)
//! [`AdbDevice::connect`] with a [`ConnectPlan`] picks the transport: `--direct HOST:PORT` /
//! `PHONEAGENT_ADB_DIRECT` → the phone's adbd over TCP; else the adb server when one answers
//! `host:version`; else (feature `usb`, on by default) a phone on USB directly. [`AdbLink`]
//! hides the difference from the rest of [`AdbDevice`] (same shell/exec, same errors:
//! nothing there → [`DeviceError::NoDevice`] / [`DeviceError::DirectUnreachable`], prompt not
//! accepted → [`DeviceError::Unauthorized`], I/O mid-command → [`DeviceError::DeviceLost`]).
//!
//! * [`direct`] — our own implementation of the device-side message layer (CNXN, AUTH
//!   token/signature/public key, OPEN/OKAY/WRTE/CLSE, checksums, negotiated max payload),
//!   async on tokio, over a TCP stream or (feature `usb`) the bulk endpoints of the phone's
//!   ADB interface through `nusb` (pure Rust: no libusb, no system packages).
//! * [`direct::key::AdbKey`] — `<config dir>/phoneagent/adbkey` (PEM PKCS#8, 0600, like
//!   `~/.android/adbkey`, which is reused when it exists and we have none).
//! * Tested end to end over TCP against the virtual phone's adbd face
//!   (`phoneagent_sim::SimServer::start_adbd`), which verifies the AUTH signature.
//!
//! Why not the `adb_client` crate (3.2.3, evaluated): it has the right shape (`usb` feature,
//! a custom key path, `shell_command` with exit code, `exec`), but (1) its API is blocking
//! (`&mut self`, std sockets): every command would go through `spawn_blocking`, and a cancelled
//! or timed-out call cannot be interrupted; (2) its TCP read loop adds `read()` results until
//! the header is full, so a peer that closes (a phone unplugged mid-command, read() = 0) makes
//! it spin forever instead of failing — exactly the D6 "device lost" case we must surface;
//! (3) with no key file it signs with a fresh random key that it never saves, so every
//! connection would prompt again; (4) build cost: `rusb` with vendored libusb (C, needs a C
//! toolchain + pkg-config in CI), `rustls` + `ring`, `rcgen`, `regex`, `chrono`,
//! `quick-protobuf`, `num-bigint-dig`, `image`. The message layer is ~400 lines; owning it
//! gives async I/O, cancellation, typed errors and one code path tested over TCP.

mod adb_device;
pub mod direct;
pub mod frame;
mod ime;
mod link;
pub mod parse;
mod server;
mod settle;
pub mod stream;
pub mod text;
mod types;
mod wire;

pub use adb_device::{
    AdbDevice, AdbDeviceOptions, ConnectPlan, Route, ScreenshotMode, serial_from_env,
};
pub use direct::{DirectLink, DirectOptions, DirectTarget};
pub use ime::{
    ImeGuard, ImeJournal, JournalEntry, pending_ime_restores, wait_for_ime_restores,
    wait_for_ime_restores_blocking,
};
pub use link::AdbLink;
pub use server::{
    AdbServer, AdbServerAddr, ShellProtocol, choose_device, select_device, wait_for_device,
};
pub use settle::{Settle, same_pixels, settle_by_screenshots};
pub use types::{
    DeviceError, DeviceInfo, DeviceState, KeyCode, Readiness, ReadinessCheck, Screenshot, Transport,
};
pub use wire::ShellOutput;

use async_trait::async_trait;
use phoneagent_protocol::{DevicePoint, ScreenGeometry};
use tokio_util::sync::CancellationToken;

/// Result alias for the device layer.
pub type Result<T, E = DeviceError> = std::result::Result<T, E>;

/// One Android phone, addressed by its ADB serial. Every method is cancellable through the
/// token: a cancelled call returns [`DeviceError::Cancelled`] and sends no further command.
///
/// Coordinates are device pixels of the *current* orientation; durations are ms.
#[async_trait]
pub trait Device: Send + Sync {
    /// The ADB serial every command carries.
    fn serial(&self) -> &str;

    /// Current geometry (size of the current orientation, density, rotation) (SPEC D2).
    async fn geometry(&self, cancel: &CancellationToken) -> Result<ScreenGeometry>;

    /// A fresh screenshot (SPEC D3). A successful capture of an all-black/blank frame is returned
    /// with `blocked = true` (protected window) — never replaced by a fake image. A failed
    /// capture is retried, then returned as [`DeviceError::ScreenshotFailed`].
    async fn screenshot(&self, cancel: &CancellationToken) -> Result<Screenshot>;

    /// Tap at `p`.
    async fn tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()>;

    /// Two taps at `p` in quick succession.
    async fn double_tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()>;

    /// Press and hold at `p` for `duration_ms`.
    async fn long_press(
        &self,
        p: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()>;

    /// Finger from `from` to `to` over `duration_ms`.
    async fn swipe(
        &self,
        from: DevicePoint,
        to: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()>;

    /// Send a keyevent (Home, Back, …).
    async fn key(&self, key: KeyCode, cancel: &CancellationToken) -> Result<()>;

    /// Type `text` into the focused field: ADB Keyboard broadcast (any Unicode) when installed,
    /// else ASCII-only `input text`; non-ASCII without ADB Keyboard is
    /// [`DeviceError::AdbKeyboardMissing`]. The IME is switched for the task and restored by
    /// [`Device::restore_ime`] (and by the guard on every exit path).
    async fn type_text(&self, text: &str, cancel: &CancellationToken) -> Result<()>;

    /// Restore the user's original IME if this device switched it. Idempotent.
    async fn restore_ime(&self) -> Result<()>;

    /// Preflight checks, each failure with a plain-language fix (SPEC D2).
    async fn readiness(&self, cancel: &CancellationToken) -> Result<Readiness>;

    /// Wait after an action until the screen has settled (SPEC R4), as `how` says. Returns
    /// the last frame taken while waiting (`Some` for [`Settle::UntilStill`]), which the
    /// caller may use as the verification frame, or `None` after a fixed sleep.
    ///
    /// The default is [`settle_by_screenshots`]; a device with a live stream overrides it to
    /// watch decoded frames instead of taking screenshots.
    ///
    /// # Errors
    /// [`DeviceError::Cancelled`]; the screenshot's errors.
    async fn settle(&self, how: Settle, cancel: &CancellationToken) -> Result<Option<Screenshot>> {
        settle_by_screenshots(self, how, cancel).await
    }

    /// The capture and input paths in use now (SPEC D8, D9), as `doctor` words them:
    /// capture `scrcpy 3.x | screenrecord | raw | png`, input `scrcpy control | shell input`,
    /// and why the faster path is not used. `None` (the default) when the device cannot tell.
    /// Asked at the start of a run and after a device error, and recorded in the run.
    async fn paths(&self) -> Option<(String, String, Option<String>)> {
        None
    }
}
