//! Runtime overhead per step (issue 4: target < 50 ms per step on 1080×2400 frames; memory per
//! run must not grow with the steps beyond the stored events). Harness = false; prints a table.
//!
//! `CARGO_TARGET_DIR=... cargo bench -p phoneagent-runtime --bench step_overhead [-- STEPS]`
//!
//! Setup: the virtual phone (1080×2400, ADB protocol on loopback) and the scripted model (HTTP on
//! loopback, answering at once) in this process, the real SQLite store in a temporary file. The
//! agent is driven one step at a time through `Agent::start_steps`; each step taps the shop icon
//! or goes Back (both change the screen, so every step is a full observe → plan → gate →
//! freshness → dispatch → verify turn). The device and the model are wrapped in timers, so
//!
//! `overhead = step wall time − time inside Device calls − time inside ModelClient calls`
//!
//! is what the runtime itself spends: pixel diffs, the screenshot resize/encode for the model,
//! prompt building, parsing, gating, hashing and storing screenshots, committing events.
//! `settle_ms` is 0 (it is a deliberate wait for the phone, not overhead). The sim renders and the
//! model server answers on the same cores, so device/model times include their CPU use.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failed run

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device, KeyCode, Readiness, Screenshot,
};
use phoneagent_llm::config::Profile;
use phoneagent_llm::{ChatClient, ChatRequest, ChatResponse, ClientConfig, ModelClient};
use phoneagent_protocol::{CoordinateSpace, DevicePoint, EventEnvelope, RunStatus, ScreenGeometry};
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    Agent, AgentConfig, AgentParts, FinishVerifyMode, ModelRoute, PolicyApprover, RunMeta,
    RunRecorder, StepOutcome,
};
use phoneagent_sim::{Faults, SimConfig, SimServer};
use phoneagent_store::Store;
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};
use tokio_util::sync::CancellationToken;

/// Nanoseconds spent inside wrapped calls.
#[derive(Default)]
struct Meter(AtomicU64);

impl Meter {
    fn add(&self, since: Instant) {
        self.0
            .fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
    fn take(&self) -> Duration {
        Duration::from_nanos(self.0.swap(0, Ordering::Relaxed))
    }
}

struct TimedDevice {
    inner: AdbDevice,
    meter: Arc<Meter>,
}

macro_rules! timed {
    ($self:ident, $e:expr) => {{
        let t0 = Instant::now();
        let r = $e.await;
        $self.meter.add(t0);
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
        timed!(self, self.inner.screenshot(c))
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
}

struct TimedModel {
    inner: ChatClient,
    meter: Arc<Meter>,
}

#[async_trait]
impl ModelClient for TimedModel {
    async fn chat(
        &self,
        req: ChatRequest,
        c: &CancellationToken,
    ) -> phoneagent_llm::Result<ChatResponse> {
        timed!(self, self.inner.chat(req, c))
    }
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// The real store recorder, with the time spent committing events counted.
struct TimedRecorder {
    inner: StoreRecorder,
    events: AtomicU64,
    event_ns: AtomicU64,
    shots: AtomicU64,
    shot_ns: AtomicU64,
}

impl RunRecorder for TimedRecorder {
    fn begin_run(&self, meta: &RunMeta) -> Result<(), String> {
        self.inner.begin_run(meta)
    }
    fn record(&self, event: &EventEnvelope) -> Result<(), String> {
        let t0 = Instant::now();
        let r = self.inner.record(event);
        self.event_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.events.fetch_add(1, Ordering::Relaxed);
        r
    }
    fn put_screenshot(&self, png: &[u8], w: u32, h: u32) -> Result<String, String> {
        let t0 = Instant::now();
        let r = self.inner.put_screenshot(png, w, h);
        self.shot_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.shots.fetch_add(1, Ordering::Relaxed);
        r
    }
    fn end_run(
        &self,
        run_id: &str,
        status: RunStatus,
        code: &str,
        summary: &serde_json::Value,
    ) -> Result<(), String> {
        self.inner.end_run(run_id, status, code, summary)
    }
}

/// (VmHWM, VmRSS) in KiB from /proc/self/status (Linux); zeros elsewhere.
fn memory_kib() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

fn main() {
    let steps: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(steps));
}

async fn bench(steps: u32) {
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let serial = sim.serials().into_iter().next().unwrap();
    let phone = sim.phone(&serial).unwrap();
    phone.set_faults(Faults {
        dialog_disabled: true,
        ..Faults::default()
    });
    // Alternate home → shop (tap) and shop → home (Back): every step changes the screen.
    let tap = r#"{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", screen_description=\"Home screen.\", reason=\"Open the shop.\")"}"#;
    let back = r#"{"content": "do(action=\"Back\", screen_description=\"Shop.\", reason=\"Back to the home screen.\")"}"#;
    let script: Vec<&str> = (0..steps)
        .map(|i| if i % 2 == 0 { tap } else { back })
        .collect();
    let model = ScriptedModel::start(ScriptedModelConfig {
        script: Script::parse_jsonl(&script.join("\n")).unwrap(),
        space: CoordinateSpace::Relative0999,
        sim: Some(SimTarget {
            port: sim.port(),
            serial: Some(serial.clone()),
        }),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    let device_meter = Arc::new(Meter::default());
    let model_meter = Arc::new(Meter::default());
    let addr = AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port())).unwrap();
    let device = TimedDevice {
        inner: AdbDevice::open(AdbServer::new(addr), &serial, AdbDeviceOptions::default())
            .await
            .unwrap(),
        meter: device_meter.clone(),
    };
    let mut profile = Profile::new(model.base_url(), "scripted-model");
    profile.coordinate_space = CoordinateSpace::Relative0999;
    let client = ChatClient::new(ClientConfig::new(model.base_url(), "scripted-model")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("bench.sqlite3")).unwrap();
    let recorder = Arc::new(TimedRecorder {
        inner: StoreRecorder::new(store.clone()),
        events: AtomicU64::new(0),
        event_ns: AtomicU64::new(0),
        shots: AtomicU64::new(0),
        shot_ns: AtomicU64::new(0),
    });
    let agent = Agent::new(
        AgentParts {
            device: Arc::new(device),
            actor: ModelRoute {
                client: Arc::new(TimedModel {
                    inner: client,
                    meter: model_meter.clone(),
                }),
                profile_name: "bench".into(),
                profile,
                fallback: None,
            },
            verifier: None,
            safety_reviewer: None,
            approver: Arc::new(PolicyApprover { approve: false }),
            recorder: recorder.clone(),
            calibration_cache: None,
        },
        AgentConfig {
            max_steps: steps + 1,
            settle_ms: 0,
            finish_verify: FinishVerifyMode::Off,
            max_duration: Duration::from_secs(3600),
            ..AgentConfig::default()
        },
    );
    let mut session = agent
        .start_steps("Open the shop and go back", CancellationToken::new())
        .unwrap();
    let (_, rss_start) = memory_kib();
    let mut overhead = Vec::new();
    let mut wall = Vec::new();
    let mut device_ms = Vec::new();
    let mut model_ms = Vec::new();
    let mut rss_at = Vec::new();
    let t_all = Instant::now();
    device_meter.take();
    model_meter.take();
    for i in 0..steps {
        let t0 = Instant::now();
        match session.step().await.unwrap() {
            StepOutcome::Continue(_) => {}
            StepOutcome::Finished(o) => panic!("run ended at step {}: {o:?}", i + 1),
        }
        let total = t0.elapsed();
        let d = device_meter.take();
        let m = model_meter.take();
        // The first two steps warm caches (glyphs, connections); keep them out of the stats.
        if i >= 2 {
            wall.push(total.as_secs_f64() * 1e3);
            device_ms.push(d.as_secs_f64() * 1e3);
            model_ms.push(m.as_secs_f64() * 1e3);
            overhead.push(total.saturating_sub(d + m).as_secs_f64() * 1e3);
        }
        if (i + 1) % (steps / 4).max(1) == 0 {
            rss_at.push((i + 1, memory_kib().1));
        }
    }
    let elapsed = t_all.elapsed();
    let outcome = session.cancel().await.unwrap();
    assert_eq!(outcome.status, RunStatus::Cancelled);
    let truth = phone.ground_truth();
    assert!(
        truth.touches.len() as u32 >= steps / 2,
        "every tap reached the phone"
    );
    let (hwm, rss_end) = memory_kib();
    let events = recorder.events.load(Ordering::Relaxed);
    let event_s = recorder.event_ns.load(Ordering::Relaxed) as f64 / 1e9;
    let shots = recorder.shots.load(Ordering::Relaxed);
    let shot_s = recorder.shot_ns.load(Ordering::Relaxed) as f64 / 1e9;
    let db_bytes = std::fs::metadata(dir.path().join("bench.sqlite3"))
        .map(|m| m.len())
        .unwrap_or(0);

    for v in [&mut overhead, &mut wall, &mut device_ms, &mut model_ms] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "\nRuntime step overhead — {} measured steps (of {steps}) on 1080×2400 frames, settle_ms = 0\n",
        overhead.len()
    );
    println!("| per step (ms)                          |    p50 |    p95 |    max |");
    println!("|----------------------------------------|-------:|-------:|-------:|");
    for (name, v) in [
        ("runtime overhead (wall − device − model)", &overhead),
        ("step wall time", &wall),
        ("inside Device calls (ADB + sim)", &device_ms),
        ("inside ModelClient calls (HTTP)", &model_ms),
    ] {
        println!(
            "| {name:<38} | {:>6.1} | {:>6.1} | {:>6.1} |",
            pct(v, 0.5),
            pct(v, 0.95),
            v[v.len() - 1]
        );
    }
    println!();
    println!("| store                                  |        value |");
    println!("|----------------------------------------|-------------:|");
    println!("| events committed                       | {events:>12} |");
    println!(
        "| events/s (commit throughput)           | {:>12.0} |",
        events as f64 / event_s.max(1e-9)
    );
    println!(
        "| events/s over the whole run            | {:>12.0} |",
        events as f64 / elapsed.as_secs_f64()
    );
    println!(
        "| screenshots stored (ms each, mean)     | {:>5} ({:>4.1}) |",
        shots,
        shot_s * 1e3 / shots.max(1) as f64
    );
    println!(
        "| database file, MiB                     | {:>12.1} |",
        db_bytes as f64 / 1048576.0
    );
    println!();
    println!("| memory (whole process: sim + model server + agent) |      MiB |");
    println!("|----------------------------------------------------|---------:|");
    println!(
        "| peak RSS (VmHWM)                                   | {:>8.1} |",
        hwm as f64 / 1024.0
    );
    println!(
        "| RSS at the first step                              | {:>8.1} |",
        rss_start as f64 / 1024.0
    );
    for (step, rss) in &rss_at {
        println!(
            "| RSS after step {step:<5}                              | {:>8.1} |",
            *rss as f64 / 1024.0
        );
    }
    println!(
        "| RSS at the end                                     | {:>8.1} |",
        rss_end as f64 / 1024.0
    );
    let p50 = pct(&overhead, 0.5);
    println!(
        "\ntarget: < 50 ms per step overhead → {} (p50 {p50:.1} ms)",
        if p50 < 50.0 { "met" } else { "NOT met" }
    );
    model.shutdown().await;
    sim.shutdown().await;
}
