//! # phoneagent-sim
//!
//! PhoneAgent's virtual Android phone (SPEC V1–V4): deterministic apps drawn with a real CJK
//! font, ground truth for tests, fault injection, and an **ADB server-protocol endpoint** on
//! loopback that both PhoneAgent's device layer and Debian's stock `adb` client drive.
//!
//! ```no_run
//! # async fn demo() -> Result<(), phoneagent_sim::SimError> {
//! use phoneagent_sim::{SimConfig, SimServer};
//! let sim = SimServer::start(SimConfig::default(), 0).await?;
//! // adb -P {sim.port()} -s virtual-phone-1 shell input tap 540 1200
//! let phone = sim.phone("virtual-phone-1").expect("configured");
//! println!("{}", phone.ground_truth().current_screen);
//! sim.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! See `README.md` of this crate for the apps, scenarios, faults and services, the
//! requirements for it (D7, V1–V7) in the repository's `docs/requirements.md`, and the
//! tests under `tests/sim/` (`protocol.rs`, `stock_adb.rs`) for the exact protocol behaviour.

mod adb;
mod adbd;
mod apps;
mod apps_more;
pub mod client;
mod config;
mod devfs;
mod error;
mod h264;
mod phone;
mod procout;
mod render;
mod scrcpy;
mod screenrecord;
mod screens;
mod screens_more;
mod screens_more2;
mod server;
mod shell;
mod streams;
mod sync;
mod timing;
mod truth;
mod ui;
mod videoenc;

pub use adbd::{AdbdConfig, AdbdHandle, KeyPrompt};
pub use apps::{INJECTION_TEXT_EN, INJECTION_TEXT_ZH, SCENARIOS};
pub use config::{SimConfig, SimDeviceConfig, SimDeviceState};
pub use error::{Result, SimError};
pub use phone::{ADB_IME, LATIN_IME};
pub use render::font_path;
pub use scrcpy::SCRCPY_SERVER_VERSION;
pub use server::{SimPhoneHandle, SimServer};
pub use timing::{TIMING_KEYS, TIMING_PROFILES, TimingProfile};
pub use truth::{
    ChatMessage, DEFAULT_DIALOG_DELAY_MS, Element, Faults, GroundTruth, Mail, Order, OrderLine,
    SearchTruth, Subscription, Touch, TypedText, WalletTransfer,
};
