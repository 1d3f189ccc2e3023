//! The virtual phone's **timing profile** (SPEC V6): what each device command costs on the
//! phone, charged before the response bytes leave, so a benchmark or a `run` against the
//! virtual phone sees real phones' latencies instead of the sim's milliseconds.
//!
//! This file is the ONE place the figures live. The same table is in the crate's `README.md`
//! ("Timing profiles") and `docs/ARCHITECTURE.md`; change all three together.
//!
//! | key | `instant` | `real` | what it charges | source |
//! |---|---|---|---|---|
//! | `shell_ms` | 0 | 10 | every service (one adb round trip + `sh -c`) | issue #12: "a plain shell round trip ≈10 ms" |
//! | `screencap_ms` | 0 | 250 | each `screencap` (the capture itself) and `framebuffer:` | issue #12: "the capture itself about 250 ms" |
//! | `screencap_png_ms_per_mpx` | 0 | 480 | `screencap -p`: PNG encoding on the phone, per megapixel | issue #12: 1.5–2 s for 1080×2400 (2.59 Mpx): (1500 − 250) / 2.59 ≈ 480 |
//! | `input_ms` | 0 | 230 | each `input …` / `cmd input …` (a new app_process per command) | issue #12: "each `adb shell input …` at about 230 ms" |
//! | `am_ms` | 0 | 250 | each `am …` (app_process, like `input`) | estimate: same process start as `input` |
//! | `cmd_ms` | 0 | 60 | each other `cmd SERVICE …` (native binder client) | estimate |
//! | `wm_ms` | 0 | 80 | each `wm …` (a script around `cmd window`) | estimate: `cmd` + the script |
//! | `settings_ms` | 0 | 80 | each `settings …` (a script around `cmd settings`) | estimate |
//! | `ime_ms` | 0 | 80 | each `ime …` (a script around `cmd input_method`) | estimate |
//! | `dumpsys_ms` | 0 | 120 | each `dumpsys …` (`dumpsys input` dumps the whole input stack) | estimate |
//! | `pm_ms` | 0 | 300 | each `pm …` (app_process + package manager) | estimate |
//! | `other_ms` | 0 | 5 | any other command (`echo`, `getprop`, `id`, …) | estimate: a fork+exec |
//! | `usb_mb_per_s` | 0 (∞) | 30 | transfer of every response byte to the host (MB/s, 10⁶ bytes) | issue #12: "a USB 2 adb rate (≈30 MB/s)" |
//! | `stream_frame_latency_ms` | 0 | 50 | capture→host latency of one frame of a live stream (scrcpy/screenrecord) | issue #12: "a stream's frame latency ≈50 ms" |
//! | `stream_start_ms` | 0 | 800 | starting a stream: scrcpy's `app_process` server (JVM start, MediaCodec set-up) or `screenrecord`, before its first byte | estimate: scrcpy shows its first frame about 1 s after launch |
//! | `control_ms` | 0 | 6 | each scrcpy control message (touch, key, text, clipboard) applied on the phone | issue #12: "the same tap over a persistent on-device connection took 5.6 ms" |
//!
//! `sync:` (push/pull) is charged `shell_ms` per request plus the transfer of the bytes at
//! `usb_mb_per_s`, both ways.
//!
//! So on `real` a 1080×2400 `screencap -p` costs 10 + 250 + 1244 + PNG bytes/30 MB/s ≈ 1.5 s,
//! a raw `screencap` 10 + 250 + 10.4 MB/30 MB/s ≈ 605 ms, and `input tap` 240 ms.
//!
//! Change them per run: `phoneagent sim serve --timing real --timing-set input_ms=180,usb_mb_per_s=40`,
//! or in code [`TimingProfile::set`] / [`TimingProfile::apply_overrides`].
//!
//! The delay is an async sleep inside the stream that runs the command (never a thread
//! sleep in a shared loop): other streams and connections go on meanwhile, and a stream that
//! closes or a device that disconnects cancels it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};

/// What each device command costs on the phone (SPEC V6). All `*_ms` fields are
/// milliseconds; `screencap_png_ms_per_mpx` is ms per 10⁶ pixels; `usb_mb_per_s` is 10⁶
/// bytes per second (0 = no transfer cost). See the module docs for the table and sources.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingProfile {
    /// Every service: one adb round trip and the shell starting.
    pub shell_ms: f64,
    /// Each `screencap` (and `framebuffer:`): the capture itself.
    pub screencap_ms: f64,
    /// `screencap -p`: PNG encoding on the phone, per megapixel of the frame.
    pub screencap_png_ms_per_mpx: f64,
    /// Each `input …` / `cmd input …`.
    pub input_ms: f64,
    /// Each `am …`.
    pub am_ms: f64,
    /// Each `cmd SERVICE …` other than `cmd input|window|settings|input_method`.
    pub cmd_ms: f64,
    /// Each `wm …` / `cmd window …`.
    pub wm_ms: f64,
    /// Each `settings …` / `cmd settings …`.
    pub settings_ms: f64,
    /// Each `ime …` / `cmd input_method …`.
    pub ime_ms: f64,
    /// Each `dumpsys …`.
    pub dumpsys_ms: f64,
    /// Each `pm …`.
    pub pm_ms: f64,
    /// Any other command (`echo`, `getprop`, …).
    pub other_ms: f64,
    /// adb transfer rate to the host in MB/s (10⁶ bytes/s); 0 = instant.
    pub usb_mb_per_s: f64,
    /// Latency of one live-stream frame (capture on the phone → bytes on the host).
    pub stream_frame_latency_ms: f64,
    /// Starting a live stream (scrcpy server / `screenrecord`), ms, before its first byte.
    pub stream_start_ms: f64,
    /// One scrcpy control message applied on the phone, ms.
    pub control_ms: f64,
}

/// The override keys [`TimingProfile::set`] knows, in table order.
pub const TIMING_KEYS: &[&str] = &[
    "shell_ms",
    "screencap_ms",
    "screencap_png_ms_per_mpx",
    "input_ms",
    "am_ms",
    "cmd_ms",
    "wm_ms",
    "settings_ms",
    "ime_ms",
    "dumpsys_ms",
    "pm_ms",
    "other_ms",
    "usb_mb_per_s",
    "stream_frame_latency_ms",
    "stream_start_ms",
    "control_ms",
];

/// The profile names [`TimingProfile::named`] knows.
pub const TIMING_PROFILES: &[&str] = &["instant", "real"];

impl Default for TimingProfile {
    /// [`TimingProfile::instant`]: tests stay fast.
    fn default() -> Self {
        Self::instant()
    }
}

impl TimingProfile {
    /// Everything free: the sim answers as fast as it computes (the default, for tests).
    pub fn instant() -> Self {
        Self {
            shell_ms: 0.0,
            screencap_ms: 0.0,
            screencap_png_ms_per_mpx: 0.0,
            input_ms: 0.0,
            am_ms: 0.0,
            cmd_ms: 0.0,
            wm_ms: 0.0,
            settings_ms: 0.0,
            ime_ms: 0.0,
            dumpsys_ms: 0.0,
            pm_ms: 0.0,
            other_ms: 0.0,
            usb_mb_per_s: 0.0,
            stream_frame_latency_ms: 0.0,
            stream_start_ms: 0.0,
            control_ms: 0.0,
        }
    }

    /// A mid-range phone on USB 2 (issue #12's published figures; see the module table).
    pub fn real() -> Self {
        Self {
            shell_ms: 10.0,
            screencap_ms: 250.0,
            screencap_png_ms_per_mpx: 480.0,
            input_ms: 230.0,
            am_ms: 250.0,
            cmd_ms: 60.0,
            wm_ms: 80.0,
            settings_ms: 80.0,
            ime_ms: 80.0,
            dumpsys_ms: 120.0,
            pm_ms: 300.0,
            other_ms: 5.0,
            usb_mb_per_s: 30.0,
            stream_frame_latency_ms: 50.0,
            stream_start_ms: 800.0,
            control_ms: 6.0,
        }
    }

    /// `instant` or `real`.
    ///
    /// Errors: [`SimError::Config`] naming the known profiles.
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "instant" => Ok(Self::instant()),
            "real" => Ok(Self::real()),
            other => Err(SimError::Config(format!(
                "unknown timing profile {other:?}: use one of {}",
                TIMING_PROFILES.join(", ")
            ))),
        }
    }

    /// True when nothing is charged.
    pub fn is_instant(&self) -> bool {
        *self == Self::instant()
    }

    /// Set one figure by its key (see [`TIMING_KEYS`]).
    ///
    /// Errors: [`SimError::Config`] for an unknown key (naming the known ones) or a negative /
    /// non-finite value.
    pub fn set(&mut self, key: &str, value: f64) -> Result<()> {
        if !value.is_finite() || value < 0.0 {
            return Err(SimError::Config(format!(
                "timing {key}={value}: the value must be a finite number ≥ 0"
            )));
        }
        let slot = match key {
            "shell_ms" => &mut self.shell_ms,
            "screencap_ms" => &mut self.screencap_ms,
            "screencap_png_ms_per_mpx" => &mut self.screencap_png_ms_per_mpx,
            "input_ms" => &mut self.input_ms,
            "am_ms" => &mut self.am_ms,
            "cmd_ms" => &mut self.cmd_ms,
            "wm_ms" => &mut self.wm_ms,
            "settings_ms" => &mut self.settings_ms,
            "ime_ms" => &mut self.ime_ms,
            "dumpsys_ms" => &mut self.dumpsys_ms,
            "pm_ms" => &mut self.pm_ms,
            "other_ms" => &mut self.other_ms,
            "usb_mb_per_s" => &mut self.usb_mb_per_s,
            "stream_frame_latency_ms" => &mut self.stream_frame_latency_ms,
            "stream_start_ms" => &mut self.stream_start_ms,
            "control_ms" => &mut self.control_ms,
            other => {
                return Err(SimError::Config(format!(
                    "unknown timing key {other:?}: use one of {}",
                    TIMING_KEYS.join(", ")
                )));
            }
        };
        *slot = value;
        Ok(())
    }

    /// Apply `KEY=VALUE[,KEY=VALUE…]` (e.g. `input_ms=180,screencap_png_ms_per_mpx=600`).
    ///
    /// Errors: [`SimError::Config`] for a malformed pair, an unknown key or a bad value.
    pub fn apply_overrides(&mut self, spec: &str) -> Result<()> {
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| {
                SimError::Config(format!(
                    "timing override {pair:?} is not KEY=VALUE (e.g. input_ms=180)"
                ))
            })?;
            let value: f64 = v.trim().parse().map_err(|_| {
                SimError::Config(format!("timing override {pair:?}: {v:?} is not a number"))
            })?;
            self.set(k.trim(), value)?;
        }
        Ok(())
    }

    /// Latency of one live-stream frame (capture on the phone → bytes on the host), for the
    /// scrcpy / screenrecord emulation.
    pub fn stream_frame_latency(&self) -> Duration {
        ms(self.stream_frame_latency_ms)
    }

    /// Starting a live stream (scrcpy server or `screenrecord`), before its first byte.
    pub fn stream_start(&self) -> Duration {
        ms(self.shell_ms + self.stream_start_ms)
    }

    /// One scrcpy control message applied on the phone.
    pub fn control(&self) -> Duration {
        ms(self.control_ms)
    }

    /// One `sync:` request (STAT/SEND/RECV/LIST/DONE) carrying `bytes` either way.
    pub fn sync_request(&self, bytes: usize) -> Duration {
        ms(self.shell_ms) + self.transfer(bytes)
    }

    /// Time to move `bytes` to the host at [`TimingProfile::usb_mb_per_s`].
    pub fn transfer(&self, bytes: usize) -> Duration {
        if self.usb_mb_per_s <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(bytes as f64 / (self.usb_mb_per_s * 1e6))
    }

    /// What a `framebuffer:` service costs before its bytes (round trip + capture).
    pub fn framebuffer(&self) -> Duration {
        ms(self.shell_ms + self.screencap_ms)
    }

    /// What running the command line `commands` (each command's words, as the shell splits
    /// them) costs on the phone before its output, for a frame of `frame_px` pixels (the
    /// transfer of the output is [`TimingProfile::transfer`], charged after).
    pub fn command_line(&self, commands: &[Vec<String>], frame_px: u64) -> Duration {
        let mut total = self.shell_ms;
        for words in commands {
            total += self.command(words, frame_px);
        }
        ms(total)
    }

    fn command(&self, words: &[String], frame_px: u64) -> f64 {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w.as_slice() {
            [] => 0.0,
            ["screencap", rest @ ..] => {
                let png = rest.contains(&"-p")
                    || rest
                        .iter()
                        .any(|a| a.ends_with(".png") && !a.starts_with('-'));
                self.screencap_ms
                    + if png {
                        self.screencap_png_ms_per_mpx * frame_px as f64 / 1e6
                    } else {
                        0.0
                    }
            }
            ["input", ..] | ["cmd", "input", ..] => self.input_ms,
            ["wm", ..] | ["cmd", "window", ..] => self.wm_ms,
            ["settings", ..] | ["cmd", "settings", ..] => self.settings_ms,
            ["ime", ..] | ["cmd", "input_method", ..] => self.ime_ms,
            ["cmd", ..] => self.cmd_ms,
            ["am", ..] => self.am_ms,
            ["dumpsys", ..] => self.dumpsys_ms,
            ["pm", ..] => self.pm_ms,
            _ => self.other_ms,
        }
    }
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        line.split(';')
            .map(|c| c.split_whitespace().map(str::to_owned).collect())
            .collect()
    }

    #[test]
    fn real_profile_matches_the_published_figures() {
        let t = TimingProfile::real();
        let px = 1080 * 2400;
        let png = t.command_line(&words("screencap -p"), px) + t.transfer(300_000);
        assert!(
            (1450..=1600).contains(&png.as_millis()),
            "screencap -p {png:?}"
        );
        let raw = t.command_line(&words("screencap"), px) + t.transfer(16 + 4 * px as usize);
        assert!((580..=630).contains(&raw.as_millis()), "raw {raw:?}");
        assert_eq!(t.command_line(&words("input tap 1 2"), px).as_millis(), 240);
        assert_eq!(t.command_line(&words("echo hi"), px).as_millis(), 15);
        assert_eq!(
            t.command_line(&words("wm size; wm density"), px)
                .as_millis(),
            170
        );
        assert_eq!(t.stream_frame_latency().as_millis(), 50);
    }

    #[test]
    fn instant_profile_charges_nothing() {
        let t = TimingProfile::instant();
        assert!(t.is_instant());
        assert_eq!(
            t.command_line(&words("screencap -p; input tap 1 2"), 1 << 22),
            Duration::ZERO
        );
        assert_eq!(t.transfer(10_000_000), Duration::ZERO);
    }

    #[test]
    fn overrides_change_one_figure_and_reject_unknown_keys() {
        let mut t = TimingProfile::real();
        t.apply_overrides("input_ms=180, screencap_png_ms_per_mpx=600")
            .unwrap();
        assert_eq!(t.input_ms, 180.0);
        assert_eq!(t.screencap_png_ms_per_mpx, 600.0);
        assert_eq!(t.shell_ms, 10.0);
        let e = t.apply_overrides("input=1").unwrap_err().to_string();
        assert!(
            e.contains("input_ms") && e.contains("unknown timing key"),
            "{e}"
        );
        assert!(t.apply_overrides("input_ms=-1").is_err());
        assert!(t.apply_overrides("input_ms").is_err());
        assert!(TimingProfile::named("fast").is_err());
        assert_eq!(TimingProfile::named("real").unwrap(), TimingProfile::real());
    }
}
