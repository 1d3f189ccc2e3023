//! Corpus report: recall on hard rows, false-alarm rate on benign rows, exact-tier agreement,
//! and the time per `classify` call, printed as a table (harness = false).
//!
//! Run: `cargo bench -p phoneagent-safety --bench corpus`

use std::time::{Duration, Instant};

use phoneagent_safety::{AccessMode, Decision, Gate, GateInput, RiskTier, Tool, decide};
use serde::Deserialize;

const CORPUS: &str = include_str!("../tests/data/corpus.jsonl");

#[derive(Debug, Deserialize)]
struct Row {
    id: String,
    label: String,
    tool: String,
    #[serde(default)]
    target_description: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    sensitive: bool,
    #[serde(default)]
    target_is_password_field: Option<bool>,
    #[serde(default)]
    ocr_text: Option<String>,
    #[serde(default)]
    screen: Option<phoneagent_safety::ScreenReading>,
    expected: RiskTier,
    #[serde(default)]
    blocked: Option<bool>,
}

fn main() -> anyhow_free::Result {
    let rows: Vec<Row> = CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("corpus: {e}"))?;
    let inputs: Vec<GateInput> = rows
        .iter()
        .map(|r| {
            Ok(GateInput {
                tool: r.tool.parse::<Tool>().map_err(|e| e.to_string())?,
                target_description: r.target_description.clone(),
                text: r.text.clone(),
                reason: r.reason.clone(),
                task: r.task.clone(),
                sensitive: r.sensitive,
                confirm_irreversible: false,
                target_is_password_field: r.target_is_password_field,
                ocr_text: r.ocr_text.clone(),
                screen: r.screen.clone(),
            })
        })
        .collect::<Result<_, String>>()?;

    let t0 = Instant::now();
    let gate = Gate::builtin().map_err(|e| e.to_string())?;
    let build = t0.elapsed();

    let (mut hard_rows, mut hard_hit) = (0usize, 0usize);
    let (mut benign_rows, mut benign_alarm) = (0usize, 0usize);
    let (mut exact, mut boundary_rows, mut boundary_ok) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for (row, input) in rows.iter().zip(&inputs) {
        let c = gate.classify(input);
        if row.expected == RiskTier::Hard {
            hard_rows += 1;
            if c.tier == RiskTier::Hard {
                hard_hit += 1;
            } else {
                misses.push(format!("missed hard: {}", row.id));
            }
        }
        if row.label == "benign" {
            benign_rows += 1;
            if c.tier == RiskTier::Hard {
                benign_alarm += 1;
                misses.push(format!("false alarm: {}", row.id));
            }
        }
        if c.tier == row.expected {
            exact += 1;
        }
        if let Some(b) = row.blocked {
            boundary_rows += 1;
            let d = decide(AccessMode::Wary, input, &c);
            if matches!(d.decision, Decision::BlockedByTaskBoundary { .. }) == b {
                boundary_ok += 1;
            }
        }
    }

    // Time per call: repeat the whole corpus until at least ~1 s has passed.
    let mut calls = 0u64;
    let t1 = Instant::now();
    let mut sink = 0usize;
    while t1.elapsed() < Duration::from_secs(1) {
        for input in &inputs {
            sink += gate.classify(input).reasons.len();
            calls += 1;
        }
    }
    let per_call = t1.elapsed().as_secs_f64() * 1e6 / calls as f64;
    // Slowest row, measured alone.
    let mut slowest = (0.0f64, String::new());
    for (row, input) in rows.iter().zip(&inputs) {
        let n = 200;
        let t = Instant::now();
        for _ in 0..n {
            sink += gate.classify(input).reasons.len();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        if us > slowest.0 {
            slowest = (us, row.id.clone());
        }
    }
    std::hint::black_box(sink);

    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!("phoneagent-safety corpus report ({} rows)", rows.len());
    println!("+------------------------------------+----------------------+");
    println!("| metric                             | value                |");
    println!("+------------------------------------+----------------------+");
    println!(
        "| recall on hard rows                | {:>5.1}% ({:>3}/{:<3})    |",
        pct(hard_hit, hard_rows),
        hard_hit,
        hard_rows
    );
    println!(
        "| false-alarm rate on benign rows    | {:>5.1}% ({:>3}/{:<3})    |",
        pct(benign_alarm, benign_rows),
        benign_alarm,
        benign_rows
    );
    println!(
        "| exact tier agreement (all rows)    | {:>5.1}% ({:>3}/{:<3})    |",
        pct(exact, rows.len()),
        exact,
        rows.len()
    );
    println!(
        "| task-boundary decisions correct    | {:>5.1}% ({:>3}/{:<3})    |",
        pct(boundary_ok, boundary_rows),
        boundary_ok,
        boundary_rows
    );
    println!(
        "| classify time per call (mean)      | {:>10.2} µs        |",
        per_call
    );
    println!(
        "| slowest row (mean of 200)          | {:>10.2} µs        |",
        slowest.0
    );
    println!(
        "| Gate::builtin() (compile lexicons) | {:>10.2} ms        |",
        build.as_secs_f64() * 1e3
    );
    println!("+------------------------------------+----------------------+");
    println!("slowest row: {}", slowest.1);
    for m in misses {
        println!("{m}");
    }
    Ok(())
}

/// A tiny error alias so the bench needs no extra dependency.
mod anyhow_free {
    pub type Result = std::result::Result<(), String>;
}
