//! Render + PNG encode time of the virtual phone's screens (1080x2400 and landscape).
//!
//! `cargo bench -p phoneagent-sim --bench render` (release) or, for the debug build with
//! optimized dependencies that tests use, `cargo test -p phoneagent-sim --bench render`.
//! Prints a table: ms per frame for render only, and render + PNG encode.

use std::time::Instant;

use phoneagent_sim::{Faults, SimConfig, SimServer};

/// CPU time of this thread in ns (Linux; the machine may be shared, so wall time lies).
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let sim = SimServer::start(SimConfig::default(), 0).await?;
        let phone = sim
            .phone("virtual-phone-1")
            .ok_or_else(|| anyhow::anyhow!("device missing"))?;
        let iters = 5;
        println!(
            "{:<14} {:>4} {:>10} {:>10} {:>14} {:>14} {:>8}",
            "scenario", "rot", "render ms", "(cpu ms)", "render+png ms", "(cpu ms)", "png KiB"
        );
        for scenario in ["home", "shop", "product", "payment", "mail_compose", "settings", "notice"] {
            for rotation in [0u8, 1] {
                phone.reset(scenario)?;
                phone.set_faults(Faults { rotation, dialog_disabled: true, ..Default::default() });
                // Warm the glyph cache once (first frame after start).
                phone.render_uncached()?;
                let per = |wall: std::time::Duration, c0: Option<u64>| {
                    let cpu = match (c0, cpu_ns()) {
                        (Some(a), Some(b)) => (b - a) as f64 / 1e6 / f64::from(iters),
                        _ => f64::NAN,
                    };
                    (wall.as_secs_f64() * 1000.0 / f64::from(iters), cpu)
                };
                let (t, c) = (Instant::now(), cpu_ns());
                for _ in 0..iters {
                    phone.render_uncached()?;
                }
                let (render, render_cpu) = per(t.elapsed(), c);
                let (t, c) = (Instant::now(), cpu_ns());
                let mut size = 0;
                for _ in 0..iters {
                    phone.render_uncached()?;
                    size = phone.screenshot_png()?.len();
                }
                let (both, both_cpu) = per(t.elapsed(), c);
                println!(
                    "{scenario:<14} {rotation:>4} {render:>10.1} {render_cpu:>10.1} {both:>14.1} {both_cpu:>14.1} {:>8}",
                    size / 1024
                );
            }
        }
        sim.shutdown().await;
        Ok(())
    })
}
