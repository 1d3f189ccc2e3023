//! Serialized event fixtures for the UI's unit tests: real [`EventEnvelope`]s built from the
//! protocol types and written to `ui/src/lib/fixtures/run-hard-approval.json`, so the UI's
//! reducers (typed by the ts-rs bindings of the event stream, `ui/src/lib/bindings/`) are
//! tested on what the Rust side actually serializes. `scripts/test.sh` fails when the file is stale.

use phoneagent_protocol::event::{
    DecidedBy, GateOutcome, HumanRequestKind, HumanResponse, MappedPoint, TokenTotals,
    TrajectoryPolicy, VerificationFacts,
};
use phoneagent_protocol::{
    AccessMode, Action, ActionKind, AgentEvent, DevicePoint, EventEnvelope, ModelPoint, Phase,
    RiskTier, RunStatus, RuntimePoint,
};

/// A two-step hard-mode run: a tap on "提交订单" needs approval, the human rejects it, then a
/// swipe, then finish; plus an ask_user answered in between.
pub fn hard_approval_run() -> Vec<EventEnvelope> {
    let run = "6f1c2f0e-3d4b-4a8e-9a43-0c7e2b9d1a11".to_string();
    let totals = |p: u64, c: u64| TokenTotals {
        prompt_tokens: p,
        completion_tokens: c,
        cost_usd: 0.0,
        calls: 1,
    };
    let tap = Action {
        kind: ActionKind::Tap {
            element: ModelPoint { x: 500.0, y: 900.0 },
        },
        screen_description: Some("Checkout page with a 提交订单 button".into()),
        reason: Some("Submit the order as the task asks".into()),
        target_description: Some("提交订单".into()),
        confirm_irreversible: false,
        sensitive: false,
    };
    let swipe = Action {
        kind: ActionKind::Swipe {
            start: ModelPoint { x: 500.0, y: 800.0 },
            end: ModelPoint { x: 500.0, y: 300.0 },
            duration_ms: Some(300),
        },
        screen_description: Some("Product list".into()),
        reason: Some("Scroll up to see more products".into()),
        target_description: None,
        confirm_irreversible: false,
        sensitive: false,
    };
    let pt = |x: u16, y: u16| MappedPoint {
        model: ModelPoint {
            x: f64::from(x),
            y: f64::from(y),
        },
        canonical: [f64::from(x) / 999.0, f64::from(y) / 999.0],
        runtime: RuntimePoint { x, y },
        device: DevicePoint {
            x: u32::from(x) * 1080 / 999,
            y: u32::from(y) * 2400 / 999,
        },
    };
    let events: Vec<(u32, AgentEvent)> = vec![
        (
            0,
            AgentEvent::RunStarted {
                task: "提交订单".into(),
                serial: "virtual-phone-1".into(),
                profile: "local".into(),
                model: "scripted".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                protocol: "do".into(),
                mode: AccessMode::Hard,
                max_steps: 10,
                max_duration_ms: 60_000,
                policy: TrajectoryPolicy::pure_vision(false),
                demo: false,
            },
        ),
        (
            1,
            AgentEvent::Phase {
                phase: Phase::Observing,
            },
        ),
        (
            1,
            AgentEvent::Observation {
                screenshot: "a".repeat(64),
                width: 1080,
                height: 2400,
                blocked: false,
                screen_seq: 1,
                capture_ms: 40,
                purpose: phoneagent_protocol::ObservationPurpose::Plan,
            },
        ),
        (
            1,
            AgentEvent::ModelCall {
                role: "actor".into(),
                call_kind: "planning".into(),
                model: "scripted".into(),
                prompt_tokens: 1200,
                completion_tokens: 30,
                cost_usd: 0.0,
                latency_ms: 80,
                content: "do(action=\"Tap\", element=[500,900])".into(),
                reasoning: None,
                error: None,
                run_totals: totals(1200, 30),
            },
        ),
        (
            1,
            AgentEvent::ActionProposed {
                action: tap,
                points: vec![pt(500, 900)],
            },
        ),
        (
            1,
            AgentEvent::GateDecision {
                tool: "tap".into(),
                tier: RiskTier::Hard,
                reasons: vec!["commit_verb_irreversible_object".into()],
                mode: AccessMode::Hard,
                outcome: GateOutcome::NeedsApproval,
                decided_by: DecidedBy::Rule,
                latency_ms: 1,
                receipt: None,
            },
        ),
        (
            1,
            AgentEvent::Phase {
                phase: Phase::AwaitingHuman,
            },
        ),
        (
            1,
            AgentEvent::HumanRequested {
                request_id: "req-1".into(),
                request: HumanRequestKind::Approval {
                    tool: "tap".into(),
                    target: "提交订单".into(),
                    tier: RiskTier::Hard,
                    reasons: vec!["commit_verb_irreversible_object".into()],
                    screen: None,
                    model_reason: None,
                },
                expires_at_ms: 4_102_444_800_000,
                allowed_responses: vec!["approve".into(), "reject".into()],
            },
        ),
        (
            1,
            AgentEvent::HumanResolved {
                request_id: "req-1".into(),
                response: HumanResponse::Reject {
                    note: Some("not now".into()),
                },
                decided_by: DecidedBy::Human,
                latency_ms: 2100,
            },
        ),
        (
            1,
            AgentEvent::GateDecision {
                tool: "tap".into(),
                tier: RiskTier::Hard,
                reasons: vec!["commit_verb_irreversible_object".into()],
                mode: AccessMode::Hard,
                outcome: GateOutcome::Rejected,
                decided_by: DecidedBy::Human,
                latency_ms: 2100,
                receipt: Some("rejected by the user: nothing was run".into()),
            },
        ),
        (
            1,
            AgentEvent::ToolResult {
                tool: "tap".into(),
                status: phoneagent_protocol::ToolStatus::Error,
                text: "rejected by the user".into(),
            },
        ),
        (
            2,
            AgentEvent::Observation {
                screenshot: "b".repeat(64),
                width: 1080,
                height: 2400,
                blocked: false,
                screen_seq: 2,
                capture_ms: 38,
                purpose: phoneagent_protocol::ObservationPurpose::Plan,
            },
        ),
        (
            2,
            AgentEvent::ActionProposed {
                action: swipe,
                points: vec![pt(500, 800), pt(500, 300)],
            },
        ),
        (
            2,
            AgentEvent::Freshness {
                outcome: phoneagent_protocol::FreshnessOutcome::Fresh,
                target_changed: 0.0,
                global_changed: 0.01,
                rechecks: 0,
            },
        ),
        (
            2,
            AgentEvent::ActionDispatched {
                action_type: "swipe".into(),
                device_points: vec![
                    DevicePoint { x: 540, y: 1921 },
                    DevicePoint { x: 540, y: 720 },
                ],
                command_ok: true,
                error: None,
                message: None,
                duration_ms: 320,
            },
        ),
        (
            2,
            AgentEvent::Verification(VerificationFacts {
                dispatched: true,
                command_ok: true,
                observable_effect: true,
                changed_fraction: 0.42,
                warnings: vec![],
            }),
        ),
        (
            3,
            AgentEvent::HumanRequested {
                request_id: "req-2".into(),
                request: HumanRequestKind::AskUser {
                    question: "Which size?".into(),
                },
                expires_at_ms: 4_102_444_800_000,
                allowed_responses: vec!["answer".into(), "reject".into()],
            },
        ),
        (
            3,
            AgentEvent::HumanResolved {
                request_id: "req-2".into(),
                response: HumanResponse::Answer { text: "M".into() },
                decided_by: DecidedBy::Human,
                latency_ms: 900,
            },
        ),
        (
            3,
            AgentEvent::RunFinished {
                status: RunStatus::Succeeded,
                termination_code: phoneagent_protocol::EndReason::FinishAccepted.into(),
                message: "done".into(),
                steps: 3,
                duration_ms: 5000,
                tokens: totals(2400, 60),
                hard_failures: 0,
                soft_replans: 0,
            },
        ),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(i, (step, event))| EventEnvelope {
            run_id: run.clone(),
            seq: i as u64,
            ts_ms: 1_700_000_000_000 + i as u64 * 100,
            step,
            event,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the fixture (run with `PHONEAGENT_WRITE_FIXTURES=1`), else checks it is current.
    #[test]
    fn event_fixtures_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/src/lib/fixtures/run-hard-approval.json");
        let json = serde_json::to_string_pretty(&hard_approval_run()).unwrap() + "\n";
        if std::env::var_os("PHONEAGENT_WRITE_FIXTURES").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &json).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            on_disk,
            json,
            "{} is stale: run with PHONEAGENT_WRITE_FIXTURES=1",
            path.display()
        );
    }
}
