//! `safety classify` (SPEC C2, S3): JSON lines in, one JSON line out per input line.
//!
//! In: `{"tool","target_description","text","reason","task","sensitive"}` (also accepted:
//! `confirm_irreversible`, `target_is_password_field`, `ocr_text`, `screen` (a screen reading,
//! SPEC S10: `target_text`, `target_unreadable`, `dialog`, `page_title`, …), `name` as an alias of `text`
//! for `launch_app`, and the corpus metadata `id`, `label`, `expected`, `blocked`, which are
//! ignored). Out: `{"tier","reasons":[…]}`; with `--mode`, also `decision` and, when the call is
//! blocked, the rendered `receipt` and console `notice`. A line that cannot be read — not UTF-8,
//! not JSON, an unknown tool — yields `{"error": "line N: …"}`, the other lines are still
//! classified, and the command exits 1 after the last line.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use phoneagent_protocol::AccessMode;
use phoneagent_safety::{Decision, Gate, GateInput, Lang, Tool, decide};
use serde::Deserialize;

use super::Global;

/// Safety subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SafetyCommand {
    /// JSON lines in (`tool`, `target_description`, `text`, `reason`, `task`, `sensitive`), JSON lines out (`tier`, `reasons`).
    Classify(ClassifyArgs),
}

/// Arguments of `safety classify`.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// Read JSON lines from FILE instead of stdin.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// A lexicon file (TOML) extending and overriding the built-in lexicons (see docs/safety.md).
    #[arg(long, env = "PHONE_AGENT_SAFETY_LEXICON", value_name = "FILE")]
    pub lexicon: Option<PathBuf>,
    /// Also decide each call under this access mode (off, wary, hard, reviewer, approve-for-me)
    /// and print the decision and, when blocked, the receipt.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<AccessMode>,
    /// Language of receipts and notices printed with --mode (zh or en).
    #[arg(long, default_value = "zh", value_name = "LANG")]
    pub lang: String,
}

/// One input line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    tool: String,
    #[serde(default)]
    target_description: Option<String>,
    #[serde(default, alias = "name")]
    text: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    sensitive: bool,
    #[serde(default)]
    confirm_irreversible: bool,
    #[serde(default)]
    target_is_password_field: Option<bool>,
    #[serde(default)]
    ocr_text: Option<String>,
    #[serde(default)]
    screen: Option<phoneagent_safety::ScreenReading>,
    // Corpus metadata, accepted and ignored so a labelled corpus can be piped in as is.
    #[serde(default, rename = "id")]
    _id: Option<serde_json::Value>,
    #[serde(default, rename = "label")]
    _label: Option<serde_json::Value>,
    #[serde(default, rename = "expected")]
    _expected: Option<serde_json::Value>,
    #[serde(default, rename = "blocked")]
    _blocked: Option<serde_json::Value>,
}

/// Run a safety subcommand.
pub async fn run(_g: &Global, c: SafetyCommand) -> anyhow::Result<u8> {
    match c {
        SafetyCommand::Classify(args) => classify(args),
    }
}

fn classify(args: ClassifyArgs) -> anyhow::Result<u8> {
    let lang: Lang = args.lang.parse()?;
    let gate = match &args.lexicon {
        Some(path) => Gate::with_user_lexicon(path)?,
        None => Gate::builtin()?,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let failures = match &args.input {
        Some(path) => {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open input file {}", path.display()))?;
            classify_lines(&gate, std::io::BufReader::new(f), &mut out, args.mode, lang)?
        }
        None => classify_lines(&gate, std::io::stdin().lock(), &mut out, args.mode, lang)?,
    };
    if failures > 0 {
        eprintln!(
            "error: {failures} input line(s) could not be classified; see the {{\"error\": …}} lines"
        );
        return Ok(1);
    }
    Ok(0)
}

fn parse_line(raw: &str) -> Result<GateInput, String> {
    if raw.trim().is_empty() {
        return Err("empty line; expected one JSON object per line, like {\"tool\":\"tap\",\"target_description\":\"确认支付\"}".into());
    }
    let line: Line = serde_json::from_str(raw).map_err(|e| {
        format!(
            "not a valid input object: {e}; expected fields tool, target_description, text, reason, task, sensitive"
        )
    })?;
    let tool: Tool = line
        .tool
        .parse()
        .map_err(|e: phoneagent_safety::Error| e.to_string())?;
    Ok(GateInput {
        tool,
        target_description: line.target_description,
        text: line.text,
        reason: line.reason,
        task: line.task,
        sensitive: line.sensitive,
        confirm_irreversible: line.confirm_irreversible,
        target_is_password_field: line.target_is_password_field,
        ocr_text: line.ocr_text,
        screen: line.screen,
    })
}

/// Classify every line of `reader`, writing one JSON line per input line to `out`. Returns the
/// number of lines that failed (each got an `{"error": …}` line naming its line number).
///
/// # Errors
/// Only I/O errors reading the input or writing the output.
fn classify_lines<R: BufRead, W: Write>(
    gate: &Gate,
    reader: R,
    out: &mut W,
    mode: Option<AccessMode>,
    lang: Lang,
) -> anyhow::Result<usize> {
    let mut failures = 0;
    for (i, bytes) in reader.split(b'\n').enumerate() {
        let n = i + 1;
        let mut bytes = bytes.with_context(|| format!("cannot read input line {n}"))?;
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let parsed = match String::from_utf8(bytes) {
            Ok(line) => parse_line(&line),
            Err(e) => Err(format!(
                "not UTF-8 (invalid byte at offset {}); save the input as UTF-8",
                e.utf8_error().valid_up_to()
            )),
        };
        let value = match parsed {
            Ok(input) => {
                let c = gate.classify(&input);
                let mut v = serde_json::json!({ "tier": c.tier, "reasons": c.reasons });
                if let Some(mode) = mode {
                    let d = decide(mode, &input, &c);
                    v["decision"] = serde_json::to_value(&d)?;
                    if let Decision::Warn { receipt }
                    | Decision::BlockedByTaskBoundary { receipt } = &d.decision
                    {
                        v["receipt"] = receipt.render(lang).into();
                        v["notice"] = receipt.notice(lang).into();
                    }
                }
                v
            }
            Err(msg) => {
                failures += 1;
                serde_json::json!({ "error": format!("line {n}: {msg}") })
            }
        };
        writeln!(out, "{value}").context("cannot write to stdout")?;
        out.flush().context("cannot write to stdout")?;
    }
    Ok(failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &str, mode: Option<AccessMode>) -> (Vec<serde_json::Value>, usize) {
        let gate = Gate::builtin().unwrap();
        let mut out = Vec::new();
        let failures = classify_lines(&gate, input.as_bytes(), &mut out, mode, Lang::En).unwrap();
        let lines = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines, failures)
    }

    #[test]
    fn one_output_line_per_input_line_with_errors_named_by_line() {
        let input = concat!(
            r#"{"tool":"tap","target_description":"确认支付"}"#,
            "\n",
            "not json\n",
            r#"{"tool":"tapp","target_description":"x"}"#,
            "\n",
            "\n",
            r#"{"tool":"type_text","text":"13800138000","reason":"enter phone","task":"登录","sensitive":false}"#,
            "\n",
            r#"{"tool":"swipe","sensitive":true}"#,
            "\n",
        );
        let (lines, failures) = run(input, None);
        assert_eq!(lines.len(), 6);
        assert_eq!(failures, 3);
        assert_eq!(lines[0]["tier"], "hard");
        assert_eq!(lines[0]["reasons"][0]["code"], "commit_irreversible");
        assert!(
            lines[1]["error"]
                .as_str()
                .unwrap()
                .starts_with("line 2: not a valid input object")
        );
        assert!(
            lines[2]["error"]
                .as_str()
                .unwrap()
                .contains("line 3: unknown tool \"tapp\"")
        );
        assert!(
            lines[3]["error"]
                .as_str()
                .unwrap()
                .starts_with("line 4: empty line")
        );
        assert_eq!(lines[4]["tier"], "hard");
        assert_eq!(lines[4]["reasons"][0]["code"], "credential_text");
        assert_eq!(lines[4]["reasons"][0]["evidence"], "[phone]");
        assert_eq!(lines[5], serde_json::json!({"tier": "none", "reasons": []}));
    }

    #[test]
    fn unknown_fields_are_errors_but_corpus_metadata_is_accepted() {
        let (lines, failures) = run(
            concat!(
                r#"{"tool":"tap","target":"确认支付"}"#,
                "\n",
                r#"{"id":"x","label":"benign","expected":"none","blocked":false,"tool":"tap","target_description":"Send feedback"}"#,
                "\n",
                r#"{"tool":"launch_app","name":"支付宝"}"#,
            ),
            None,
        );
        assert_eq!(failures, 1);
        assert!(
            lines[0]["error"]
                .as_str()
                .unwrap()
                .contains("unknown field `target`")
        );
        assert_eq!(lines[1]["tier"], "none");
        assert_eq!(lines[2]["tier"], "soft");
        assert_eq!(lines[2]["reasons"][0]["code"], "payment_app_launch");
    }

    /// Issue 11: one non-UTF-8 line is an error for that line; the other lines are classified.
    #[test]
    fn a_non_utf8_line_is_an_error_for_that_line_only() {
        let mut input = Vec::new();
        input.extend_from_slice(r#"{"tool":"tap","target_description":"确认支付"}"#.as_bytes());
        input.extend_from_slice(b"\n{\"tool\":\"tap\",\"target_description\":\"\xff\xfe\"}\r\n");
        input
            .extend_from_slice(r#"{"tool":"tap","target_description":"Send feedback"}"#.as_bytes());
        input.push(b'\n');
        let gate = Gate::builtin().unwrap();
        let mut out = Vec::new();
        let failures = classify_lines(&gate, &input[..], &mut out, None, Lang::En).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(failures, 1);
        assert_eq!(lines[0]["tier"], "hard");
        assert!(
            lines[1]["error"]
                .as_str()
                .unwrap()
                .starts_with("line 2: not UTF-8"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2]["tier"], "none");
    }

    /// Issue 11: a coordinates-only tap with the screen reading's target text is classified.
    #[test]
    fn screen_reading_is_a_source() {
        let (lines, failures) = run(
            concat!(
                r#"{"tool":"tap","task":"查看通知","screen":{"target_text":"确认支付"}}"#,
                "\n",
                r#"{"tool":"tap","task":"Check my orders","screen":{"target_text":"Yes","dialog":{"title":"Cancel your order?","body":"This cannot be undone.","buttons":["No","Yes"],"target_is_primary":true}}}"#,
                "\n",
                r#"{"tool":"tap","task":"查看通知"}"#,
            ),
            Some(AccessMode::Hard),
        );
        assert_eq!(failures, 0);
        assert_eq!(lines[0]["tier"], "hard");
        assert_eq!(lines[0]["reasons"][0]["source"], "screen_target");
        assert_eq!(lines[0]["decision"]["decision"], "needs_approval");
        assert_eq!(lines[1]["tier"], "hard");
        assert_eq!(lines[1]["reasons"][0]["code"], "dialog_confirm");
        assert_eq!(
            lines[2]["tier"], "soft",
            "no evidence is not evidence of safety"
        );
    }

    #[test]
    fn mode_adds_the_decision_and_receipt() {
        let (lines, _) = run(
            r#"{"tool":"tap","target_description":"Place order","reason":"buy it"}"#,
            Some(AccessMode::Wary),
        );
        assert_eq!(lines[0]["decision"]["decision"], "warn");
        assert!(
            lines[0]["receipt"]
                .as_str()
                .unwrap()
                .starts_with("⚠️ Blocked (not executed): tap → “Place order”")
        );
        assert_eq!(
            lines[0]["notice"],
            "[safety] tap: commit_irreversible “Place order” — blocked, waiting for model confirmation"
        );
        let (lines, _) = run(
            r#"{"tool":"tap","target_description":"Place order"}"#,
            Some(AccessMode::Hard),
        );
        assert_eq!(lines[0]["decision"]["decision"], "needs_approval");
        assert_eq!(lines[0]["decision"]["route"], "human");
    }
}
