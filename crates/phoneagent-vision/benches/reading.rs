//! `cargo bench -p phoneagent-vision`: OCR accuracy and time per reading (one gated action)
//! on the virtual phone's screens (every labelled element of every scenario, plus the delete
//! dialog) and on real-app-like renders; prints a table.
//!
//! Time is wall time of `ScreenReader::read` on the calling thread. For the one-core figure
//! run `OMP_THREAD_LIMIT=1 taskset -c 0 cargo bench -p phoneagent-vision`: Debian's
//! libtesseract uses OpenMP, whose spinning worker threads make a pinned or oversubscribed
//! core several times slower (OMP_THREAD_LIMIT is read when the library loads).
//! `VISION_BENCH_LANGS="chi_sim+eng;chi_sim"` adds rows for other language sets.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use phoneagent_vision::{ReadPurpose, ReaderConfig, ScreenReader};
use support::{Case, best_accuracy, matches};

static DUMPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct Row {
    set: &'static str,
    langs: String,
    n: usize,
    exact: f64,
    found: f64,
    chars: f64,
    p50: f64,
    p95: f64,
    max: f64,
}

fn run(reader: &ScreenReader, set: &'static str, langs: &str, cases: &[Case], show: bool) -> Row {
    let mut times = Vec::new();
    let (mut exact, mut found, mut chars) = (0usize, 0usize, 0.0f64);
    // Warm-up (first call pays lazy allocations inside the engine).
    if let Some(c) = cases.first() {
        let _ = reader.read(&c.image, c.point, ReadPurpose::Tap);
    }
    for c in cases {
        let t0 = Instant::now();
        let r = reader.read(&c.image, c.point, ReadPurpose::Tap);
        times.push(t0.elapsed().as_secs_f64() * 1000.0);
        let got = r.target_text.clone().unwrap_or_default();
        if let (Ok(dir), Some(b)) = (std::env::var("VISION_BENCH_DUMP"), r.target_bounds) {
            // The target crop, for running another engine on exactly the same boxes.
            let crop = image::imageops::crop_imm(&c.image, b.left, b.top, b.width(), b.height());
            let i = DUMPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = crop.to_image().save(format!("{dir}/{i}.png"));
            let line = format!("{i}\t{}\t{}\t{}\n", c.name, c.expect, got);
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(format!("{dir}/labels.tsv"))
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        }
        let ok = if c.expect.is_empty() {
            r.target_unreadable && r.target_text.is_none()
        } else {
            matches(&c.expect, &got)
        };
        let acc = if c.expect.is_empty() {
            if ok { 1.0 } else { 0.0 }
        } else {
            best_accuracy(&c.expect, &got)
        };
        exact += usize::from(ok);
        found += usize::from(
            ok || (!c.expect.is_empty()
                && c.expect
                    .split('|')
                    .any(|w| support::squash(&got).contains(&support::squash(w)))),
        );
        chars += acc;
        if show && !ok {
            println!("  miss {:<48} want {:<16} got {:?}", c.name, c.expect, got);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    Row {
        set,
        langs: langs.to_owned(),
        n: cases.len(),
        exact: 100.0 * exact as f64 / cases.len().max(1) as f64,
        found: 100.0 * found as f64 / cases.len().max(1) as f64,
        chars: 100.0 * chars / cases.len().max(1) as f64,
        p50: pct(0.5),
        p95: pct(0.95),
        max: pct(1.0),
    }
}

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sim = rt.block_on(async {
        let phone = support::Phone::start().await?;
        let cases = support::sim_cases(&phone).await?;
        phone.sim.shutdown().await;
        anyhow::Ok(cases)
    })?;
    let synth = support::synth::cases();
    let mut lang_sets = vec![phoneagent_vision::DEFAULT_LANGUAGES.join("+")];
    if let Ok(extra) = std::env::var("VISION_BENCH_LANGS") {
        lang_sets.extend(
            extra
                .split(';')
                .map(str::to_owned)
                .filter(|s| !s.is_empty()),
        );
    }
    let mut rows = Vec::new();
    for (k, langs) in lang_sets.iter().enumerate() {
        let t0 = Instant::now();
        let reader = ScreenReader::new(ReaderConfig {
            languages: langs.split('+').map(str::to_owned).collect(),
            ..ReaderConfig::default()
        })?;
        println!(
            "{langs}: engine loaded in {:.0} ms",
            t0.elapsed().as_secs_f64() * 1000.0
        );
        rows.push(run(&reader, "virtual phone", langs, &sim, k == 0));
        rows.push(run(&reader, "real-app-like", langs, &synth, k == 0));
    }
    println!();
    println!(
        "| set | languages | readings | exact match | label found | char accuracy | p50 ms | p95 ms | max ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.1} % | {:.1} % | {:.1} % | {:.0} | {:.0} | {:.0} |",
            r.set, r.langs, r.n, r.exact, r.found, r.chars, r.p50, r.p95, r.max
        );
    }
    Ok(())
}
