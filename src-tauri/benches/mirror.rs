//! Mirror frame rate and latency on the virtual phone (issue 6, SPEC U1).
//!
//! Measures the app's mirror pipeline up to the Tauri channel: `AdbDevice::screenshot` over the
//! ADB protocol against the in-process virtual phone, then the PNG → data-URL encoding the
//! channel carries. Prints a table. Run:
//! `cargo bench -p phoneagent-app --bench mirror` (add `-- 100` for 100 frames).

use std::time::{Duration, Instant};

use base64::Engine as _;
use phoneagent_device::{AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device};
use phoneagent_sim::{SimConfig, SimServer};
use tokio_util::sync::CancellationToken;

fn pct(v: &[Duration], p: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    s.sort_by(f64::total_cmp);
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s.get(i).copied().unwrap_or(0.0)
}

fn main() -> anyhow::Result<()> {
    let frames: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(40);
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let sim = SimServer::start(SimConfig::default(), 0).await?;
        let server = AdbServer::new(AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port()))?);
        let dev = AdbDevice::open(server, "virtual-phone-1", AdbDeviceOptions::default()).await?;
        let cancel = CancellationToken::new();
        // Warm-up.
        dev.screenshot(&cancel).await?;
        let mut capture = vec![];
        let mut total = vec![];
        let mut bytes = 0usize;
        let t0 = Instant::now();
        for _ in 0..frames {
            let s = Instant::now();
            let shot = dev.screenshot(&cancel).await?;
            let c = s.elapsed();
            let url = format!(
                "data:image/png;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&shot.png)
            );
            bytes += url.len();
            capture.push(c);
            total.push(s.elapsed());
        }
        let wall = t0.elapsed().as_secs_f64();
        println!("mirror pipeline on the virtual phone ({frames} frames, back to back)");
        println!("| metric | p50 ms | p95 ms | max ms |");
        println!("|---|---|---|---|");
        println!(
            "| screencap over ADB | {:.1} | {:.1} | {:.1} |",
            pct(&capture, 0.5),
            pct(&capture, 0.95),
            pct(&capture, 1.0)
        );
        println!(
            "| + data URL encode | {:.1} | {:.1} | {:.1} |",
            pct(&total, 0.5),
            pct(&total, 0.95),
            pct(&total, 1.0)
        );
        println!(
            "achievable frame rate: {:.1} fps (the app caps at 10 fps)",
            frames as f64 / wall
        );
        println!("average frame payload: {} KB", bytes / frames.max(1) / 1024);
        sim.shutdown().await;
        anyhow::Ok(())
    })
}
