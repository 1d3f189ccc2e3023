//! A realistic recorded run built from the real `AgentEvent` types, shared by the tests.

use phoneagent_protocol::event::{
    CalibrationProbe, DecidedBy, GateOutcome, HumanRequestKind, HumanResponse, MappedPoint, Phase,
    RecoveryOutcome, TokenTotals, TrajectoryPolicy, VerificationFacts,
};
use phoneagent_protocol::{
    AccessMode, Action, ActionKind, AgentEvent, CoordinateSpace, DevicePoint, ErrorCode,
    EventEnvelope, ModelPoint, ObservationPurpose, RiskTier, RunStatus, RuntimePoint,
};
use phoneagent_store::{NewRun, RunEnd, Store};
use uuid::Uuid;

/// The untrusted text planted in the model's reason (the HTML must escape it).
pub const HOSTILE_REASON: &str = "Tap the <script>alert('pwned')</script> button & \"go\"";

pub const W: u32 = 1080;
pub const H: u32 = 2400;

/// A small PNG of `w`×`h` filled with a colour derived from `seed` (distinct seeds → distinct bytes).
pub fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([
            seed,
            u8::try_from((x * 7) % 256).unwrap(),
            u8::try_from((y * 3) % 256).unwrap(),
        ])
    });
    let mut buf = std::io::Cursor::new(Vec::new());
    img.write_to(&mut buf, image::ImageFormat::Png).unwrap();
    buf.into_inner()
}

fn mapped(mx: f64, my: f64) -> MappedPoint {
    let rx = (mx / 999.0 * 999.0).round() as u16;
    let ry = (my / 999.0 * 999.0).round() as u16;
    MappedPoint {
        model: ModelPoint { x: mx, y: my },
        canonical: [mx / 999.0, my / 999.0],
        runtime: RuntimePoint { x: rx, y: ry },
        device: DevicePoint {
            x: (mx / 999.0 * f64::from(W)).round() as u32,
            y: (my / 999.0 * f64::from(H)).round() as u32,
        },
    }
}

fn totals(p: u64, c: u64, cost: f64, calls: u64) -> TokenTotals {
    TokenTotals {
        prompt_tokens: p,
        completion_tokens: c,
        cost_usd: cost,
        calls,
    }
}

fn model_call(role: &str, kind: &str, p: u64, c: u64, run: TokenTotals) -> AgentEvent {
    AgentEvent::ModelCall {
        role: role.into(),
        call_kind: kind.into(),
        model: "autoglm-phone-9b".into(),
        prompt_tokens: p,
        completion_tokens: c,
        cost_usd: 0.001,
        latency_ms: 900,
        content: "do(action=\"Tap\", element=[500,500])".into(),
        reasoning: None,
        error: None,
        run_totals: run,
    }
}

fn obs(hash: &str, seq: u64, purpose: ObservationPurpose) -> AgentEvent {
    AgentEvent::Observation {
        screenshot: hash.into(),
        width: W,
        height: H,
        blocked: false,
        screen_seq: seq,
        capture_ms: 120,
        purpose,
    }
}

/// What the fixture recorded, for assertions.
pub struct Recorded {
    pub run_id: Uuid,
    pub shots: Vec<String>,
    pub events: usize,
}

/// Records a four-step run that succeeds: tap (effect), swipe (no effect → replan), a
/// hard-gated tap approved by a human, then finish. Tokens: 4 actor calls of 1000+50.
pub fn record_run(store: &Store) -> Recorded {
    let mut run = NewRun::new("Open Settings and turn on <b>Wi-Fi</b>");
    run.device_serial = Some("emulator-5554".into());
    run.model_profile = Some("local-autoglm".into());
    run.model = Some("autoglm-phone-9b".into());
    run.access_mode = AccessMode::Hard;
    run.started_ms = 1_700_000_000_000;
    store.start_run(&run).unwrap();

    let shots: Vec<String> = (0..3)
        .map(|i| {
            store
                .put_screenshot(&png(W / 10, H / 10, 40 + i * 60), "image/png", W, H)
                .unwrap()
        })
        .collect();

    let mut tap = Action::new(ActionKind::Tap {
        element: ModelPoint { x: 500.0, y: 250.0 },
    });
    tap.screen_description = Some("The home screen with a Settings icon".into());
    tap.reason = Some(HOSTILE_REASON.into());
    let mut swipe = Action::new(ActionKind::Swipe {
        start: ModelPoint { x: 500.0, y: 800.0 },
        end: ModelPoint { x: 500.0, y: 200.0 },
        duration_ms: Some(300),
    });
    swipe.reason = Some("Swipe up to reveal more settings".into());
    let mut pay = Action::new(ActionKind::Tap {
        element: ModelPoint { x: 300.0, y: 900.0 },
    });
    pay.reason = Some("Tap the Wi-Fi toggle".into());
    pay.sensitive = true;
    let mut finish = Action::new(ActionKind::Finish {
        message: "Wi-Fi is on".into(),
        confirm: true,
    });
    finish.reason = Some("The toggle shows On".into());

    let steps: Vec<(u32, AgentEvent)> = vec![
        (
            0,
            AgentEvent::RunStarted {
                task: run.task.clone(),
                serial: "emulator-5554".into(),
                profile: "local-autoglm".into(),
                model: "autoglm-phone-9b".into(),
                base_url: "http://127.0.0.1:8000/v1".into(),
                protocol: "do".into(),
                mode: AccessMode::Hard,
                max_steps: 20,
                max_duration_ms: 600_000,
                policy: TrajectoryPolicy::pure_vision(false),
                demo: false,
            },
        ),
        (
            0,
            AgentEvent::CoordinateCalibration {
                method: phoneagent_protocol::CalibrationMethod::Negotiated,
                space: Some(CoordinateSpace::Relative0999),
                probes: vec![CalibrationProbe {
                    target_px: [100.0, 200.0],
                    answer: Some([92.0, 83.0]),
                    error_px: Some(3.5),
                }],
                detail: "all probes within 8 px".into(),
            },
        ),
        // step 1: tap with effect
        (
            1,
            AgentEvent::Phase {
                phase: Phase::Observing,
            },
        ),
        (1, obs(&shots[0], 1, ObservationPurpose::Plan)),
        (
            1,
            model_call("actor", "planning", 1000, 50, totals(1000, 50, 0.001, 1)),
        ),
        (
            1,
            AgentEvent::ActionProposed {
                action: tap,
                points: vec![mapped(500.0, 250.0)],
            },
        ),
        (
            1,
            AgentEvent::GateDecision {
                tool: "tap".into(),
                tier: RiskTier::None,
                reasons: vec![],
                mode: AccessMode::Hard,
                outcome: GateOutcome::Allow,
                decided_by: DecidedBy::Rule,
                latency_ms: 0,
                receipt: None,
            },
        ),
        (
            1,
            AgentEvent::Freshness {
                outcome: phoneagent_protocol::FreshnessOutcome::Fresh,
                target_changed: 0.0,
                global_changed: 0.01,
                rechecks: 0,
            },
        ),
        (
            1,
            AgentEvent::ActionDispatched {
                action_type: "tap".into(),
                device_points: vec![DevicePoint { x: 541, y: 601 }],
                command_ok: true,
                error: None,
                message: None,
                duration_ms: 80,
            },
        ),
        (1, obs(&shots[1], 2, ObservationPurpose::Verify)),
        (
            1,
            AgentEvent::Verification(VerificationFacts {
                dispatched: true,
                command_ok: true,
                observable_effect: true,
                changed_fraction: 0.62,
                warnings: vec![],
            }),
        ),
        // step 2: swipe without effect → replan
        (2, obs(&shots[1], 3, ObservationPurpose::Plan)),
        (
            2,
            model_call("actor", "planning", 1000, 50, totals(2000, 100, 0.002, 2)),
        ),
        (
            2,
            AgentEvent::ActionProposed {
                action: swipe,
                points: vec![mapped(500.0, 800.0), mapped(500.0, 200.0)],
            },
        ),
        (
            2,
            AgentEvent::ActionDispatched {
                action_type: "swipe".into(),
                device_points: vec![
                    DevicePoint { x: 540, y: 1922 },
                    DevicePoint { x: 540, y: 480 },
                ],
                command_ok: true,
                error: None,
                message: None,
                duration_ms: 350,
            },
        ),
        (
            2,
            AgentEvent::Verification(VerificationFacts {
                dispatched: true,
                command_ok: true,
                observable_effect: false,
                changed_fraction: 0.0,
                warnings: vec!["no_visible_change".into()],
            }),
        ),
        (
            2,
            AgentEvent::Recovery {
                outcome: RecoveryOutcome::Replan,
                code: ErrorCode::Internal,
                action_type: Some("swipe".into()),
                hard_failures: 0,
                soft_replans: 1,
                detail: "no visible change after swipe".into(),
            },
        ),
        // step 3: hard-gated tap, approved by a human
        (3, obs(&shots[2], 4, ObservationPurpose::Plan)),
        (
            3,
            model_call("actor", "planning", 1000, 50, totals(3000, 150, 0.003, 3)),
        ),
        (
            3,
            AgentEvent::ActionProposed {
                action: pay,
                points: vec![mapped(300.0, 900.0)],
            },
        ),
        (
            3,
            AgentEvent::GateDecision {
                tool: "tap".into(),
                tier: RiskTier::Hard,
                reasons: vec!["sensitive_self_declared".into()],
                mode: AccessMode::Hard,
                outcome: GateOutcome::NeedsApproval,
                decided_by: DecidedBy::Rule,
                latency_ms: 1,
                receipt: None,
            },
        ),
        (
            3,
            AgentEvent::HumanRequested {
                request_id: "req-1".into(),
                request: HumanRequestKind::Approval {
                    tool: "tap".into(),
                    target: "Wi-Fi toggle".into(),
                    tier: RiskTier::Hard,
                    reasons: vec!["sensitive_self_declared".into()],
                    screen: None,
                    model_reason: None,
                },
                expires_at_ms: 1_700_000_100_000,
                allowed_responses: vec!["approve".into(), "reject".into()],
            },
        ),
        (
            3,
            AgentEvent::HumanResolved {
                request_id: "req-1".into(),
                response: HumanResponse::Approve,
                decided_by: DecidedBy::Human,
                latency_ms: 4200,
            },
        ),
        (
            3,
            AgentEvent::ActionDispatched {
                action_type: "tap".into(),
                device_points: vec![DevicePoint { x: 324, y: 2162 }],
                command_ok: true,
                error: None,
                message: None,
                duration_ms: 70,
            },
        ),
        (
            3,
            AgentEvent::Verification(VerificationFacts {
                dispatched: true,
                command_ok: true,
                observable_effect: true,
                changed_fraction: 0.05,
                warnings: vec![],
            }),
        ),
        // step 4: finish
        (4, obs(&shots[2], 5, ObservationPurpose::Plan)),
        (
            4,
            model_call("actor", "planning", 1000, 50, totals(4000, 200, 0.004, 4)),
        ),
        (
            4,
            AgentEvent::ActionProposed {
                action: finish,
                points: vec![],
            },
        ),
        (
            4,
            AgentEvent::FinishVerifier {
                verdict: phoneagent_protocol::VerifierVerdict::Pass,
                reason: "toggle is on".into(),
            },
        ),
        (
            4,
            AgentEvent::RunFinished {
                status: RunStatus::Succeeded,
                termination_code: phoneagent_protocol::EndReason::FinishAccepted.into(),
                message: "Wi-Fi is on".into(),
                steps: 4,
                duration_ms: 42_000,
                tokens: totals(4000, 200, 0.004, 4),
                hard_failures: 0,
                soft_replans: 1,
            },
        ),
    ];
    let n = steps.len();
    for (i, (step, event)) in steps.into_iter().enumerate() {
        // The last event (run_finished) lands 42 s after the start.
        let ts_ms = if i + 1 == n {
            1_700_000_042_000
        } else {
            1_700_000_000_000 + i as u64 * 1000
        };
        let env = EventEnvelope {
            run_id: run.id.to_string(),
            seq: i as u64,
            ts_ms,
            step,
            event,
        };
        store.append_envelope(&env).unwrap();
    }
    // `run_finished` ended the run in the store; finishing it with another outcome is refused.
    let err = store
        .finish_run(
            run.id,
            &RunEnd {
                status: RunStatus::Failed,
                ended_ms: 0,
                termination_code: None,
                summary: serde_json::Value::Null,
                prompt_tokens: 0,
                completion_tokens: 0,
                cost_usd: None,
            },
        )
        .unwrap_err();
    assert!(matches!(
        err,
        phoneagent_store::StoreError::RunAlreadyEnded(_)
    ));
    Recorded {
        run_id: run.id,
        shots,
        events: n,
    }
}
