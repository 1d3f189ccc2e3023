//! Screenshot benchmark (SPEC D3; issue 2 target: decode + downscale to the model size under
//! 40 ms on one core). Prints a table of ms per frame.
//!
//! Run: `cargo bench -p phoneagent-device --bench screenshot` (set `BENCH_ITERS` to change the
//! number of frames, default 20).
//!
//! * round trip: `AdbDevice::screenshot` through the virtual phone over the ADB protocol on
//!   loopback (device-side PNG encode + transfer + host decode + blank check), PNG and raw paths;
//! * decode: PNG → RGBA of a 1080x2400 frame from the virtual phone;
//! * downscale: RGBA 1080x2400 → long side 1280 (fast_image_resize, bilinear);
//! * decode + downscale: the two together, what every step of the agent pays.
//!
//! Decode and downscale run on the calling thread only (one core).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device, ScreenshotMode, frame,
};
use phoneagent_sim::{SimConfig, SimServer};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
    (mean, ms(v[v.len() / 2]), ms(v[v.len() - 1]))
}

fn time<T>(n: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect()
}

fn main() {
    let n: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows: Vec<(String, Vec<Duration>)> = Vec::new();

    let png = rt.block_on(async {
        let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
        sim.phone("virtual-phone-1").unwrap().reset("shop").unwrap();
        let server = AdbServer::new(AdbServerAddr {
            host: "127.0.0.1".into(),
            port: sim.port(),
        });
        let c = CancellationToken::new();
        let mut png = Vec::new();
        for (label, mode) in [
            ("round trip, PNG (exec:screencap -p)", ScreenshotMode::Png),
            (
                "round trip, raw (exec:screencap) + host PNG encode",
                ScreenshotMode::Raw,
            ),
        ] {
            let dev = AdbDevice::open(
                server.clone(),
                "virtual-phone-1",
                AdbDeviceOptions {
                    screenshot_mode: mode,
                    ..AdbDeviceOptions::default()
                },
            )
            .await
            .unwrap();
            let first = dev.screenshot(&c).await.unwrap(); // warm-up (first render)
            assert_eq!(first.image.dimensions(), (1080, 2400));
            if mode == ScreenshotMode::Png {
                png = first.png.to_vec();
            }
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let s = dev.screenshot(&c).await.unwrap();
                v.push(t.elapsed());
                assert!(!s.blocked);
            }
            rows.push((label.to_string(), v));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let b = server
                .exec("virtual-phone-1", "screencap -p")
                .await
                .unwrap();
            v.push(t.elapsed());
            assert!(b.len() > 1000);
        }
        rows.push(("transfer only (exec:screencap -p, no decode)".into(), v));
        sim.shutdown().await;
        png
    });

    let img = frame::decode_png(&png).unwrap();
    rows.push((
        format!("PNG decode 1080x2400 ({} KiB)", png.len() / 1024),
        time(n, || frame::decode_png(&png).unwrap()),
    ));
    rows.push((
        "blank check (is_blank)".into(),
        time(n, || frame::is_blank(&img)),
    ));
    rows.push((
        "downscale to long side 1280".into(),
        time(n, || frame::downscale_long_side(&img, 1280).unwrap()),
    ));
    rows.push((
        "decode + downscale to 576x1280 (one core)".into(),
        time(n, || {
            let i = frame::decode_png(&png).unwrap();
            frame::downscale_long_side(&i, 1280).unwrap()
        }),
    ));

    println!("\nscreenshot benchmark, {n} frames each (ms per frame)\n");
    println!("{:<52} {:>8} {:>8} {:>8}", "what", "mean", "median", "max");
    for (label, v) in rows {
        let (mean, med, max) = stats(v);
        println!("{label:<52} {mean:>8.2} {med:>8.2} {max:>8.2}");
    }
    println!("\ntarget: decode + downscale < 40 ms on one core");
}
