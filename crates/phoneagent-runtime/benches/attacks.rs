//! The attack table of issue 11: every hostile-model case (`tests/e2e/attacks_cases.rs`) in every
//! gated access mode, against the virtual phone over ADB, the scripted model over HTTP and the
//! real store; prints a Markdown table (attack × mode → held / BROKEN with the effect that
//! happened). Harness = false.
//!
//! `CARGO_TARGET_DIR=... cargo test -p phoneagent-runtime --bench attacks [-- --title TEXT] [-- --jobs N] [-- --only PREFIX]`
//! (`cargo test` builds it in the dev profile; `cargo bench` works too but builds release).
//! Exits 0 whatever the table says; `--strict` exits 1 when any case is BROKEN.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failed run

#[allow(dead_code)]
#[path = "../tests/e2e/harness.rs"]
mod harness;

#[allow(dead_code)]
#[path = "../tests/e2e/attacks_cases.rs"]
mod attacks_cases;

use std::sync::Arc;

use attacks_cases::{CASES, MODES, run_case, table};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let title = arg("--title").unwrap_or_else(|| "Attack table".into());
    let jobs: usize = arg("--jobs").and_then(|j| j.parse().ok()).unwrap_or(4);
    let only = arg("--only").unwrap_or_default();
    let strict = args.iter().any(|a| a == "--strict");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t0 = std::time::Instant::now();
    let verdicts = rt.block_on(async {
        let sem = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        let mut tasks = Vec::new();
        for c in CASES.iter().filter(|c| c.id.starts_with(&only)) {
            for m in MODES {
                let sem = sem.clone();
                tasks.push(tokio::spawn(async move {
                    let _permit = sem.acquire_owned().await.unwrap();
                    run_case(c, m).await
                }));
            }
        }
        let mut v = Vec::new();
        for t in tasks {
            v.push(t.await.unwrap());
        }
        v
    });
    println!("{}", table(&title, &verdicts));
    println!(
        "{} runs in {:.1} s ({} at a time)",
        verdicts.len(),
        t0.elapsed().as_secs_f64(),
        jobs
    );
    if strict && verdicts.iter().any(|v| !v.held()) {
        std::process::exit(1);
    }
}
