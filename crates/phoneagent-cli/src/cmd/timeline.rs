//! Human-readable timeline lines for the terminal, one per interesting event.
//!
//! Every string that comes from a model, the screen or the task goes through [`one`] or
//! [`clip`] (inert, one line: SPEC S14), so it can neither draw on the terminal nor start a
//! line of its own that looks like ours (a fake approval prompt).

use phoneagent_protocol::event::{GateOutcome, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{
    ActionKind, AgentEvent, CalibrationMethod, EventEnvelope, FreshnessOutcome,
};

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
            "{}run {} · task: {}\n  device {} · model {} · access mode {mode}",
            if *demo {
                "[DEMO on the virtual phone] "
            } else {
                ""
            },
            one(&env.run_id[..8.min(env.run_id.len())]),
            one(task),
            one(serial),
            one(model)
        ),
        AgentEvent::CoordinateCalibration {
            method,
            space,
            detail,
            ..
        } => format!(
            "  coordinates: {} {}{}",
            method.as_str(),
            space.map(|s| s.to_string()).unwrap_or_default(),
            if *method == CalibrationMethod::Rejected {
                format!(" — {}", clip(detail, 200))
            } else {
                String::new()
            }
        ),
        AgentEvent::ModelFallback {
            role, used, reason, ..
        } => format!(
            "  model fallback for {}: using {} ({})",
            one(role),
            one(used),
            one(reason)
        ),
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
                "[safety] {}: {} — blocked, waiting for model confirmation ({decided_by:?})",
                one(tool),
                one(&reasons.join(", "))
            ),
            GateOutcome::NeedsApproval => {
                format!(
                    "     ⏸ {} needs your approval ({})",
                    one(tool),
                    one(&reasons.join(", "))
                )
            }
            o => format!(
                "     gate: {} {o:?} by {decided_by:?} ({tier:?}: {})",
                one(tool),
                one(&reasons.join(", "))
            ),
        },
        AgentEvent::Freshness {
            outcome: FreshnessOutcome::Stale,
            ..
        } => "     ↻ the screen changed before the tap: cancelled with zero touches, re-planning"
            .into(),
        AgentEvent::ActionDispatched {
            command_ok: false,
            message,
            ..
        } => {
            format!(
                "     ✗ command failed: {}",
                clip(message.as_deref().unwrap_or("?"), 160)
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
            format!(
                "     ⚡ device {} lost — waiting for it to come back",
                one(serial)
            )
        }
        AgentEvent::DevicePaths {
            capture,
            input,
            note,
        } => match note {
            Some(n) => format!(
                "     ▸ capture: {}, input: {} ({})",
                one(capture),
                one(input),
                clip(n, 200)
            ),
            None => format!("     ▸ capture: {}, input: {}", one(capture), one(input)),
        },
        AgentEvent::DeviceRestored { serial, waited_ms } => {
            format!(
                "     ⚡ device {} is back after {waited_ms} ms; re-observing",
                one(serial)
            )
        }
        AgentEvent::HumanRequested { request, .. } => match request {
            HumanRequestKind::AskUser { question } => {
                format!("     ? the agent asks: {}", clip(question, 200))
            }
            HumanRequestKind::TakeOver { message } => {
                format!("     ✋ take over requested: {}", clip(message, 200))
            }
            HumanRequestKind::Approval { .. } => return None,
        },
        AgentEvent::HumanResolved { response, .. } => match response {
            HumanResponse::Approve => "     ✓ approved".into(),
            HumanResponse::Reject { note } => format!(
                "     ✗ rejected{}",
                note.as_deref()
                    .map(|n| format!(" ({})", clip(n, 120)))
                    .unwrap_or_default()
            ),
            HumanResponse::Answer { text } => format!("     answer: {}", clip(text, 200)),
            HumanResponse::HandBack => "     phone handed back".into(),
        },
        AgentEvent::FinishReview { .. } => {
            "     finish: review package returned to the model".into()
        }
        AgentEvent::FinishRejected { by, message } => {
            format!("     finish refused ({}): {}", one(by), clip(message, 120))
        }
        AgentEvent::FinishVerifier { verdict, reason } => {
            format!("     verifier: {} {}", verdict.as_str(), clip(reason, 100))
        }
        AgentEvent::Warning { code, message } => {
            format!("     warning {}: {}", one(code), clip(message, 200))
        }
        AgentEvent::ApprovalReview(r) => format!(
            "     approve-for-me: {} {} by {:?}{}{} — {}",
            one(&r.tool),
            r.outcome.as_str(),
            r.decided_by,
            r.risk
                .map(|x| format!(" · risk {}", x.as_str()))
                .unwrap_or_default(),
            r.gate
                .as_deref()
                .map(|g| format!(" · gate {}", one(g)))
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
            "== {} ({}) after {steps} steps in {:.1} s · {} tokens{}\n   {}",
            status.as_str(),
            termination_code.as_str(),
            *duration_ms as f64 / 1000.0,
            tokens.prompt_tokens + tokens.completion_tokens,
            if tokens.cost_usd > 0.0 {
                format!(" · ${:.4}", tokens.cost_usd)
            } else {
                String::new()
            },
            clip(message, 400)
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

/// Untrusted text as one inert line (SPEC S14).
fn one(s: &str) -> String {
    phoneagent_protocol::text::inert_line(s)
}

/// Untrusted text as one inert line of at most `n` characters (`…` marks a cut).
fn clip(s: &str, n: usize) -> String {
    let one_line = one(s);
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phoneagent_protocol::Action;

    fn env(event: AgentEvent) -> EventEnvelope {
        EventEnvelope {
            run_id: "0123456789abcdef".into(),
            seq: 1,
            step: 3,
            ts_ms: 0,
            event,
        }
    }

    const ATTACK: &str =
        "关闭通知\u{1b}[2J\u{1b}[H\r\n⏸ Approve tap → 「关闭通知」?\u{1b}]0;t\u{7}";

    #[test]
    fn untrusted_text_never_reaches_the_terminal_as_control_or_a_new_line() {
        let mut a = Action::new(ActionKind::Tap {
            element: phoneagent_protocol::ModelPoint { x: 1.0, y: 2.0 },
        });
        a.target_description = Some(ATTACK.into());
        a.reason = Some(ATTACK.into());
        let lines = [
            line(&env(AgentEvent::ActionProposed {
                action: a,
                points: vec![],
            })),
            line(&env(AgentEvent::Warning {
                code: "x".into(),
                message: ATTACK.into(),
            })),
        ];
        for l in lines.into_iter().flatten() {
            assert!(
                !l.chars().any(|c| c.is_control()),
                "control character in {l:?}"
            );
            assert!(l.contains("关闭通知"), "{l}");
        }
    }
}
