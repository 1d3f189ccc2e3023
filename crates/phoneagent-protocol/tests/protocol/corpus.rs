//! The corpus: `tests/corpus/<name>.txt` is one model output, `<name>.json` says which front end
//! reads it (`do` or `tools`), optional parse options, and the expected action(s) or rejection.

use std::path::{Path, PathBuf};

use phoneagent_protocol::{
    Action, ParseError, ParseOptions, extract_tool_calls, parse_do, parse_tool_calls,
};
use serde_json::{Value, json};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn options(v: Option<&Value>) -> ParseOptions {
    let mut o = ParseOptions::default();
    let Some(v) = v else { return o };
    if let Some(x) = v.get("coord_max_x").and_then(Value::as_f64) {
        o.coord_max_x = x;
    }
    if let Some(y) = v.get("coord_max_y").and_then(Value::as_f64) {
        o.coord_max_y = y;
    }
    if let Some(b) = v.get("app_launcher").and_then(Value::as_bool) {
        o.app_launcher = b;
    }
    if let Some(t) = v.get("task").and_then(Value::as_str) {
        o.task = Some(t.to_string());
    }
    o
}

/// The expected action, with the flags defaulted to false.
fn expected_action(v: &Value) -> Action {
    let mut v = v.clone();
    let obj = v.as_object_mut().expect("expected action is an object");
    for flag in ["confirm_irreversible", "sensitive"] {
        obj.entry(flag).or_insert(json!(false));
    }
    serde_json::from_value(v).expect("expected action deserializes")
}

/// Checks one result against `{"action": …}` or `{"error": {kind, line?, column?, field?,
/// message_contains?}}`; returns a description of the mismatch.
fn check(result: &Result<Action, ParseError>, expect: &Value) -> Option<String> {
    match (result, expect.get("action"), expect.get("error")) {
        (Ok(got), Some(want), _) => {
            let want = expected_action(want);
            (got != &want).then(|| format!("action differs:\n  got  {got:?}\n  want {want:?}"))
        }
        (Err(e), Some(_), _) => Some(format!("rejected, expected acceptance: {e:?}")),
        (Ok(got), None, Some(_)) => Some(format!("accepted, expected rejection: {got:?}")),
        (Err(e), None, Some(want)) => check_error(e, want),
        _ => Some("the .json has neither action nor error".to_string()),
    }
}

fn check_error(e: &ParseError, want: &Value) -> Option<String> {
    let mut problems = Vec::new();
    if want["kind"].as_str() != Some(e.kind.as_str()) {
        problems.push(format!("kind {} != {}", e.kind, want["kind"]));
    }
    for (key, got) in [
        ("line", e.position.map(|p| p.line)),
        ("column", e.position.map(|p| p.column)),
    ] {
        if let Some(w) = want.get(key).and_then(Value::as_u64)
            && got != usize::try_from(w).ok()
        {
            problems.push(format!("{key} {got:?} != {w}"));
        }
    }
    if let Some(f) = want.get("field").and_then(Value::as_str)
        && e.field.as_deref() != Some(f)
    {
        problems.push(format!("field {:?} != {f:?}", e.field));
    }
    if let Some(m) = want.get("message_contains").and_then(Value::as_str)
        && !e.message.contains(m)
    {
        problems.push(format!("message lacks {m:?}"));
    }
    if e.message.trim().is_empty() {
        problems.push("empty message".to_string());
    }
    (!problems.is_empty()).then(|| format!("{}: {e:?}", problems.join("; ")))
}

fn run_case(text: &str, meta: &Value) -> Option<String> {
    let opts = options(meta.get("options"));
    let expect = &meta["expect"];
    match meta["format"].as_str() {
        Some("do") => check(&parse_do(text, &opts), expect),
        Some("tools") => {
            let doc: Value = match serde_json::from_str(text) {
                Ok(d) => d,
                Err(e) => return Some(format!("the .txt is not JSON: {e}")),
            };
            let calls = match extract_tool_calls(&doc) {
                Ok(c) => c,
                Err(e) => return check(&Err(e), expect),
            };
            let Some(want) = expect.get("results").and_then(Value::as_array) else {
                return Some(format!("expected an extraction error, got {calls:?}"));
            };
            let got = parse_tool_calls(&calls, &opts);
            if got.len() != want.len() {
                return Some(format!("{} results, expected {}", got.len(), want.len()));
            }
            let problems: Vec<String> = got
                .iter()
                .zip(want)
                .enumerate()
                .filter_map(|(i, (g, w))| check(g, w).map(|p| format!("call {i}: {p}")))
                .collect();
            (!problems.is_empty()).then(|| problems.join("\n"))
        }
        other => Some(format!("unknown format {other:?}")),
    }
}

#[test]
fn corpus_of_model_outputs() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    let mut failures = Vec::new();
    let (mut accepted, mut rejected) = (0, 0);
    for meta_path in &names {
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(meta_path).expect("read .json"))
                .expect(".json parses");
        let text = std::fs::read_to_string(meta_path.with_extension("txt")).expect("read .txt");
        let expect = &meta["expect"];
        let accepting = expect.get("action").is_some()
            || expect
                .get("results")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().all(|x| x.get("action").is_some()));
        if accepting {
            accepted += 1;
        } else {
            rejected += 1;
        }
        if let Some(problem) = run_case(&text, &meta) {
            let name = meta_path.file_stem().unwrap_or_default().to_string_lossy();
            failures.push(format!("{name}: {problem}"));
        }
    }
    assert!(
        accepted >= 20 && rejected >= 20,
        "the corpus needs at least 20 accepted and 20 rejected cases ({accepted}/{rejected})"
    );
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}
