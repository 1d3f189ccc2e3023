//! Runtime overhead per step (issue 4: target < 50 ms per step on 1080×2400 frames; memory per
//! run must not grow with the steps beyond the stored events). Harness = false; prints tables.
//!
//! `CARGO_TARGET_DIR=... cargo bench -p phoneagent-runtime --bench step_overhead [-- STEPS]`
//!
//! Setup: the virtual phone (1080×2400, ADB protocol on loopback) and the scripted model (HTTP on
//! loopback, answering at once) in this process, the real SQLite store in a temporary file. The
//! agent is driven one step at a time through `Agent::start_steps`; each step taps the shop icon
//! or goes Back (both change the screen, so every step is a full observe → plan → gate →
//! freshness → dispatch → verify turn). The device and the model are wrapped in timers, and
//!
//! `overhead = step wall time − time inside Device calls − time inside ModelClient calls
//!             + host CPU inside those calls (PNG decode of each screenshot, request JSON encode)`
//!
//! is what the runtime itself spends on the step's critical path: PNG decode, pixel diffs, the
//! screenshot resize/encode for the model, prompt building, parsing, gating, hashing and storing
//! screenshots, committing events. The PNG decode runs inside `Device::screenshot` and the JSON
//! encode inside `ModelClient::chat`, so they are measured by their `phoneagent::phase` spans
//! and added back (see `phoneagent_runtime::PHASE_TARGET`); the per-phase table sums each phase's
//! span busy time per step. Work that overlaps device or model waiting is not on the critical
//! path and only shows in the phase table (the model image of the planning frame is prepared on
//! a blocking thread while the capture asks the device for its geometry, so the phases can add
//! up to more than the overhead: the `rest` row is then negative). `settle_ms` is 0 (a deliberate wait for the phone,
//! not overhead). The sim renders and the model server answers on the same cores, so device and
//! model times include their CPU use.
//!
//! Memory: a counting global allocator (`cap`) gives the live heap bytes of the whole process
//! after every 10th step, once the step's background image job is done (the scripted model's
//! request log is cleared after each step so the test double's own record does not count; the
//! step after a sample is left out of the timings). The table reports the heap and RSS at the
//! first sample from step N = STEPS/3 on and at 3N = STEPS, and the least-squares growth per
//! step over those samples. With no
//! input-token budget (the default) the planner keeps the whole task's turn history (R6);
//! `INPUT_TOKEN_BUDGET=N` in the environment sets one, to see what part of the growth that is.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failed run

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[global_allocator]
static HEAP: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

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

/// Busy time per `phoneagent::phase` span name, summed since the last [`Phases::take`].
#[derive(Default, Clone)]
struct Phases(Arc<Mutex<BTreeMap<&'static str, Duration>>>);

impl Phases {
    fn take(&self) -> BTreeMap<&'static str, Duration> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Start time of the current entry of a phase span.
struct Entered(Instant);

impl<S> Layer<S> for Phases
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_enter(&self, id: &tracing::span::Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().replace(Entered(Instant::now()));
        }
    }
    fn on_exit(&self, id: &tracing::span::Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(Entered(t0)) = span.extensions_mut().remove::<Entered>()
        {
            *self
                .0
                .lock()
                .unwrap()
                .entry(span.metadata().name())
                .or_default() += t0.elapsed();
        }
    }
}

/// Phases in table order: (span name, label, nested in another phase, host CPU inside a
/// Device/ModelClient call).
const PHASES: &[(&str, &str, bool, bool)] = &[
    (
        "png_decode",
        "PNG decode + blank check (in Device)",
        false,
        true,
    ),
    (
        "store_screenshot",
        "hash + store screenshots (SQLite)",
        false,
        false,
    ),
    (
        "screen_change_diff",
        "screen-change diff (screen_seq)",
        false,
        false,
    ),
    ("freshness_diff", "freshness diffs (R3)", false, false),
    ("verify_diff", "verification diff (R4)", false, false),
    ("prepare_image", "model image (M6)", false, false),
    ("image_resize", "  of which resize (Lanczos3)", true, false),
    ("image_encode", "  of which JPEG encode", true, false),
    ("data_url", "  of which base64 data URL", true, false),
    ("build_request", "prompt + request build", false, false),
    (
        "request_encode",
        "request JSON encode (in ModelClient)",
        false,
        true,
    ),
    ("parse_response", "parse the answer", false, false),
    ("safety_gate", "safety gate", false, false),
    (
        "event_commit",
        "event commits (SQLite) + broadcast",
        false,
        false,
    ),
];

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

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Least-squares slope of `ys` over `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let (mx, my) = (mean(xs), mean(ys));
    let num: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}

/// Memory is sampled after every this many steps.
const MEMORY_EVERY: u32 = 10;

fn main() {
    let steps: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(150)
        .max(60);
    let phases = Phases::default();
    let filter =
        tracing_subscriber::filter::filter_fn(|m| m.target() == phoneagent_runtime::PHASE_TARGET);
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(phases.clone().with_filter(filter)),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(steps, phases));
}

async fn bench(steps: u32, phases: Phases) {
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
            // `INPUT_TOKEN_BUDGET=N` bounds the history the planner keeps (R6) to compare.
            input_token_budget: std::env::var("INPUT_TOKEN_BUDGET")
                .ok()
                .and_then(|v| v.parse().ok()),
            ..AgentConfig::default()
        },
    );
    let mut session = agent
        .start_steps("Open the shop and go back", CancellationToken::new())
        .unwrap();
    let mut overhead = Vec::new();
    let mut overhead_excl = Vec::new();
    let mut wall = Vec::new();
    let mut device_ms = Vec::new();
    let mut model_ms = Vec::new();
    let mut per_phase: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    // (step, live heap bytes, RSS KiB) after every MEMORY_EVERY-th step.
    let mut mem: Vec<(u32, usize, u64)> = Vec::new();
    let mut skip_timing = false;
    let t_all = Instant::now();
    device_meter.take();
    model_meter.take();
    phases.take();
    for i in 0..steps {
        let t0 = Instant::now();
        match session.step().await.unwrap() {
            StepOutcome::Continue(_) => {}
            StepOutcome::Finished(o) => panic!("run ended at step {}: {o:?}", i + 1),
        }
        let total = t0.elapsed();
        let d = device_meter.take();
        let m = model_meter.take();
        let ph = phases.take();
        // The test double's request log (images included) is not the agent's memory.
        model.clear_requests();
        let after_sample = std::mem::take(&mut skip_timing);
        if (i + 1) % MEMORY_EVERY == 0 {
            // Let the background image job of this step's last frame finish so its buffers do
            // not make the sample noisy; the next step starts with that image ready, so it is
            // left out of the timings.
            tokio::time::sleep(Duration::from_millis(150)).await;
            mem.push((i + 1, HEAP.allocated(), memory_kib().1));
            skip_timing = true;
        }
        // The first two steps warm caches (glyphs, connections); keep them out of the stats.
        if i < 2 || after_sample {
            continue;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let in_calls: Duration = PHASES
            .iter()
            .filter(|p| p.3)
            .filter_map(|p| ph.get(p.0))
            .sum();
        let excl = total.saturating_sub(d + m);
        wall.push(ms(total));
        device_ms.push(ms(d));
        model_ms.push(ms(m));
        overhead_excl.push(ms(excl));
        overhead.push(ms(excl + in_calls));
        for (name, ..) in PHASES {
            per_phase
                .entry(name)
                .or_default()
                .push(ph.get(name).copied().map(ms).unwrap_or(0.0));
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
        .unwrap_or(0)
        + std::fs::metadata(dir.path().join("bench.sqlite3-wal"))
            .map(|m| m.len())
            .unwrap_or(0);

    // Per-phase means before sorting (a mean of a column is what adds up).
    let phase_mean: BTreeMap<&str, f64> = per_phase.iter().map(|(k, v)| (*k, mean(v))).collect();
    let accounted: f64 = PHASES
        .iter()
        .filter(|p| !p.2)
        .map(|p| phase_mean.get(p.0).copied().unwrap_or(0.0))
        .sum();
    let overhead_mean = mean(&overhead);
    for v in [
        &mut overhead,
        &mut overhead_excl,
        &mut wall,
        &mut device_ms,
        &mut model_ms,
    ] {
        v.sort_by(f64::total_cmp);
    }
    for v in per_phase.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "\nRuntime step overhead — {} measured steps (of {steps}) on 1080×2400 frames, settle_ms = 0\n",
        overhead.len()
    );
    println!("| per step (ms)                                      |    p50 |    p95 |    max |");
    println!("|----------------------------------------------------|-------:|-------:|-------:|");
    for (name, v) in [
        (
            "runtime overhead (see header: incl. decode+encode)",
            &overhead,
        ),
        (
            "wall − device − model (excl. decode+encode)",
            &overhead_excl,
        ),
        ("step wall time", &wall),
        ("inside Device calls (ADB + sim + decode)", &device_ms),
        ("inside ModelClient calls (HTTP + encode)", &model_ms),
    ] {
        println!(
            "| {name:<50} | {:>6.1} | {:>6.1} | {:>6.1} |",
            pct(v, 0.5),
            pct(v, 0.95),
            v[v.len() - 1]
        );
    }
    println!();
    println!("| phase, busy time per step (ms)          |   mean |    p50 |    p95 |");
    println!("|-----------------------------------------|-------:|-------:|-------:|");
    for (name, label, ..) in PHASES {
        let v = &per_phase[name];
        println!(
            "| {label:<39} | {:>6.2} | {:>6.2} | {:>6.2} |",
            phase_mean[name],
            pct(v, 0.5),
            pct(v, 0.95)
        );
    }
    println!(
        "| {:<39} | {:>6.2} |        |        |",
        "rest (< 0: phases overlapped device I/O)",
        overhead_mean - accounted
    );
    println!(
        "| {:<39} | {:>6.2} |        |        |",
        "runtime overhead (mean)", overhead_mean
    );
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
        "| database + WAL files, MiB              | {:>12.1} |",
        db_bytes as f64 / 1048576.0
    );
    let n = steps / 3;
    let window: Vec<_> = mem.iter().filter(|m| m.0 >= n).copied().collect();
    let xs: Vec<f64> = window.iter().map(|m| f64::from(m.0)).collect();
    let heap: Vec<f64> = window.iter().map(|m| m.1 as f64).collect();
    let rss: Vec<f64> = window.iter().map(|m| m.2 as f64 * 1024.0).collect();
    let (at_n, at_3n) = (window[0], window[window.len() - 1]);
    let mib = |b: f64| b / 1048576.0;
    println!();
    println!("| memory (whole process: sim + model server + agent) |      value |");
    println!("|----------------------------------------------------|-----------:|");
    println!(
        "| live heap after step N = {:<4} (MiB)                | {:>10.2} |",
        at_n.0,
        mib(at_n.1 as f64)
    );
    println!(
        "| live heap after step 3N = {:<4} (MiB)               | {:>10.2} |",
        at_3n.0,
        mib(at_3n.1 as f64)
    );
    println!(
        "| live heap growth per step, N..3N (KiB, lsq)        | {:>10.2} |",
        slope(&xs, &heap) / 1024.0
    );
    println!(
        "| RSS after step N / 3N (MiB)                        | {:>4.1} / {:>4.1} |",
        at_n.2 as f64 / 1024.0,
        at_3n.2 as f64 / 1024.0
    );
    println!(
        "| RSS growth per step, N..3N (KiB, lsq)              | {:>10.2} |",
        slope(&xs, &rss) / 1024.0
    );
    println!(
        "| peak RSS (VmHWM) / RSS at the end (MiB)            | {:>4.1} / {:>4.1} |",
        hwm as f64 / 1024.0,
        rss_end as f64 / 1024.0
    );
    println!(
        "| store growth per step on disk (KiB)                | {:>10.2} |",
        db_bytes as f64 / 1024.0 / f64::from(steps)
    );
    let p50 = pct(&overhead, 0.5);
    println!(
        "\ntarget: < 50 ms per step overhead → {} (p50 {p50:.1} ms)",
        if p50 < 50.0 { "met" } else { "NOT met" }
    );
    model.shutdown().await;
    sim.shutdown().await;
}
