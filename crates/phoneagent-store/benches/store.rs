//! Store benchmark (harness = false; prints a table).
//!
//! `CARGO_TARGET_DIR=... cargo bench -p phoneagent-store --bench store`
//!
//! Measures, on a temporary file-backed store:
//! * `append_event` latency (p50/p99/max) with a realistic ~1 KB payload, under
//!   `synchronous=NORMAL` (the default) and `FULL`;
//! * `put_screenshot` of a 1080×2400 PNG (hash + insert), new and deduplicated;
//! * exporting a 30-step run as trajectory JSON and as HTML.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failed run

use std::time::{Duration, Instant};

use phoneagent_store::export::{HtmlOptions, JsonOptions, html_report, trajectory_json};
use phoneagent_store::{Durability, EventRecord, NewRun, Store, StoreOptions};
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn row(name: &str, samples: &mut [Duration]) {
    samples.sort();
    println!(
        "| {name:<44} | {:>6} | {:>9} | {:>9} | {:>9} |",
        samples.len(),
        ms(percentile(samples, 0.5)),
        ms(percentile(samples, 0.99)),
        ms(*samples.last().unwrap_or(&Duration::ZERO)),
    );
}

/// A 1080×2400 screen-like PNG: flat bars with some text-like noise (≈ a real screenshot's size).
fn screen_png(seed: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(1080, 2400, |x, y| {
        let band = (y / 180) % 4;
        let base = [245u8, 240, 230, 250][band as usize];
        let noisy = (x
            .wrapping_mul(2654435761)
            .wrapping_add(y.wrapping_mul(40503))
            .wrapping_add(seed))
            % 97
            < 6
            && (y % 180) > 60
            && (y % 180) < 110
            && x > 60
            && x < 900;
        let v = if noisy { 40 } else { base };
        image::Rgb([v, v, v.saturating_sub((seed % 7) as u8)])
    });
    let mut buf = std::io::Cursor::new(Vec::new());
    img.write_to(&mut buf, image::ImageFormat::Png).unwrap();
    buf.into_inner()
}

fn payload(seq: u64) -> serde_json::Value {
    json!({
        "step": seq / 8,
        "action": {"action": "tap", "element": {"x": 512.0, "y": 733.0},
                   "screen_description": "Settings app, the network section is visible with Wi-Fi, Bluetooth and mobile data rows. ".repeat(4),
                   "reason": "Tap the Wi-Fi row to open its page", "target_description": "Wi-Fi row",
                   "confirm_irreversible": false, "sensitive": false},
        "points": [{"model": {"x": 512.0, "y": 733.0}, "canonical": [0.5125, 0.7337], "runtime": {"x": 512, "y": 733}, "device": {"x": 553, "y": 1761}}],
    })
}

fn bench_append(durability: Durability, n: u64) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(
        dir.path().join("bench.sqlite3"),
        StoreOptions {
            durability,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let run = NewRun::new("bench");
    store.start_run(&run).unwrap();
    let mut samples = Vec::with_capacity(n as usize);
    for seq in 0..n {
        let ev = EventRecord {
            seq,
            ts_ms: seq as i64,
            kind: "action_proposed".into(),
            payload: payload(seq),
        };
        let t = Instant::now();
        store.append_event(run.id, &ev).unwrap();
        samples.push(t.elapsed());
    }
    samples
}

fn main() {
    println!(
        "phoneagent-store benchmark (temporary file store, {} )",
        std::env::temp_dir().display()
    );
    println!(
        "| {:<44} | {:>6} | {:>9} | {:>9} | {:>9} |",
        "operation", "n", "p50 ms", "p99 ms", "max ms"
    );
    println!(
        "|{:-<46}|{:-<8}|{:-<11}|{:-<11}|{:-<11}|",
        "", "", "", "", ""
    );

    let mut full = bench_append(Durability::Full, 2000);
    row("append_event, ~1 KB payload, synchronous=FULL", &mut full);
    let mut normal = bench_append(Durability::Normal, 2000);
    row(
        "append_event, ~1 KB payload, synchronous=NORMAL",
        &mut normal,
    );

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("bench.sqlite3")).unwrap();
    let pngs: Vec<Vec<u8>> = (0..20).map(screen_png).collect();
    println!(
        "(1080x2400 PNG size: {:.0} KB)",
        pngs.iter().map(Vec::len).sum::<usize>() as f64 / pngs.len() as f64 / 1024.0
    );
    let mut put_new = Vec::new();
    let mut hashes = Vec::new();
    for p in &pngs {
        let t = Instant::now();
        hashes.push(store.put_screenshot(p, "image/png", 1080, 2400).unwrap());
        put_new.push(t.elapsed());
    }
    row("put_screenshot 1080x2400 PNG, new", &mut put_new);
    let mut put_dup = Vec::new();
    for p in &pngs {
        let t = Instant::now();
        store.put_screenshot(p, "image/png", 1080, 2400).unwrap();
        put_dup.push(t.elapsed());
    }
    row("put_screenshot 1080x2400 PNG, duplicate", &mut put_dup);

    // A 30-step run for the exports.
    let run = NewRun::new("export bench");
    store.start_run(&run).unwrap();
    let mut seq = 0u64;
    for step in 1..=30u64 {
        let h = &hashes[(step as usize) % hashes.len()];
        let evs = [
            (
                "observation",
                json!({"step": step, "screenshot": h, "width": 1080, "height": 2400, "blocked": false, "screen_seq": step, "capture_ms": 100, "purpose": "plan"}),
            ),
            (
                "model_call",
                json!({"step": step, "role": "actor", "call_kind": "planning", "model": "m", "prompt_tokens": 1500, "completion_tokens": 80, "cost_usd": 0.001, "latency_ms": 1200, "content": "do(action=\"Tap\", element=[512,733])"}),
            ),
            ("action_proposed", payload(step * 8)),
            (
                "action_dispatched",
                json!({"step": step, "action_type": "tap", "device_points": [{"x": 553, "y": 1761}], "command_ok": true, "duration_ms": 60}),
            ),
            (
                "verification",
                json!({"step": step, "dispatched": true, "command_ok": true, "observable_effect": true, "changed_fraction": 0.3, "warnings": []}),
            ),
        ];
        for (kind, p) in evs {
            store
                .append_event(
                    run.id,
                    &EventRecord {
                        seq,
                        ts_ms: seq as i64 * 100,
                        kind: kind.into(),
                        payload: p,
                    },
                )
                .unwrap();
            seq += 1;
        }
    }
    let mut json_t = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let doc = trajectory_json(&store, run.id, &JsonOptions::default()).unwrap();
        json_t.push(t.elapsed());
        std::hint::black_box(doc);
    }
    row("trajectory_json, 30 steps, 150 events", &mut json_t);
    let mut html_t = Vec::new();
    let mut size = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let html = html_report(&store, run.id, &HtmlOptions::default()).unwrap();
        html_t.push(t.elapsed());
        size = html.len();
    }
    row("html_report, 30 steps, 20 distinct 1080x2400", &mut html_t);
    println!("(HTML report size: {:.0} KB)", size as f64 / 1024.0);
}
