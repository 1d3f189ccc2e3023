//! Human-readable timeline lines for the terminal, one per interesting event.

use phoneagent_protocol::event::{GateOutcome, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{ActionKind, AgentEvent, EventEnvelope};

/// Render one event as a timeline line, or `None` for events the terminal view skips.
pub fn line(env: &EventEnvelope) -> Option<String> {
    let step = env.step;
    let s = match &env.event {
        AgentEvent::RunStarted {
            task,
            serial,
            model,
            mode,
            demo,
            ..
        } => format!(
            "{}run {} · task: {task}\n  device {serial} · model {model} · access mode {mode}",
            if *demo {
                "[DEMO on the virtual phone] "
            } else {
                ""
            },
            &env.run_id[..8.min(env.run_id.len())]
        ),
        AgentEvent::CoordinateCalibration {
            method,
            space,
            detail,
            ..
        } => format!(
            "  coordinates: {method} {}{}",
            space.map(|s| s.to_string()).unwrap_or_default(),
            if method == "rejected" {
                format!(" — {detail}")
            } else {
                String::new()
            }
        ),
        AgentEvent::ModelFallback {
            role, used, reason, ..
        } => format!("  model fallback for {role}: using {used} ({reason})"),
        AgentEvent::ActionProposed { action, .. } => {
            let what = describe(&action.kind, action.target_description.as_deref());
            let why = action
                .reason
                .as_deref()
                .map(|r| format!(" — {}", clip(r, 90)))
                .unwrap_or_default();
            format!("[{step:>2}] {what}{why}")
        }
        AgentEvent::ProtocolRejected {
            attempt, message, ..
        } => {
            format!(
                "     ✗ answer rejected (attempt {attempt}): {}",
                clip(message, 120)
            )
        }
        AgentEvent::GateDecision {
            tool,
            tier,
            outcome,
            decided_by,
            reasons,
            ..
        } => match outcome {
            GateOutcome::Allow if *tier == phoneagent_protocol::RiskTier::None => return None,
            GateOutcome::Warned => format!(
                "[safety] {tool}: {} — blocked, waiting for model confirmation ({decided_by:?})",
                reasons.join(", ")
            ),
            GateOutcome::NeedsApproval => {
                format!("     ⏸ {tool} needs your approval ({})", reasons.join(", "))
            }
            o => format!(
                "     gate: {tool} {o:?} by {decided_by:?} ({tier:?}: {})",
                reasons.join(", ")
            ),
        },
        AgentEvent::Freshness { outcome, .. } if outcome == "stale" => {
            "     ↻ the screen changed before the tap: cancelled with zero touches, re-planning"
                .into()
        }
        AgentEvent::ActionDispatched {
            command_ok: false,
            message,
            ..
        } => {
            format!(
                "     ✗ command failed: {}",
                message.as_deref().unwrap_or("?")
            )
        }
        AgentEvent::Verification(v) => {
            if v.observable_effect {
                format!("     ✓ screen changed ({:.1}%)", v.changed_fraction * 100.0)
            } else {
                "     ⚠ no visible change (warning)".into()
            }
        }
        AgentEvent::Recovery {
            outcome,
            code,
            detail,
            ..
        } => format!(
            "     recovery: {outcome:?} after {code}: {}",
            clip(detail, 100)
        ),
        AgentEvent::DeviceLost { serial, .. } => {
            format!("     ⚡ device {serial} lost — waiting for it to come back")
        }
        AgentEvent::DeviceRestored { serial, waited_ms } => {
            format!("     ⚡ device {serial} is back after {waited_ms} ms; re-observing")
        }
        AgentEvent::HumanRequested { request, .. } => match request {
            HumanRequestKind::AskUser { question } => format!("     ? the agent asks: {question}"),
            HumanRequestKind::TakeOver { message } => {
                format!("     ✋ take over requested: {message}")
            }
            HumanRequestKind::Approval { .. } => return None,
        },
        AgentEvent::HumanResolved { response, .. } => match response {
            HumanResponse::Approve => "     ✓ approved".into(),
            HumanResponse::Reject { note } => format!(
                "     ✗ rejected{}",
                note.as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            HumanResponse::Answer { text } => format!("     answer: {text}"),
            HumanResponse::HandBack => "     phone handed back".into(),
        },
        AgentEvent::FinishReview { .. } => {
            "     finish: review package returned to the model".into()
        }
        AgentEvent::FinishRejected { by, message } => {
            format!("     finish refused ({by}): {}", clip(message, 120))
        }
        AgentEvent::FinishVerifier { verdict, reason } => {
            format!("     verifier: {verdict} {}", clip(reason, 100))
        }
        AgentEvent::Warning { code, message } => format!("     warning {code}: {message}"),
        AgentEvent::ApprovalReview(r) => format!(
            "     approve-for-me: {} {} by {:?}{}{} — {}",
            r.tool,
            r.outcome.as_str(),
            r.decided_by,
            r.risk
                .map(|x| format!(" · risk {}", x.as_str()))
                .unwrap_or_default(),
            r.gate
                .as_deref()
                .map(|g| format!(" · gate {g}"))
                .unwrap_or_default(),
            clip(&r.reason, 120)
        ),
        AgentEvent::RunFinished {
            status,
            termination_code,
            message,
            steps,
            duration_ms,
            tokens,
            ..
        } => format!(
            "== {} ({termination_code}) after {steps} steps in {:.1} s · {} tokens{}\n   {message}",
            status.as_str(),
            *duration_ms as f64 / 1000.0,
            tokens.prompt_tokens + tokens.completion_tokens,
            if tokens.cost_usd > 0.0 {
                format!(" · ${:.4}", tokens.cost_usd)
            } else {
                String::new()
            }
        ),
        _ => return None,
    };
    Some(s)
}

fn describe(kind: &ActionKind, target: Option<&str>) -> String {
    let t = target
        .map(|t| format!(" \"{}\"", clip(t, 40)))
        .unwrap_or_default();
    match kind {
        ActionKind::Type { text } => format!("type \"{}\"", clip(text, 60)),
        ActionKind::Finish { message, confirm } => {
            format!(
                "finish{} \"{}\"",
                if *confirm { " (confirm)" } else { "" },
                clip(message, 80)
            )
        }
        ActionKind::Note { message, .. } => format!("note \"{}\"", clip(message, 60)),
        ActionKind::Wait { seconds } => format!("wait {seconds} s"),
        k => format!("{}{t}", k.name()),
    }
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    }
}
