//! One card per step (SPEC T2, U6): the title with the action, the model's screen description
//! and reason, gate decisions and receipts, human requests, freshness, dispatch, verification,
//! recovery, tokens and the model's raw answer.

use std::fmt::Write as _;

use serde_json::Value;

use super::images::{Images, shot_html};
use super::{
    HtmlOptions, e, field, fmt_cost, fmt_tokens, fstr, human_duration, js, section, truncate,
};
use crate::error::Result;
use crate::export::trajectory::{RunView, StepView};
use crate::store::Store;

/// Short text form of an action for the step title (`tap (540, 1200)`, `type "…"`).
fn action_label(s: &StepView) -> String {
    let Some(a) = &s.action else {
        return s.action_type.clone().unwrap_or_default();
    };
    let kind = fstr(a, "action");
    let num = |v: &Value| match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e9 => format!("{f:.0}"),
        Some(f) => format!("{f:.1}"),
        None => js(v),
    };
    let pt = |k: &str| {
        field(a, k)
            .map(|p| format!("({}, {})", num(&p["x"]), num(&p["y"])))
            .unwrap_or_default()
    };
    let dev = |i: usize| {
        s.device_points
            .get(i)
            .map(|p| format!(" → px {:.0},{:.0}", p[0], p[1]))
            .unwrap_or_default()
    };
    match kind.as_str() {
        "tap" | "double_tap" | "long_press" => format!("{kind} {}{}", pt("element"), dev(0)),
        "swipe" => format!("swipe {} → {}", pt("start"), pt("end")),
        "type" => format!("type \"{}\"", truncate(&fstr(a, "text"), 60)),
        "wait" => format!("wait {} s", fstr(a, "seconds")),
        "take_over" => format!("take_over: {}", truncate(&fstr(a, "message"), 80)),
        "ask_user" => format!("ask_user: {}", truncate(&fstr(a, "question"), 80)),
        "note" => "note".into(),
        "finish" => {
            if a.get("confirm").and_then(Value::as_bool).unwrap_or(false) {
                "finish (confirm)".into()
            } else {
                "finish".into()
            }
        }
        "launch_app" => format!("launch_app \"{}\"", fstr(a, "name")),
        other => other.to_owned(),
    }
}

fn gate_html(s: &StepView) -> String {
    let mut b = String::new();
    if s.gate.is_empty() {
        return b;
    }
    b.push_str("<ul>");
    for g in &s.gate {
        let outcome = fstr(g, "outcome");
        let cls = match outcome.as_str() {
            "allow" | "approved" => "ok",
            "warned" | "needs_approval" => "warn",
            _ => "bad",
        };
        let tier = fstr(g, "tier");
        let tier_cls = match tier.as_str() {
            "hard" => "bad",
            "soft" | "reviewer" => "warn",
            _ => "",
        };
        let reasons: Vec<String> = g
            .get("reasons")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(js).collect())
            .unwrap_or_default();
        let _ = write!(
            b,
            r#"<li><span class="chip {cls}">{}</span><span class="chip {tier_cls}">tier {}</span> {} · mode {} · by {} · {} ms{}"#,
            e(&outcome),
            e(&tier),
            e(&fstr(g, "tool")),
            e(&fstr(g, "mode")),
            e(&fstr(g, "decided_by")),
            e(&fstr(g, "latency_ms")),
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" · reasons: {}", e(&reasons.join(", ")))
            }
        );
        if let Some(r) = field(g, "receipt") {
            let _ = write!(b, "<pre>{}</pre>", e(&js(r)));
        }
        b.push_str("</li>");
    }
    b.push_str("</ul>");
    b
}

fn human_html(s: &StepView) -> String {
    let mut b = String::new();
    if s.human.is_empty() {
        return b;
    }
    b.push_str("<ul>");
    for h in &s.human {
        let kind = fstr(h, "kind");
        if kind == "human_requested" {
            let req = h.get("request").cloned().unwrap_or_default();
            let t = fstr(&req, "type");
            let what = match t.as_str() {
                "approval" => format!(
                    "approval asked for {} on “{}” (tier {})",
                    fstr(&req, "tool"),
                    fstr(&req, "target"),
                    fstr(&req, "tier")
                ),
                "ask_user" => format!("question: {}", fstr(&req, "question")),
                "take_over" => format!("take over asked: {}", fstr(&req, "message")),
                other => other.to_owned(),
            };
            let _ = write!(
                b,
                r#"<li><span class="chip info">asked</span> {}</li>"#,
                e(&what)
            );
        } else {
            let resp = h.get("response").cloned().unwrap_or_default();
            let t = fstr(&resp, "type");
            let cls = match t.as_str() {
                "approve" | "hand_back" => "ok",
                "reject" => "bad",
                _ => "info",
            };
            let detail = match t.as_str() {
                "answer" => format!(": {}", fstr(&resp, "text")),
                "reject" => field(&resp, "note")
                    .map(|n| format!(": {}", js(n)))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let _ = write!(
                b,
                r#"<li><span class="chip {cls}">{}</span>{} by {} after {}</li>"#,
                e(&t),
                e(&detail),
                e(&fstr(h, "decided_by")),
                e(&human_duration(
                    h.get("latency_ms").and_then(Value::as_i64).unwrap_or(0)
                ))
            );
        }
    }
    b.push_str("</ul>");
    b
}

fn execution_html(s: &StepView) -> String {
    let mut b = String::new();
    let f = &s.facts;
    if !s.freshness.is_empty() {
        b.push_str("<p>");
        for fr in &s.freshness {
            let o = fstr(fr, "outcome");
            let cls = if o == "stale" { "warn" } else { "ok" };
            let _ = write!(b, r#"<span class="chip {cls}">freshness: {}</span>"#, e(&o));
        }
        b.push_str("</p>");
    }
    if let Some(d) = &s.dispatch {
        let ok = f.command_ok.unwrap_or(false);
        let _ = write!(
            b,
            r#"<p><span class="chip {}">command {}</span> {} in {} ms{}</p>"#,
            if ok { "ok" } else { "bad" },
            if ok { "ok" } else { "failed" },
            e(&fstr(d, "action_type")),
            e(&fstr(d, "duration_ms")),
            field(d, "message")
                .map(|m| format!(" — {}", e(&js(m))))
                .unwrap_or_default()
        );
    } else if s.action.is_some() {
        b.push_str(r#"<p><span class="chip">not dispatched</span></p>"#);
    }
    if let Some(v) = &s.verification {
        let eff = f.observable_effect.unwrap_or(false);
        let frac = v
            .get("changed_fraction")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let _ = write!(
            b,
            r#"<p><span class="chip {}">{}</span> {:.1}% of the screen changed</p>"#,
            if eff { "ok" } else { "warn" },
            if eff {
                "visible effect"
            } else {
                "no visible effect"
            },
            frac * 100.0
        );
    }
    if !f.warnings.is_empty() {
        b.push_str("<p>");
        for w in &f.warnings {
            let _ = write!(b, r#"<span class="chip warn">{}</span>"#, e(w));
        }
        b.push_str("</p>");
    }
    for r in &s.recovery {
        let _ = write!(
            b,
            r#"<p><span class="chip warn">recovery: {}</span> {} — {} (hard {}, soft {})</p>"#,
            e(&fstr(r, "outcome")),
            e(&fstr(r, "code")),
            e(&fstr(r, "detail")),
            e(&fstr(r, "hard_failures")),
            e(&fstr(r, "soft_replans"))
        );
    }
    for p in &s.protocol_rejections {
        let _ = write!(
            b,
            r#"<p><span class="chip bad">answer rejected ({})</span> attempt {}</p><pre>{}</pre>"#,
            e(&fstr(p, "error_kind")),
            e(&fstr(p, "attempt")),
            e(&fstr(p, "message"))
        );
    }
    if let Some(root) = &f.root_error {
        let _ = write!(b, r#"<p class="muted">root error: {}</p>"#, e(root));
    }
    b
}

fn other_html(s: &StepView) -> String {
    let mut b = String::new();
    for o in &s.other {
        let kind = fstr(o, "kind");
        let line = match kind.as_str() {
            "note" => {
                let mut t = format!("note: {}", fstr(o, "message"));
                if let Some(items) = o.get("task_board").and_then(Value::as_array) {
                    for it in items {
                        let done = it.get("done").and_then(Value::as_bool).unwrap_or(false);
                        let _ = write!(
                            t,
                            "\n  {} {}",
                            if done { "☑" } else { "☐" },
                            fstr(it, "text")
                        );
                    }
                }
                t
            }
            "tool_result" => format!(
                "result to the model ({}, {}): {}",
                fstr(o, "tool"),
                fstr(o, "status"),
                fstr(o, "text")
            ),
            "finish_review" => format!("finish review package:\n{}", fstr(o, "package")),
            "finish_rejected" => format!(
                "finish rejected by {}: {}",
                fstr(o, "by"),
                fstr(o, "message")
            ),
            "finish_verifier" => format!(
                "finish verifier: {} — {}",
                fstr(o, "verdict"),
                fstr(o, "reason")
            ),
            "device_lost" => format!("device lost ({}): {}", fstr(o, "serial"), fstr(o, "detail")),
            "device_restored" => format!(
                "device back ({}) after {}",
                fstr(o, "serial"),
                human_duration(o.get("waited_ms").and_then(Value::as_i64).unwrap_or(0))
            ),
            "guard_active" => format!("guard active: {}", fstr(o, "guard")),
            "model_fallback" => format!(
                "model fallback for {}: {} ({})",
                fstr(o, "role"),
                fstr(o, "used"),
                fstr(o, "reason")
            ),
            "warning" => format!("warning {}: {}", fstr(o, "code"), fstr(o, "message")),
            other => other.to_owned(),
        };
        let _ = write!(b, "<pre>{}</pre>", e(&truncate(&line, 4000)));
    }
    b
}

pub(super) fn step_html(
    out: &mut String,
    view: &RunView,
    store: &Store,
    images: &mut Images,
    s: &StepView,
    opts: &HtmlOptions,
) -> Result<()> {
    let _ = write!(out, r#"<article class="step" id="step-{}">"#, s.step);
    shot_html(out, store, images, s, opts)?;
    out.push_str("<div class=\"body\">");
    let offset = s.started_ms.saturating_sub(view.run.started_ms);
    let title = if s.step == 0 {
        "Before the first step".to_owned()
    } else {
        format!("Step {}", s.step)
    };
    let mut chips = String::new();
    let f = &s.facts;
    if f.dispatched {
        match f.command_ok {
            Some(true) => chips.push_str(r#"<span class="chip ok">ok</span>"#),
            _ => chips.push_str(r#"<span class="chip bad">command failed</span>"#),
        }
    }
    if f.recovery_needed {
        chips.push_str(r#"<span class="chip warn">recovery</span>"#);
    }
    let label = action_label(s);
    let _ = write!(
        out,
        r#"<h2>{}{}{}<time>+{}</time></h2>"#,
        e(&title),
        if label.is_empty() {
            String::new()
        } else {
            format!(r#" <span class="act">{}</span>"#, e(&label))
        },
        chips,
        e(&human_duration(offset))
    );
    if let Some(a) = &s.action {
        let desc = fstr(a, "screen_description");
        if !desc.is_empty() {
            section(out, "Screen", &format!("<p>{}</p>", e(&desc)));
        }
        let reason = fstr(a, "reason");
        if !reason.is_empty() {
            section(out, "Reason", &format!("<p>{}</p>", e(&reason)));
        }
        let target = fstr(a, "target_description");
        if !target.is_empty() {
            section(out, "Target", &format!("<p>{}</p>", e(&target)));
        }
        match fstr(a, "action").as_str() {
            "type" => section(out, "Text", &format!("<pre>{}</pre>", e(&fstr(a, "text")))),
            "finish" => section(
                out,
                "Finish message",
                &format!("<p>{}</p>", e(&fstr(a, "message"))),
            ),
            _ => {}
        }
    }
    section(out, "Safety gate", &gate_html(s));
    section(out, "Human", &human_html(s));
    section(out, "Execution", &execution_html(s));
    section(out, "Events", &other_html(s));
    if s.usage.calls > 0 {
        let u = &s.usage;
        section(
            out,
            "Model",
            &format!(
                r#"<p class="muted">{} call{} · {} prompt + {} completion tokens · {} · {}</p>"#,
                u.calls,
                if u.calls == 1 { "" } else { "s" },
                fmt_tokens(u.prompt_tokens),
                fmt_tokens(u.completion_tokens),
                e(&fmt_cost(u.cost_usd)),
                e(&human_duration(i64::try_from(u.latency_ms).unwrap_or(0)))
            ),
        );
    }
    if let Some(raw) = step_model_answer(view, s.step) {
        let _ = write!(
            out,
            "<details><summary>model answer</summary><pre>{}</pre></details>",
            e(&truncate(&raw, 8000))
        );
    }
    out.push_str("</div></article>");
    Ok(())
}

/// The last planning answer of the actor in this step (content, with reasoning when separate).
fn step_model_answer(view: &RunView, step: u32) -> Option<String> {
    view.events
        .iter()
        .rev()
        .filter(|ev| ev.kind == "model_call" && ev.step() == step)
        .find(|ev| fstr(&ev.payload, "role") == "actor")
        .map(|ev| {
            let content = fstr(&ev.payload, "content");
            match field(&ev.payload, "reasoning") {
                Some(r) => format!("<think>{}</think>\n{content}", js(r)),
                None => content,
            }
        })
        .filter(|s| !s.is_empty())
}
