//! The readiness check list of `doctor` (state, screen size, density, rotation, ADB Keyboard,
//! screenshot, input) and the capture and input paths in use (SPEC D8, D9), each with its fix.

use super::Inner;
use crate::Result;
use crate::parse;
use crate::stream::{CapturePath, InputPath};
use crate::text::ADB_KEYBOARD_IME;
use crate::types::{DeviceError, DeviceState, Readiness, ReadinessCheck};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Inner {
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

    pub(super) async fn readiness(&self, cancel: &CancellationToken) -> Result<Readiness> {
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
