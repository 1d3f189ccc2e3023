//! Types of the device layer.

use phoneagent_protocol::ErrorCode;
use serde::{Deserialize, Serialize};

/// A captured screen (SPEC D3).
#[derive(Clone)]
pub struct Screenshot {
    /// The PNG bytes as the device produced them (or encoded on the host from raw).
    pub png: bytes::Bytes,
    /// Decoded pixels; its size is the truth for the screen size.
    pub image: std::sync::Arc<image::RgbaImage>,
    /// True when the frame is all black/blank: a protected window (`screenshot_blocked`).
    pub blocked: bool,
    /// Capture time in ms (command round trip + decode).
    pub capture_ms: u32,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screenshot")
            .field("width", &self.image.width())
            .field("height", &self.image.height())
            .field("png_bytes", &self.png.len())
            .field("blocked", &self.blocked)
            .finish()
    }
}

/// Key events the agent may send (SPEC D4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyCode {
    /// KEYCODE_HOME (3).
    Home,
    /// KEYCODE_BACK (4).
    Back,
    /// KEYCODE_ENTER (66).
    Enter,
}

impl KeyCode {
    /// The Android keycode number.
    pub fn code(self) -> u32 {
        match self {
            Self::Home => 3,
            Self::Back => 4,
            Self::Enter => 66,
        }
    }
}

/// Device state as the adb server lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceState {
    /// Ready.
    Device,
    /// USB debugging prompt not accepted.
    Unauthorized,
    /// Not responding.
    Offline,
    /// Any other state string (`recovery`, `bootloader`, `no permissions`, …).
    Other(String),
}

/// How the device is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// USB cable.
    Usb,
    /// `adb connect host:port` / emulator.
    Tcp,
}

/// One row of the device list (SPEC D1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// ADB serial.
    pub serial: String,
    /// State.
    pub state: DeviceState,
    /// `model:` from `devices -l`, if given.
    pub model: Option<String>,
    /// Transport.
    pub transport: Transport,
    /// What the user should do when the state is not `device`.
    pub fix: Option<String>,
}

/// One preflight check (SPEC D2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadinessCheck {
    /// Stable check name (`state`, `screen_size`, `density`, `rotation`, `adb_keyboard`, `screenshot`, `input`).
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// Plain-language fix when it failed.
    pub fix: Option<String>,
}

/// Result of [`crate::Device::readiness`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// ADB serial.
    pub serial: String,
    /// All checks.
    pub checks: Vec<ReadinessCheck>,
}

impl Readiness {
    /// True when every check passed, except `adb_keyboard` which only limits text to ASCII.
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|c| c.ok || c.name == "adb_keyboard")
    }
}

/// Errors of the device layer. Each maps to a stable [`ErrorCode`] and carries a fix for the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// No device connected.
    #[error(
        "no Android device found: connect a phone with USB debugging on, or try the virtual phone: `phoneagent sim serve` in another shell, then add `--adb 127.0.0.1:15037` to your command"
    )]
    NoDevice,
    /// Several devices and none chosen.
    #[error("several devices are connected ({}): choose one with --serial or ANDROID_SERIAL", serials.join(", "))]
    MultipleDevices {
        /// The candidates.
        serials: Vec<String>,
    },
    /// Device has not authorized this computer.
    #[error(
        "device {serial} is unauthorized: unlock the phone and accept the \"Allow USB debugging\" prompt"
    )]
    Unauthorized {
        /// ADB serial.
        serial: String,
    },
    /// Device offline.
    #[error("device {serial} is offline: unplug and replug the cable, or run `adb reconnect`")]
    Offline {
        /// ADB serial.
        serial: String,
    },
    /// The device vanished mid-command (D6): the runtime waits for the same serial.
    #[error("device {serial} was lost during `{command}`: {detail}")]
    DeviceLost {
        /// ADB serial.
        serial: String,
        /// The command in flight.
        command: String,
        /// What the transport said.
        detail: String,
    },
    /// No adb server at the address.
    #[error(
        "cannot reach the adb server at {addr}: {detail} (start it with `adb start-server`, or pass --adb HOST:PORT; without adb, use --direct PHONE_IP:5555 for a phone in TCP debugging mode)"
    )]
    AdbServerUnreachable {
        /// host:port tried.
        addr: String,
        /// OS error.
        detail: String,
    },
    /// Direct mode (no adb server, SPEC D1): nothing usable answers at the phone's address or
    /// on USB.
    #[error(
        "cannot reach the phone ({target}): {detail} (turn on USB debugging and plug the phone in; for --direct HOST:PORT run `adb tcpip 5555` once over USB since the phone's last reboot, and check it is on the same network)"
    )]
    DirectUnreachable {
        /// `direct TCP HOST:PORT` / `direct USB SERIAL`.
        target: String,
        /// What failed.
        detail: String,
    },
    /// A protocol-level failure (`FAIL` reply, malformed data).
    #[error("adb protocol error: {0}")]
    Protocol(String),
    /// `input` refused: INJECT_EVENTS permission (Xiaomi/MIUI).
    #[error(
        "the phone refused simulated input (INJECT_EVENTS): turn on Developer options → \"USB debugging (Security settings)\" (Xiaomi/MIUI), then retry"
    )]
    InjectEventsDenied,
    /// A shell command failed.
    #[error("`{command}` failed: {detail}")]
    CommandFailed {
        /// The command.
        command: String,
        /// stderr / output.
        detail: String,
    },
    /// Screenshot capture failed after retries.
    #[error("screenshot failed after {attempts} attempts: {detail}")]
    ScreenshotFailed {
        /// Attempts made.
        attempts: u32,
        /// Last error.
        detail: String,
    },
    /// Non-ASCII text without ADB Keyboard.
    #[error(
        "typing non-ASCII text needs ADB Keyboard: install it (com.android.adbkeyboard) on the phone, or use ASCII-only text"
    )]
    AdbKeyboardMissing,
    /// IME switch/restore failed.
    #[error("could not switch the input method: {0}")]
    ImeSwitchFailed(String),
    /// Cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// The chosen serial is not in the adb server's list.
    #[error(
        "device {serial} is not connected{}: check the cable (or `adb connect HOST:PORT`) and the serial",
        if available.is_empty() { String::new() } else { format!(" (connected: {})", available.join(", ")) }
    )]
    SerialNotFound {
        /// The serial asked for.
        serial: String,
        /// Serials the server lists.
        available: Vec<String>,
    },
    /// A command got no answer in time (the device may be busy or frozen).
    #[error(
        "`{command}` got no answer within {ms} ms: unlock the phone and check that it responds, then retry"
    )]
    Timeout {
        /// The command.
        command: String,
        /// The time limit in ms.
        ms: u64,
    },
    /// Invalid configuration (e.g. a malformed `--adb` / `ADB_SERVER_SOCKET`).
    #[error("invalid device configuration: {0}")]
    Config(String),
    /// I/O error.
    #[error("I/O error talking to adb: {0}")]
    Io(#[from] std::io::Error),
}

impl DeviceError {
    /// The stable code for UI and recovery (SPEC R5).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::NoDevice | Self::SerialNotFound { .. } | Self::DirectUnreachable { .. } => {
                ErrorCode::NoDevice
            }
            Self::MultipleDevices { .. } => ErrorCode::MultipleDevices,
            Self::Unauthorized { .. } => ErrorCode::DeviceUnauthorized,
            Self::Offline { .. } => ErrorCode::DeviceOffline,
            Self::DeviceLost { .. } => ErrorCode::DeviceLost,
            Self::AdbServerUnreachable { .. } => ErrorCode::AdbServerUnreachable,
            Self::Protocol(_) | Self::CommandFailed { .. } | Self::Io(_) | Self::Timeout { .. } => {
                ErrorCode::AdbProtocol
            }
            Self::Config(_) => ErrorCode::Config,
            Self::InjectEventsDenied => ErrorCode::InjectEventsDenied,
            Self::ScreenshotFailed { .. } => ErrorCode::ScreenshotFailed,
            Self::AdbKeyboardMissing => ErrorCode::AdbKeyboardMissing,
            Self::ImeSwitchFailed(_) => ErrorCode::ImeSwitchFailed,
            Self::Cancelled => ErrorCode::Cancelled,
        }
    }

    /// True when the runtime should pause in `device_lost` and wait for the serial (D6).
    pub fn is_device_lost(&self) -> bool {
        matches!(self, Self::DeviceLost { .. } | Self::Offline { .. })
    }
}
