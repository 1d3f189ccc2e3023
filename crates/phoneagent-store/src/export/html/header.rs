//! The run's header (SPEC T2, U6): task, outcome, duration, device, model, tokens and cost.

use std::fmt::Write as _;

use serde_json::Value;

use super::{e, fact, fmt_cost, fmt_tokens, fstr, human_duration, status_class, yes_no};
use crate::export::trajectory::RunView;

pub(super) fn header_html(out: &mut String, v: &RunView) {
    let r = &v.run;
    let status = v.status();
    out.push_str(r#"<header class="run">"#);
    let _ = write!(
        out,
        r#"<span class="badge {}">{}</span>"#,
        status_class(status),
        e(status.as_str())
    );
    if v.started
        .as_ref()
        .and_then(|s| s.get("demo"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.push_str(r#"<span class="badge info demo">demo on the virtual phone</span>"#);
    }
    let _ = write!(out, "<h1>{}</h1><dl class=\"facts\">", e(&r.task));
    fact(
        out,
        "Outcome",
        &format!(
            "{}{}",
            status.as_str(),
            v.termination_code
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ),
    );
    fact(
        out,
        "Duration",
        &r.duration_ms()
            .map(human_duration)
            .unwrap_or_else(|| "still running".into()),
    );
    fact(
        out,
        "Started",
        &crate::export::rfc3339(r.started_ms).unwrap_or_else(|| r.started_ms.to_string()),
    );
    let device = r
        .device_serial
        .clone()
        .or_else(|| v.started_str("serial").map(str::to_owned))
        .unwrap_or_else(|| "—".into());
    fact(out, "Device", &device);
    let model = r
        .model
        .clone()
        .or_else(|| v.started_str("model").map(str::to_owned))
        .unwrap_or_else(|| "—".into());
    let profile = r
        .model_profile
        .clone()
        .or_else(|| v.started_str("profile").map(str::to_owned));
    fact(
        out,
        "Model",
        &match profile {
            Some(p) if p != model => format!("{model} ({p})"),
            _ => model,
        },
    );
    fact(out, "Access mode", r.access_mode.as_str());
    fact(
        out,
        "Steps",
        &v.steps.iter().filter(|s| s.step > 0).count().to_string(),
    );
    fact(
        out,
        "Tokens",
        &format!(
            "{} in · {} out",
            fmt_tokens(v.usage.prompt_tokens),
            fmt_tokens(v.usage.completion_tokens)
        ),
    );
    fact(out, "Cost", &fmt_cost(v.usage.cost_usd));
    fact(out, "Model calls", &v.usage.calls.to_string());
    fact(
        out,
        "Recoveries",
        &format!("{} hard · {} soft", v.hard_failures, v.soft_replans),
    );
    if let Some(root) = &v.root_error {
        fact(out, "Root error", root);
    }
    out.push_str("</dl>");
    if let Some(m) = v.final_message.as_ref().filter(|m| !m.is_empty()) {
        let _ = write!(out, r#"<p class="final">{}</p>"#, e(m));
    }
    let p = &v.policy;
    let _ = write!(
        out,
        r#"<p class="policy">Policy: observation {} · Android semantics visible to the model: {} · deterministic app launch: {} · external API actions: {} · run {}</p>"#,
        e(&p.policy_observation),
        yes_no(p.android_semantics_visible_to_model),
        yes_no(p.deterministic_app_launch),
        yes_no(p.external_api_action),
        e(&r.id.to_string())
    );
    if let Some(c) = v.calibrations.last() {
        let _ = write!(
            out,
            r#"<p class="policy">Coordinates: {} ({}) — {}</p>"#,
            e(&fstr(c, "space")),
            e(&fstr(c, "method")),
            e(&fstr(c, "detail"))
        );
    }
    if !v.usage_by_role.is_empty() {
        out.push_str("<details><summary>tokens by role</summary><table><tr><th>role</th><th>calls</th><th>prompt</th><th>completion</th><th>cost</th></tr>");
        for (role, u) in &v.usage_by_role {
            let _ = write!(
                out,
                r#"<tr><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                e(role),
                u.calls,
                fmt_tokens(u.prompt_tokens),
                fmt_tokens(u.completion_tokens),
                e(&fmt_cost(u.cost_usd))
            );
        }
        out.push_str("</table></details>");
    }
    out.push_str("</header>");
}
