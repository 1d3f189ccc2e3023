//! `phoneagent sim serve|state|fault|reset|model` (SPEC V1-V5): run the virtual phone over the ADB
//! protocol, read/steer its ground truth from another process, and serve the scripted model
//! (the same server as the testkit's `scripted-model` binary, so a user or a test needs only
//! the `phoneagent` binary to run the whole setup as separate processes).

use anyhow::Context as _;
use phoneagent_sim::{
    AdbdConfig, Faults, KeyPrompt, SimConfig, SimDeviceConfig, SimServer, TimingProfile, client,
};

use super::Global;

/// Virtual phone subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Serve virtual phones over the ADB protocol on 127.0.0.1:PORT until Ctrl-C/SIGTERM.
    ///
    /// Prints one line with the serial(s) and the address, e.g.
    /// `virtual phone virtual-phone-1 listening on 127.0.0.1:15037 (adb -P 15037 devices)`.
    Serve {
        /// Port (5037, the real adb server's, is avoided by default; 0 picks a free one).
        #[arg(long, default_value_t = 15037)]
        port: u16,
        /// Number of devices (serials virtual-phone-1 … virtual-phone-N).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
        devices: u16,
        /// Phones without ADB Keyboard installed (only ASCII `input text` works).
        #[arg(long)]
        no_adb_keyboard: bool,
        /// Starting scenario (home, shop, product, cart, checkout, payment, injection, mail,
        /// mail_compose, settings, search, login, notice).
        #[arg(long, default_value = "home")]
        scenario: String,
        /// Let `adb kill-server` (host:kill) stop the virtual phone.
        #[arg(long)]
        allow_kill: bool,
        /// Also answer as the first phone's adbd (the device-side ADB protocol a phone speaks
        /// over USB or after `adb tcpip 5555`) on 127.0.0.1:PORT (0 picks a free one), for
        /// `phoneagent --direct 127.0.0.1:PORT …` or `adb connect 127.0.0.1:PORT`.
        #[arg(long, value_name = "PORT")]
        adbd_port: Option<u16>,
        /// With --adbd-port: dismiss the "Allow USB debugging?" prompt for unknown keys (the
        /// host stays unauthorized) instead of accepting it.
        #[arg(long, requires = "adbd_port")]
        adbd_refuse: bool,
        /// What each command costs on the phone (SPEC V6): `instant` (default, for tests) or
        /// `real` (a mid-range phone on USB 2: `screencap -p` ≈1.5 s at 1080×2400, `input`
        /// ≈230 ms, …; the table is in crates/phoneagent-sim/README.md).
        #[arg(long, default_value = "instant", value_parser = ["instant", "real"])]
        timing: String,
        /// Change figures of the timing profile: KEY=VALUE[,KEY=VALUE…], e.g.
        /// `input_ms=180,screencap_png_ms_per_mpx=600` (keys: see the README table).
        #[arg(long, value_name = "KEY=VALUE,…")]
        timing_set: Option<String>,
    },
    /// Print the ground truth of a running virtual phone as JSON.
    State {
        /// Port the virtual phone listens on.
        #[arg(long, default_value_t = 15037)]
        port: u16,
        /// Device serial (needed when the server has several devices).
        #[arg(long)]
        serial: Option<String>,
    },
    /// Replace the injected faults of a running virtual phone (JSON, e.g. '{"black_frames":true}').
    Fault {
        /// Port the virtual phone listens on.
        #[arg(long, default_value_t = 15037)]
        port: u16,
        /// Device serial (needed when the server has several devices).
        #[arg(long)]
        serial: Option<String>,
        /// Faults as JSON; fields left out are off ('{}' clears all).
        json: String,
    },
    /// Reset a running virtual phone to a scenario.
    Reset {
        /// Port the virtual phone listens on.
        #[arg(long, default_value_t = 15037)]
        port: u16,
        /// Device serial (needed when the server has several devices).
        #[arg(long)]
        serial: Option<String>,
        /// Scenario name.
        #[arg(default_value = "home")]
        scenario: String,
    },
    /// Serve the scripted OpenAI-compatible model on 127.0.0.1 until Ctrl-C/SIGTERM (for tests and
    /// demos: it answers from a JSONL script or as a calibration oracle, never as a real model).
    ///
    /// Prints one line `scripted model listening on http://127.0.0.1:PORT/v1`.
    Model(phoneagent_testkit::serve::ServeArgs),
}

/// Run a sim subcommand; returns the exit code.
pub async fn run(_g: &Global, c: SimCommand) -> anyhow::Result<u8> {
    match c {
        SimCommand::Serve {
            port,
            devices,
            no_adb_keyboard,
            scenario,
            allow_kill,
            adbd_port,
            adbd_refuse,
            timing,
            timing_set,
        } => {
            let mut profile = TimingProfile::named(&timing)?;
            if let Some(spec) = &timing_set {
                profile.apply_overrides(spec)?;
            }
            let config = SimConfig {
                devices: (1..=devices)
                    .map(|i| SimDeviceConfig {
                        adb_keyboard: !no_adb_keyboard,
                        scenario: scenario.clone(),
                        timing: profile.clone(),
                        ..SimDeviceConfig::new(format!("virtual-phone-{i}"))
                    })
                    .collect(),
                allow_kill,
            };
            let sim = SimServer::start(config, port).await?;
            outln!(
                "virtual phone {} listening on {} (adb -P {} devices){}",
                sim.serials().join(","),
                sim.addr(),
                sim.port(),
                if profile.is_instant() {
                    String::new()
                } else {
                    format!(" with {timing} phone timing")
                }
            );
            if let Some(p) = adbd_port {
                let adbd = sim
                    .start_adbd(
                        AdbdConfig {
                            on_unknown_key: if adbd_refuse {
                                KeyPrompt::Refuse
                            } else {
                                KeyPrompt::Accept
                            },
                            ..AdbdConfig::default()
                        },
                        p,
                    )
                    .await?;
                outln!(
                    "virtual phone {} adbd (direct mode) on {} (phoneagent --direct {} devices; adb connect {})",
                    adbd.serial(),
                    adbd.addr(),
                    adbd.addr(),
                    adbd.addr()
                );
            }
            wait_for_stop(&sim).await?;
            sim.shutdown().await;
            Ok(0)
        }
        SimCommand::State { port, serial } => {
            let gt = client::fetch_state(port, serial.as_deref()).await?;
            outln!("{}", serde_json::to_string_pretty(&gt)?);
            Ok(0)
        }
        SimCommand::Fault { port, serial, json } => {
            let faults: Faults = serde_json::from_str(&json).with_context(|| {
                format!(
                    "faults must be JSON like '{{\"black_frames\":true,\"rotation\":1}}' with known fault names (got {json:?})"
                )
            })?;
            client::set_faults(port, serial.as_deref(), &faults).await?;
            Ok(0)
        }
        SimCommand::Reset {
            port,
            serial,
            scenario,
        } => {
            client::reset(port, serial.as_deref(), &scenario).await?;
            Ok(0)
        }
        SimCommand::Model(args) => {
            let model = phoneagent_testkit::ScriptedModel::start(args.into_config()?).await?;
            outln!("scripted model listening on {}", model.base_url());
            wait_for_signal().await?;
            model.shutdown().await;
            Ok(0)
        }
    }
}

/// Wait for Ctrl-C, SIGTERM or SIGHUP.
async fn wait_for_signal() -> anyhow::Result<()> {
    super::out::stop_signal().await;
    Ok(())
}

async fn wait_for_stop(sim: &SimServer) -> anyhow::Result<()> {
    tokio::select! {
        _ = super::out::stop_signal() => {}
        _ = sim.stopped() => {}
    }
    Ok(())
}
