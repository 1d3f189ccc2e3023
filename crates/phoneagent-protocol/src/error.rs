//! Stable error codes (`{code, message}`) for everything that reaches a user or the runtime's
//! recovery table (SPEC R5). The UI and recovery match on [`ErrorCode`], never on messages.

use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code. Serialized in `snake_case`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ErrorCode {
    /// No device is connected / visible to the adb server.
    NoDevice,
    /// Several devices and none chosen.
    MultipleDevices,
    /// The device has not accepted the USB debugging prompt.
    DeviceUnauthorized,
    /// The device is `offline`.
    DeviceOffline,
    /// The device vanished mid-command (D6).
    DeviceLost,
    /// The adb server is not reachable.
    AdbServerUnreachable,
    /// The adb server or device answered something we could not understand.
    AdbProtocol,
    /// `input` was refused with an `INJECT_EVENTS` SecurityException (Xiaomi setting).
    InjectEventsDenied,
    /// Screen capture failed (after retries).
    ScreenshotFailed,
    /// Screen capture succeeded but the frame is black/blank (secure window, D3).
    ScreenshotBlocked,
    /// Non-ASCII text and no ADB Keyboard installed.
    AdbKeyboardMissing,
    /// Switching/restoring the IME failed.
    ImeSwitchFailed,
    /// The model answer could not be parsed/validated (A2–A5).
    ProtocolError,
    /// HTTP error from the model endpoint (after retries).
    ModelHttp,
    /// The model endpoint rate-limited us past the retry budget.
    ModelRateLimited,
    /// The model call timed out.
    ModelTimeout,
    /// The model endpoint is misconfigured (no key, bad URL, unknown profile).
    ModelConfig,
    /// Coordinate contract could not be negotiated (M4, fail-closed).
    CalibrationFailed,
    /// A coordinate was outside the frozen space (M5).
    CoordinateOutOfRange,
    /// The action was planned on a screenshot that is no longer current (R3).
    StaleAction,
    /// Blocked by the safety gate (S5).
    SafetyBlocked,
    /// A reviewer was unavailable or failed (S7, AR3).
    ReviewerFailed,
    /// Token or input-token budget exhausted (M3, R7).
    BudgetExhausted,
    /// Max steps reached (R7).
    MaxSteps,
    /// Max wall time reached (R7).
    MaxDuration,
    /// Cancelled by the user.
    Cancelled,
    /// The store (SQLite) failed.
    Store,
    /// Configuration is invalid.
    Config,
    /// Something unexpected; the message says what.
    Internal,
}

impl ErrorCode {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoDevice => "no_device",
            Self::MultipleDevices => "multiple_devices",
            Self::DeviceUnauthorized => "device_unauthorized",
            Self::DeviceOffline => "device_offline",
            Self::DeviceLost => "device_lost",
            Self::AdbServerUnreachable => "adb_server_unreachable",
            Self::AdbProtocol => "adb_protocol",
            Self::InjectEventsDenied => "inject_events_denied",
            Self::ScreenshotFailed => "screenshot_failed",
            Self::ScreenshotBlocked => "screenshot_blocked",
            Self::AdbKeyboardMissing => "adb_keyboard_missing",
            Self::ImeSwitchFailed => "ime_switch_failed",
            Self::ProtocolError => "protocol_error",
            Self::ModelHttp => "model_http",
            Self::ModelRateLimited => "model_rate_limited",
            Self::ModelTimeout => "model_timeout",
            Self::ModelConfig => "model_config",
            Self::CalibrationFailed => "calibration_failed",
            Self::CoordinateOutOfRange => "coordinate_out_of_range",
            Self::StaleAction => "stale_action",
            Self::SafetyBlocked => "safety_blocked",
            Self::ReviewerFailed => "reviewer_failed",
            Self::BudgetExhausted => "budget_exhausted",
            Self::MaxSteps => "max_steps",
            Self::MaxDuration => "max_duration",
            Self::Cancelled => "cancelled",
            Self::Store => "store",
            Self::Config => "config",
            Self::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_matches_serde_name() {
        for code in [
            ErrorCode::NoDevice,
            ErrorCode::ScreenshotBlocked,
            ErrorCode::StaleAction,
        ] {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json.as_str().unwrap(), code.as_str());
        }
    }
}
