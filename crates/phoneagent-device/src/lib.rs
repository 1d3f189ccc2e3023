//! # phoneagent-device
//!
//! The [`Device`] trait the runtime drives, and its ADB implementation.
//! Input-equivalent actions only (SPEC D4): no app launch, package or window queries.

mod types;

pub use types::{
    DeviceError, DeviceInfo, DeviceState, KeyCode, Readiness, ReadinessCheck, Screenshot, Transport,
};

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
}
