//! Integration tests of the device layer: contract tests against the virtual phone over the
//! real ADB protocol (SPEC D1-D7), and the client against Debian's real adb server.

// Test helpers may panic: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod direct;
mod real_adb;
mod sim_contract;
mod stream;

use phoneagent_device::{AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr};
use phoneagent_sim::{SimConfig, SimServer};
use std::time::Duration;

/// Options with short limits so fault tests stay fast.
pub fn fast_opts() -> AdbDeviceOptions {
    AdbDeviceOptions {
        command_timeout: Duration::from_secs(5),
        screenshot_timeout: Duration::from_secs(5),
        screenshot_attempts: 3,
        ime_settle: Duration::ZERO,
        ..AdbDeviceOptions::default()
    }
}

/// A virtual phone server on an ephemeral port and a client of it.
pub async fn start(config: SimConfig) -> (SimServer, AdbServer) {
    let sim = SimServer::start(config, 0).await.expect("sim starts");
    let server = AdbServer::new(AdbServerAddr {
        host: "127.0.0.1".into(),
        port: sim.port(),
    });
    (sim, server)
}

/// The default one-device sim and the opened device.
pub async fn one_phone() -> (SimServer, AdbDevice) {
    let (sim, server) = start(SimConfig::default()).await;
    let dev = AdbDevice::open(server, "virtual-phone-1", fast_opts())
        .await
        .expect("device opens");
    (sim, dev)
}

/// Poll `f` until it is true or 5 s pass.
pub async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..250 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}
