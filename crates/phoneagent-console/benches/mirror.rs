//! The desktop mirror's frame rate and latency on the virtual phone (SPEC U1, issue #12 item 5).
//!
//! Runs the app's own mirror pipeline ([`phoneagent_console::mirror::run_mirror`]: the phone's
//! screen stream → H.264 decode → change check → 960 px JPEG → the message the webview gets)
//! against the virtual phone over the ADB protocol, for each capture path on both timing
//! profiles (`instant`, and `real`: a mid-range phone on USB 2, SPEC V6):
//!
//! * **latency** — the screen changes on the phone → the frame showing it is ready for the
//!   webview (p50/p95 over changes 200 ms apart);
//! * **fps** — frames delivered per second while the screen changes every 16 ms.
//!
//! The webview's own decode and paint are not in these numbers (the WebDriver suite measures
//! the view). Prints a table. Run: `cargo bench -p phoneagent-console --bench mirror` (add
//! `-- 50` for 50 changes per cell; `MIRROR_ONLY=instant/scrcpy` for one cell).

use std::sync::Arc;
use std::time::{Duration, Instant};

use phoneagent_console::dto::MirrorMessage;
use phoneagent_console::mirror::{MirrorSlot, run_mirror};
use phoneagent_device::{AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, ScreenshotMode};
use phoneagent_sim::{SimConfig, SimServer, TimingProfile};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s.get(i).copied().unwrap_or(f64::NAN)
}

struct Cell {
    path: String,
    p50: f64,
    p95: f64,
    fps: f64,
    /// Frames the phone's stream delivered (decoded) per second in the same window, `None` on
    /// the screenshot paths: the mirror cannot show more than the phone sends.
    phone_fps: Option<f64>,
    kb: usize,
}

async fn measure(
    profile: &str,
    mode: ScreenshotMode,
    jar: &std::path::Path,
    changes: usize,
) -> anyhow::Result<Cell> {
    let timing = TimingProfile::named(profile)?;
    let sim = SimServer::start(SimConfig::default().with_timing(&timing), 0).await?;
    let serial = sim.serials()[0].clone();
    let phone = sim
        .phone(&serial)
        .ok_or_else(|| anyhow::anyhow!("the virtual phone {serial} is not served"))?;
    let server = AdbServer::new(AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port()))?);
    let opts = AdbDeviceOptions {
        screenshot_mode: mode,
        scrcpy_server: Some(jar.to_path_buf()),
        ..AdbDeviceOptions::default()
    };
    let dev = Arc::new(AdbDevice::open(server, &serial, opts).await?);
    let slot = Arc::new(MirrorSlot::default());
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, MirrorMessage)>();
    let cancel = CancellationToken::new();
    tokio::spawn(run_mirror(
        dev.clone(),
        slot.clone(),
        move |m| tx.send((Instant::now(), m)).is_ok(),
        cancel.clone(),
    ));
    let mut path = String::new();
    // The paths, then the first frame.
    while let Some((_, m)) = rx.recv().await {
        match m {
            MirrorMessage::Paths { capture, .. } => path = capture,
            MirrorMessage::Frame { .. } => break,
            MirrorMessage::Error { message, .. } => anyhow::bail!("mirror: {message}"),
        }
    }
    let screens = ["home", "settings"];
    let mut lat = Vec::new();
    let mut bytes = 0usize;
    for i in 0..changes {
        tokio::time::sleep(Duration::from_millis(200)).await;
        while rx.try_recv().is_ok() {}
        let at = Instant::now();
        phone.reset(screens[i % 2])?;
        let got = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some((when, m)) = rx.recv().await {
                if matches!(m, MirrorMessage::Frame { .. }) {
                    return Some(when);
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        if let Some(when) = got {
            lat.push(when.duration_since(at).as_secs_f64() * 1000.0);
            bytes += slot.newest().map_or(0, |(_, b)| b.len());
        }
    }
    // Sustained rate: the screen changes every 16 ms for 3 s, to the next of five screens, so
    // two frames the phone sends in a row (it samples the screen every 17–45 ms) never show the
    // same screen: a two-screen toggle sampled at an even number of changes would repeat one
    // and the mirror rightly drop it, halving the count without showing the mirror is slow.
    let cycle = ["home", "settings", "shop", "mail", "chat"];
    while rx.try_recv().is_ok() {}
    let window = Duration::from_secs(3);
    let decoded0 = dev.stream().await.map(|s| s.decode_stats().0);
    let t0 = Instant::now();
    let mut frames = 0usize;
    let mut i = 0usize;
    let mut tick = tokio::time::interval(Duration::from_millis(16));
    while t0.elapsed() < window {
        tokio::select! {
            _ = tick.tick() => { i += 1; phone.reset(cycle[i % cycle.len()])?; }
            m = rx.recv() => if matches!(m, Some((_, MirrorMessage::Frame { .. }))) { frames += 1 },
        }
    }
    let phone_fps = match (decoded0, dev.stream().await) {
        (Some(n0), Some(s)) => Some((s.decode_stats().0 - n0) as f64 / t0.elapsed().as_secs_f64()),
        _ => None,
    };
    cancel.cancel();
    drop(dev);
    sim.shutdown().await;
    Ok(Cell {
        path,
        p50: pct(&lat, 0.5),
        p95: pct(&lat, 0.95),
        fps: frames as f64 / window.as_secs_f64(),
        phone_fps,
        kb: bytes / lat.len().max(1) / 1024,
    })
}

fn main() -> anyhow::Result<()> {
    let changes: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    // The virtual phone runs its own scrcpy server for whatever jar is pushed.
    let jar = std::env::temp_dir().join(format!(
        "phoneagent-mirror-bench-scrcpy-server-{}",
        std::process::id()
    ));
    std::fs::write(&jar, b"PK\x03\x04 stand-in scrcpy-server")?;
    let rt = tokio::runtime::Runtime::new()?;
    // `MIRROR_ONLY=instant/scrcpy,real/raw`: only these cells (profiling one path).
    let only = std::env::var("MIRROR_ONLY").ok().filter(|v| !v.is_empty());
    println!(
        "desktop mirror on the virtual phone: {changes} screen changes per cell for latency, 3 s of changes every 16 ms for fps"
    );
    println!("| profile | capture | change → frame p50 ms | p95 ms | fps | phone fps | KB/frame |");
    println!("|---|---|---|---|---|---|---|");
    for profile in ["instant", "real"] {
        for mode in [
            ScreenshotMode::Scrcpy,
            ScreenshotMode::Screenrecord,
            ScreenshotMode::Raw,
            ScreenshotMode::Png,
        ] {
            let cell = format!("{profile}/{}", mode.as_str());
            if only
                .as_ref()
                .is_some_and(|o| !o.split(',').any(|c| c == cell))
            {
                continue;
            }
            let c = rt.block_on(measure(profile, mode, &jar, changes))?;
            println!(
                "| {profile} | {} | {:.0} | {:.0} | {:.1} | {} | {} |",
                c.path,
                c.p50,
                c.p95,
                c.fps,
                c.phone_fps
                    .map_or_else(|| "–".to_string(), |f| format!("{f:.1}")),
                c.kb
            );
        }
    }
    let _ = std::fs::remove_file(&jar);
    Ok(())
}
