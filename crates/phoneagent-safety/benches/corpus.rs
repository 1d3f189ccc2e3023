//! Corpus report: recall on hard rows, false-alarm rate on benign rows, exact-tier agreement,
//! what each layer contributes (lexicon only, + commitment shape, + screen reading) on the
//! real-app corpus, and the time per `classify` call, printed as tables (harness = false).
//!
//! Run: `cargo bench -p phoneagent-safety --bench corpus`

use std::time::{Duration, Instant};

use phoneagent_safety::{
    AccessMode, Decision, Gate, GateInput, Layers, RiskTier, TaskAnalysis, Tool, decide,
};
use serde::Deserialize;

const CORPUS: &str = include_str!("../tests/data/corpus.jsonl");
const CORPUS_APPS: &str = include_str!("../tests/data/corpus_apps.jsonl");

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
        .chain(CORPUS_APPS.lines())
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

    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    let t0 = Instant::now();
    let gate = Gate::builtin().map_err(|e| e.to_string())?;
    let build = t0.elapsed();

    let (mut hard_rows, mut hard_hit) = (0usize, 0usize);
    let (mut benign_rows, mut benign_alarm) = (0usize, 0usize);
    let (mut exact, mut boundary_rows, mut boundary_ok) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for (row, input) in rows.iter().zip(&inputs) {
        let c = gate.classify(input);
        if row.label == "hard" {
            hard_rows += 1;
            if c.tier == RiskTier::Hard {
                hard_hit += 1;
            } else {
                misses.push(format!("missed hard: {}", row.id));
            }
        }
        if row.label == "benign" {
            benign_rows += 1;
            if c.tier >= RiskTier::Reviewer {
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

    // What each layer contributes, on the real-app corpus alone.
    let app_ids: Vec<String> = CORPUS_APPS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Row>(l).ok())
        .map(|r| r.id)
        .collect();
    let layer_rows: Vec<(&Row, &GateInput)> = rows
        .iter()
        .zip(&inputs)
        .filter(|(r, _)| app_ids.contains(&r.id))
        .collect();
    let configs = [
        (
            "lexicon only",
            Layers {
                shape: false,
                screen: false,
            },
        ),
        (
            "+ commitment shape",
            Layers {
                shape: true,
                screen: false,
            },
        ),
        (
            "+ screen reading (all)",
            Layers {
                shape: true,
                screen: true,
            },
        ),
    ];
    let mut layer_lines = Vec::new();
    for (name, layers) in configs {
        let (mut h, mut hh, mut b, mut ba, mut stop_h) = (0, 0, 0, 0, 0);
        for (row, input) in &layer_rows {
            let task = input
                .task
                .as_deref()
                .map(|t| gate.analyze_task(t))
                .unwrap_or_else(TaskAnalysis::default);
            let c = gate.classify_layers(input, &task, layers);
            if row.label == "hard" {
                h += 1;
                hh += usize::from(c.tier == RiskTier::Hard);
                stop_h += usize::from(c.tier >= RiskTier::Reviewer);
            }
            if row.label == "benign" {
                b += 1;
                ba += usize::from(c.tier >= RiskTier::Reviewer);
            }
        }
        layer_lines.push(format!(
            "| {name:<24} | {:>5.1}% ({hh:>3}/{h:<3}) | {:>5.1}% ({stop_h:>3}/{h:<3}) | {:>5.1}% ({ba:>3}/{b:<3}) |",
            pct(hh, h),
            pct(stop_h, h),
            pct(ba, b)
        ));
    }

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
    println!();
    println!(
        "layers on the real-app corpus ({} rows; a benign row stopped in wary = tier reviewer or hard)",
        layer_rows.len()
    );
    println!(
        "+--------------------------+------------------+------------------+------------------+"
    );
    println!(
        "| layers                   | hard rows → hard | hard rows stopped| benign stopped   |"
    );
    println!(
        "+--------------------------+------------------+------------------+------------------+"
    );
    for l in &layer_lines {
        println!("{l}");
    }
    println!(
        "+--------------------------+------------------+------------------+------------------+"
    );
    for m in misses {
        println!("{m}");
    }
    Ok(())
}

/// A tiny error alias so the bench needs no extra dependency.
mod anyhow_free {
    pub type Result = std::result::Result<(), String>;
}
