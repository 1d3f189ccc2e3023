//! Device time per step of the demo task, per capture path and timing profile (issue #12
//! "Done when"; SPEC V6, D3, D8). Harness = false; prints a Markdown table.
//!
//! `CARGO_TARGET_DIR=... cargo bench -p phoneagent-runtime --bench device_time [-- OPTIONS]`
//!
//! Options: `--paths png,raw` (capture paths; a path this build or device cannot serve prints
//! `n/a`), `--profiles instant,real` (the virtual phone's timing profiles, see
//! `phoneagent_sim::TimingProfile`), `--scenario buy` (a demo scenario of
//! `phoneagent_testkit::demo`), `--before` (also a row with today's-code behaviour: geometry
//! read before every screenshot, no reuse of the verification frame).
//!
//! Setup per row: the virtual phone with the profile (ADB protocol on loopback), the scripted
//! model of the demo scenario (answers at once), the runtime with its default settle (on a
//! stream: the action's result, then 200 ms without change, at most 1.5 s; on `screencap`: 350
//! ms fixed) and a device wrapped in a timer. Capture paths: `png`, `raw` (`screencap`),
//! `scrcpy` (the virtual phone's scrcpy 3.x server, a stand-in jar pushed, control-socket
//! input), `screenrecord` (its H.264 stream, `input` for input). Columns: steps of the run;
//! wall ms per step; device ms per step (time inside `Device` calls, settle included); the
//! settle's share; device ms per step without the first device call (which starts a stream:
//! push, server start, first frame); that first call; device services per step
//! (`shell:`/`exec:` opened on the phone, from its ground truth); steps/min.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failed run

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device, KeyCode, Readiness, Screenshot,
    ScreenshotMode, Settle,
};
use phoneagent_protocol::{AccessMode, CoordinateSpace, DevicePoint, ScreenGeometry};
use phoneagent_runtime::{
    Agent, AgentConfig, AgentParts, ModelRoute, NullRecorder, PolicyApprover,
};
use phoneagent_sim::{SimConfig, SimServer, TimingProfile};
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};
use tokio_util::sync::CancellationToken;

/// Nanoseconds spent inside wrapped calls.
#[derive(Default)]
struct Meter {
    all: AtomicU64,
    settle: AtomicU64,
    /// The first `paths` or screenshot call (starts the stream in the stream paths: push +
    /// server start + first frame).
    first: AtomicU64,
}

struct TimedDevice {
    inner: AdbDevice,
    meter: Arc<Meter>,
}

macro_rules! timed {
    ($self:ident, $e:expr) => {{
        let t0 = Instant::now();
        let r = $e.await;
        $self
            .meter
            .all
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }};
}

#[async_trait]
impl Device for TimedDevice {
    fn serial(&self) -> &str {
        self.inner.serial()
    }
    async fn geometry(&self, c: &CancellationToken) -> phoneagent_device::Result<ScreenGeometry> {
        timed!(self, self.inner.geometry(c))
    }
    async fn screenshot(&self, c: &CancellationToken) -> phoneagent_device::Result<Screenshot> {
        let t0 = Instant::now();
        let r = timed!(self, self.inner.screenshot(c));
        let _ = self.meter.first.compare_exchange(
            0,
            t0.elapsed().as_nanos() as u64,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        r
    }
    async fn paths(&self) -> Option<(String, String, Option<String>)> {
        // The run asks first, before its first screenshot: in a stream path this starts the
        // stream (push, server start, first frame), counted as the first observation.
        let t0 = Instant::now();
        let r = timed!(self, self.inner.paths());
        let _ = self.meter.first.compare_exchange(
            0,
            t0.elapsed().as_nanos() as u64,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        r
    }
    async fn tap(&self, p: DevicePoint, c: &CancellationToken) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.tap(p, c))
    }
    async fn double_tap(
        &self,
        p: DevicePoint,
        c: &CancellationToken,
    ) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.double_tap(p, c))
    }
    async fn long_press(
        &self,
        p: DevicePoint,
        ms: u32,
        c: &CancellationToken,
    ) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.long_press(p, ms, c))
    }
    async fn swipe(
        &self,
        a: DevicePoint,
        b: DevicePoint,
        ms: u32,
        c: &CancellationToken,
    ) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.swipe(a, b, ms, c))
    }
    async fn key(&self, k: KeyCode, c: &CancellationToken) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.key(k, c))
    }
    async fn type_text(&self, t: &str, c: &CancellationToken) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.type_text(t, c))
    }
    async fn restore_ime(&self) -> phoneagent_device::Result<()> {
        timed!(self, self.inner.restore_ime())
    }
    async fn readiness(&self, c: &CancellationToken) -> phoneagent_device::Result<Readiness> {
        timed!(self, self.inner.readiness(c))
    }
    async fn settle(
        &self,
        how: Settle,
        c: &CancellationToken,
    ) -> phoneagent_device::Result<Option<Screenshot>> {
        let t0 = Instant::now();
        let r = timed!(self, self.inner.settle(how, c));
        self.meter
            .settle
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
}

/// A capture path by name; `None` when this build has no such path.
fn mode(path: &str) -> Option<ScreenshotMode> {
    match path {
        "png" => Some(ScreenshotMode::Png),
        "raw" => Some(ScreenshotMode::Raw),
        "scrcpy" => Some(ScreenshotMode::Scrcpy),
        "screenrecord" => Some(ScreenshotMode::Screenrecord),
        _ => None,
    }
}

struct Row {
    profile: String,
    path: String,
    result: Option<Measured>,
}

struct Measured {
    status: String,
    steps: u32,
    wall_ms: f64,
    device_ms: f64,
    settle_ms: f64,
    services: f64,
    /// The first screenshot, ms (stream start included).
    first_ms: f64,
    /// Device ms per step without the first screenshot (the stream's one-time start).
    steady_ms: f64,
}

async fn measure(
    scenario: &phoneagent_testkit::demo::DemoScenario,
    profile: &TimingProfile,
    mode: ScreenshotMode,
    before: bool,
) -> Measured {
    let sim = SimServer::start(SimConfig::default().with_timing(profile), 0)
        .await
        .unwrap();
    let serial = sim.serials().into_iter().next().unwrap();
    let phone = sim.phone(&serial).unwrap();
    phone.reset(scenario.start_screen).unwrap();
    let model = ScriptedModel::start(ScriptedModelConfig {
        script: Script::parse_jsonl(scenario.script).unwrap(),
        space: CoordinateSpace::Relative0999,
        sim: Some(SimTarget {
            port: sim.port(),
            serial: Some(serial.clone()),
        }),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    let addr = AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port())).unwrap();
    // The virtual phone runs its own scrcpy server for whatever jar is pushed.
    let jar = std::env::temp_dir().join(format!(
        "phoneagent-bench-scrcpy-server-{}",
        std::process::id()
    ));
    std::fs::write(&jar, b"PK\x03\x04 stand-in scrcpy-server").unwrap();
    let opts = AdbDeviceOptions {
        screenshot_mode: mode,
        scrcpy_server: Some(jar),
        geometry_max_age: if before {
            Duration::ZERO
        } else {
            AdbDeviceOptions::default().geometry_max_age
        },
        ..AdbDeviceOptions::default()
    };
    let meter = Arc::new(Meter::default());
    let device = TimedDevice {
        inner: AdbDevice::open(AdbServer::new(addr), &serial, opts)
            .await
            .unwrap(),
        meter: meter.clone(),
    };
    let route = |role: &str| {
        ModelRoute::unkeyed(
            &model.base_url(),
            "scripted-model",
            CoordinateSpace::Relative0999,
            format!("bench-{role}"),
        )
        .unwrap()
    };
    let agent = Agent::new(
        AgentParts {
            device: Arc::new(device),
            actor: route("actor"),
            verifier: Some(route("verifier")),
            safety_reviewer: None,
            approver: Arc::new(PolicyApprover { approve: false }),
            recorder: Arc::new(NullRecorder),
            calibration_cache: None,
        },
        AgentConfig {
            mode: scenario.mode,
            max_steps: 20,
            demo: true,
            reuse_verify_frame: !before && AgentConfig::default().reuse_verify_frame,
            ..AgentConfig::default()
        },
    );
    let services0 = phone.ground_truth().shell_commands;
    let t0 = Instant::now();
    let outcome = agent
        .run(scenario.task, CancellationToken::new())
        .await
        .unwrap();
    let wall = t0.elapsed();
    let services = phone.ground_truth().shell_commands - services0;
    let steps = outcome.steps.max(1);
    let per = |ns: u64| ns as f64 / 1e6 / f64::from(steps);
    let m = Measured {
        status: format!("{:?}", outcome.status),
        steps: outcome.steps,
        wall_ms: wall.as_secs_f64() * 1e3 / f64::from(steps),
        device_ms: per(meter.all.load(Ordering::Relaxed)),
        settle_ms: per(meter.settle.load(Ordering::Relaxed)),
        services: services as f64 / f64::from(steps),
        first_ms: meter.first.load(Ordering::Relaxed) as f64 / 1e6,
        steady_ms: per(meter.all.load(Ordering::Relaxed) - meter.first.load(Ordering::Relaxed)),
    };
    drop(agent);
    model.shutdown().await;
    sim.shutdown().await;
    m
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let paths = arg(&args, "--paths").unwrap_or_else(|| "png,raw,scrcpy,screenrecord".into());
    let profiles = arg(&args, "--profiles").unwrap_or_else(|| "instant,real".into());
    let scenario_name = arg(&args, "--scenario").unwrap_or_else(|| "buy".into());
    let before = args.iter().any(|a| a == "--before");
    let scenario = phoneagent_testkit::demo::find(&scenario_name, Some(AccessMode::Wary))
        .or_else(|| phoneagent_testkit::demo::find(&scenario_name, None))
        .unwrap_or_else(|| panic!("no demo scenario {scenario_name:?}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for profile_name in profiles.split(',') {
        let profile = TimingProfile::named(profile_name).unwrap();
        let mut variants: Vec<(String, Option<ScreenshotMode>, bool)> = paths
            .split(',')
            .map(|p| (p.to_owned(), mode(p), false))
            .collect();
        if before {
            variants.insert(
                0,
                ("png (before #12)".into(), Some(ScreenshotMode::Png), true),
            );
        }
        for (path, m, old) in variants {
            let result = m.map(|m| rt.block_on(measure(scenario, &profile, m, old)));
            rows.push(Row {
                profile: profile_name.to_owned(),
                path,
                result,
            });
        }
    }
    println!(
        "\nDemo task `{}` ({} mode), instant scripted model, default settle (stream: still for 200 ms, max 1.5 s; screencap paths: 350 ms fixed)\n",
        scenario.name, scenario.mode
    );
    println!(
        "| profile | capture | status | steps | wall ms/step | device ms/step | of which settle | device ms/step after the start | start ms (first call: stream start) | device services/step | steps/min |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        match r.result {
            Some(m) => println!(
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} |",
                r.profile,
                r.path,
                m.status,
                m.steps,
                m.wall_ms,
                m.device_ms,
                m.settle_ms,
                m.steady_ms,
                m.first_ms,
                m.services,
                60_000.0 / m.wall_ms
            ),
            None => println!("| {} | {} | n/a | | | | | | | | |", r.profile, r.path),
        }
    }
}
