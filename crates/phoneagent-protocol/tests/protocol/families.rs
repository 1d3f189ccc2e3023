//! The model-family corpus (SPEC M7): `tests/data/family_<name>.jsonl`, one real-shaped answer
//! per row with its `source`, and the expected action (native coordinates) or rejection kind.
//! Plus: the parsers never panic, and render → parse round trips in every family.
//!
//! Row fields: `id`, `source`, `model` (picks the coordinate convention), optional `image`
//! `[w, h]` (default 1080×2400), `launcher`, `task`, `answer`, and either `reject` (a
//! `ParseErrorKind` name) or `expect` with `action` (the `ActionKind` name) and any of `point`,
//! `start`, `end` (native integers), `finger` (swipe direction), `text`, `message`,
//! `confirm`, `confirm_irreversible`, `sensitive`, `seconds`, `duration_ms`, `reason_contains`.

use phoneagent_protocol::family::{FamilyAdapter, ModelFamily};
use phoneagent_protocol::{Action, ActionKind, ModelPoint, ParseOptions, SwipeDirection};
use proptest::prelude::*;
use serde_json::Value;

fn data(name: &str) -> String {
    let p = format!(
        "{}/tests/data/family_{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn native(ad: &FamilyAdapter, p: ModelPoint, image: (u32, u32)) -> [i64; 2] {
    let (x, y) = ad.coords.from_frozen(p, image).unwrap();
    [x, y]
}

fn check_row(family: ModelFamily, row: &Value) -> Result<(), String> {
    let id = row["id"].as_str().unwrap_or("?");
    let model = row["model"].as_str().ok_or("row has no model")?;
    if row["source"].as_str().is_none_or(str::is_empty) {
        return Err(format!("{id}: row has no source"));
    }
    let ad = FamilyAdapter::for_model(family, model).ok_or("generic has no adapter")?;
    let image = row["image"]
        .as_array()
        .map(|a| (a[0].as_u64().unwrap() as u32, a[1].as_u64().unwrap() as u32))
        .unwrap_or((1080, 2400));
    let mut opts =
        ParseOptions::default().with_app_launcher(row["launcher"].as_bool().unwrap_or(false));
    if let Some(t) = row["task"].as_str() {
        opts = opts.with_task(t);
    }
    let answer = row["answer"].as_str().ok_or("row has no answer")?;
    let got = ad.parse(answer, image, &opts);
    if let Some(kind) = row["reject"].as_str() {
        return match got {
            Err(e) if e.kind.as_str() == kind => {
                if e.message.trim().is_empty() {
                    Err(format!("{id}: empty error message"))
                } else {
                    Ok(())
                }
            }
            Err(e) => Err(format!(
                "{id}: expected rejection {kind}, got {} ({e})",
                e.kind.as_str()
            )),
            Ok(a) => Err(format!("{id}: expected rejection {kind}, got {a:?}")),
        };
    }
    let exp = &row["expect"];
    let a: Action = got.map_err(|e| format!("{id}: rejected ({}): {e}", e.kind.as_str()))?;
    let fail = |what: &str, want: &Value, have: String| {
        Err(format!(
            "{id}: {what}: expected {want}, got {have} in {a:?}"
        ))
    };
    if exp["action"].as_str() != Some(a.kind.name()) {
        return fail("action", &exp["action"], a.kind.name().into());
    }
    let point_of = |k: &ActionKind| match k {
        ActionKind::Tap { element }
        | ActionKind::DoubleTap { element }
        | ActionKind::LongPress { element, .. } => Some(*element),
        _ => None,
    };
    if let Some(p) = exp.get("point") {
        let have = point_of(&a.kind).map(|e| native(&ad, e, image));
        if have.map(|h| serde_json::json!(h)) != Some(p.clone()) {
            return fail("point", p, format!("{have:?}"));
        }
    }
    if let ActionKind::Swipe { start, end, .. } = &a.kind {
        for (k, v) in [("start", start), ("end", end)] {
            if let Some(p) = exp.get(k) {
                let have = native(&ad, *v, image);
                if serde_json::json!(have) != *p {
                    return fail(k, p, format!("{have:?}"));
                }
            }
        }
        if let Some(d) = exp.get("finger") {
            let have = SwipeDirection::of(*start, *end).map(|d| d.as_str().to_string());
            if have.as_deref() != d.as_str() {
                return fail("finger", d, format!("{have:?}"));
            }
        }
    }
    let text = match &a.kind {
        ActionKind::Type { text } => Some(text.clone()),
        ActionKind::LaunchApp { name } => Some(name.clone()),
        _ => None,
    };
    if let Some(t) = exp.get("text")
        && text.as_deref() != t.as_str()
    {
        return fail("text", t, format!("{text:?}"));
    }
    let message = match &a.kind {
        ActionKind::Finish { message, .. }
        | ActionKind::TakeOver { message }
        | ActionKind::Note { message, .. } => Some(message.clone()),
        ActionKind::AskUser { question } => Some(question.clone()),
        _ => None,
    };
    if let Some(m) = exp.get("message")
        && message.as_deref() != m.as_str()
    {
        return fail("message", m, format!("{message:?}"));
    }
    let confirm = matches!(a.kind, ActionKind::Finish { confirm: true, .. });
    if exp.get("confirm").and_then(Value::as_bool).unwrap_or(false) != confirm {
        return fail("confirm", &exp["confirm"], confirm.to_string());
    }
    // Flags are false unless the row says so: a parser never invents a confirmation.
    for (k, have) in [
        ("confirm_irreversible", a.confirm_irreversible),
        ("sensitive", a.sensitive),
    ] {
        if exp.get(k).and_then(Value::as_bool).unwrap_or(false) != have {
            return fail(k, &exp[k], have.to_string());
        }
    }
    if let Some(s) = exp.get("seconds") {
        let have = match a.kind {
            ActionKind::Wait { seconds } => Some(seconds),
            _ => None,
        };
        if have != s.as_f64() {
            return fail("seconds", s, format!("{have:?}"));
        }
    }
    if let Some(d) = exp.get("duration_ms") {
        let have = match a.kind {
            ActionKind::LongPress { duration_ms, .. } => duration_ms,
            _ => None,
        };
        if have.map(u64::from) != d.as_u64() {
            return fail("duration_ms", d, format!("{have:?}"));
        }
    }
    if let Some(r) = exp.get("reason_contains").and_then(Value::as_str)
        && !a.reason.as_deref().unwrap_or("").contains(r)
    {
        return fail("reason", &exp["reason_contains"], format!("{:?}", a.reason));
    }
    Ok(())
}

fn run_corpus(family: ModelFamily) {
    let text = data(family.as_str());
    let mut failures = Vec::new();
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        n += 1;
        if let Err(e) = check_row(family, &row) {
            failures.push(format!("line {}: {e}", i + 1));
        }
    }
    assert!(n >= 15, "the {family} corpus has only {n} rows");
    assert!(
        failures.is_empty(),
        "{} of {n} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn autoglm_corpus() {
    run_corpus(ModelFamily::Autoglm);
}

#[test]
fn ui_tars_corpus() {
    run_corpus(ModelFamily::UiTars);
}

#[test]
fn qwen_vl_corpus() {
    run_corpus(ModelFamily::QwenVl);
}

fn adapters() -> Vec<FamilyAdapter> {
    [
        (ModelFamily::Autoglm, "autoglm-phone-9b"),
        (ModelFamily::UiTars, "UI-TARS-1.5-7B"),
        (ModelFamily::UiTars, "doubao-1-5-ui-tars-250428"),
        (ModelFamily::QwenVl, "Qwen2.5-VL-7B-Instruct"),
        (ModelFamily::QwenVl, "Qwen3-VL-8B-Instruct"),
    ]
    .into_iter()
    .filter_map(|(f, m)| FamilyAdapter::for_model(f, m))
    .collect()
}

/// Actions every family can express, with points in the frozen space of a 1080×2400 image.
fn sample_actions(ad: &FamilyAdapter) -> Vec<Action> {
    let image = (1080, 2400);
    let pt = |u: f64, v: f64| {
        let (x, y) = ad.coords.from_canonical(u, v, image).unwrap();
        ad.coords
            .to_frozen(
                ModelPoint {
                    x: x as f64,
                    y: y as f64,
                },
                image,
            )
            .unwrap()
    };
    let mut tap = Action::new(ActionKind::Tap {
        element: pt(0.5, 0.9),
    });
    tap.confirm_irreversible = true;
    vec![
        Action::new(ActionKind::Tap {
            element: pt(0.25, 0.1),
        }),
        tap,
        Action::new(ActionKind::LongPress {
            element: pt(0.5, 0.5),
            duration_ms: None,
        }),
        Action::new(ActionKind::Swipe {
            start: pt(0.5, 0.8),
            end: pt(0.5, 0.2),
            duration_ms: None,
        }),
        Action::new(ActionKind::Type {
            text: "它说 'hi'\n\"ok\" \\".into(),
        }),
        Action::new(ActionKind::Back),
        Action::new(ActionKind::Home),
        Action::new(ActionKind::Finish {
            message: "done".into(),
            confirm: true,
        }),
    ]
}

#[test]
fn render_then_parse_round_trips() {
    for ad in adapters() {
        for a in sample_actions(&ad) {
            let text = ad.render(&a, (1080, 2400));
            let back = ad
                .parse(&text, (1080, 2400), &ParseOptions::default())
                .unwrap_or_else(|e| panic!("{:?} rendered {text:?}, parse failed: {e}", ad.family));
            let mut back = back;
            back.reason = None;
            match (&a.kind, &back.kind) {
                (
                    ActionKind::Finish { confirm: c1, .. },
                    ActionKind::Finish { confirm: c2, .. },
                ) => {
                    assert_eq!(c1, c2, "{text}");
                }
                _ => assert_eq!(back, a, "{:?}: {text}", ad.family),
            }
        }
    }
}

#[test]
fn confirm_instructions_parse_back_with_the_flag() {
    for ad in adapters() {
        let a = &sample_actions(&ad)[0];
        let s = ad.confirm_instruction(a, (1080, 2400));
        let call = s.split_once(": ").map(|x| x.1).unwrap();
        let back = ad
            .parse(call, (1080, 2400), &ParseOptions::default())
            .unwrap();
        assert!(back.confirm_irreversible, "{:?}: {call}", ad.family);
        assert_eq!(back.kind, a.kind);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn parsers_never_panic(s in "\\PC{0,200}") {
        for ad in adapters() {
            let _ = ad.parse(&s, (1080, 2400), &ParseOptions::default());
            let _ = ad.parse_tool_call("mobile_use", &s, (1080, 2400), &ParseOptions::default());
        }
    }

    #[test]
    fn parsers_never_panic_on_near_misses(
        prefix in prop::sample::select(vec![
            "Action: click(point='<point>", "Action: click(start_box='<|box_start|>(",
            "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [",
            "<think>x</think><answer>do(action=\"Tap\", element=[", "Thought: a\nAction: type(content='",
            "<thinking>", "Action: scroll(direction='",
        ]),
        tail in "[0-9 ,()\\[\\]'\"<>/|a-z_=}{:\\\\\n，（）]{0,40}",
    ) {
        let s = format!("{prefix}{tail}");
        for ad in adapters() {
            let _ = ad.parse(&s, (1080, 2400), &ParseOptions::default());
        }
    }
}
