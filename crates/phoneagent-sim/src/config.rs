//! Configuration of a virtual phone server and its devices.

use serde::{Deserialize, Serialize};

use crate::timing::TimingProfile;

/// State a device is listed with in `host:devices` (SPEC D5: the device layer must skip
/// `unauthorized` and `offline` devices with the fix to show the user).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimDeviceState {
    /// A usable device (`device`).
    #[default]
    Device,
    /// Listed as `unauthorized`: every transport to it fails like a phone that has not accepted
    /// the RSA key prompt.
    Unauthorized,
    /// Listed as `offline`: every transport to it fails with `device offline`.
    Offline,
}

impl SimDeviceState {
    /// The word adb prints for this state.
    pub fn as_adb_str(self) -> &'static str {
        match self {
            Self::Device => "device",
            Self::Unauthorized => "unauthorized",
            Self::Offline => "offline",
        }
    }
}

/// One virtual device behind the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimDeviceConfig {
    /// ADB serial (default `virtual-phone-1`).
    pub serial: String,
    /// Natural (portrait) width in px (default 1080).
    pub width: u32,
    /// Natural (portrait) height in px (default 2400).
    pub height: u32,
    /// Density in dpi (default 420).
    pub density: u32,
    /// Whether ADB Keyboard (`com.android.adbkeyboard/.AdbIME`) is installed (default true).
    pub adb_keyboard: bool,
    /// How the device is listed (default `device`).
    pub state: SimDeviceState,
    /// Starting scenario, see [`crate::SCENARIOS`] (default `home`).
    pub scenario: String,
    /// What each command costs on the phone (SPEC V6; default [`TimingProfile::instant`];
    /// [`TimingProfile::real`] for a mid-range phone on USB 2).
    #[serde(default)]
    pub timing: TimingProfile,
}

impl SimDeviceConfig {
    /// A 1080x2400, 420 dpi device with ADB Keyboard installed, on the home screen.
    pub fn new(serial: impl Into<String>) -> Self {
        Self {
            serial: serial.into(),
            width: 1080,
            height: 2400,
            density: 420,
            adb_keyboard: true,
            state: SimDeviceState::Device,
            scenario: "home".to_owned(),
            timing: TimingProfile::instant(),
        }
    }
}

impl Default for SimDeviceConfig {
    fn default() -> Self {
        Self::new("virtual-phone-1")
    }
}

/// Configuration of a [`crate::SimServer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// The devices, listed in this order by `host:devices`.
    pub devices: Vec<SimDeviceConfig>,
    /// Whether `host:kill` stops the server (default false: answered OKAY and ignored, so a
    /// stray `adb kill-server` cannot take the virtual phone down under a test).
    pub allow_kill: bool,
}

impl SimConfig {
    /// `n` default devices with serials `virtual-phone-1` … `virtual-phone-N`.
    pub fn with_devices(n: usize) -> Self {
        Self {
            devices: (1..=n)
                .map(|i| SimDeviceConfig::new(format!("virtual-phone-{i}")))
                .collect(),
            allow_kill: false,
        }
    }
}

impl SimConfig {
    /// Give every device the timing profile `t` (SPEC V6).
    pub fn with_timing(mut self, t: &TimingProfile) -> Self {
        for d in &mut self.devices {
            d.timing = t.clone();
        }
        self
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self::with_devices(1)
    }
}
