//! `Agent::run` end to end: tasks, gates, approvals, freshness, recovery, limits (SPEC R1-R7,
//! S1-S9, F1-F4).

use std::time::{Duration, Instant};

use phoneagent_llm::config::ActionProtocol;
use phoneagent_protocol::event::{GateOutcome, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{
    AccessMode, AgentEvent, FreshnessOutcome, ObservationPurpose, RiskTier, RunStatus,
    VerifierVerdict,
};
use phoneagent_sim::Faults;
use tokio_util::sync::CancellationToken;

use crate::harness::{BUY, DRAFT, Harness, Opts, gate_decisions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buy_in_wary_mode_runs_irreversible_taps_only_after_confirmation() {
    let mut h = Harness::new(BUY, Opts::default()).await;
    let out = h.run("Buy the first product in the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = h.truth();
    assert_eq!(t.orders_placed, 1);
    assert_eq!(t.payments_confirmed, 1);
    let gates = gate_decisions(&events);
    let warned: Vec<_> = gates
        .iter()
        .filter(|g| g.2 == GateOutcome::Warned)
        .collect();
    assert_eq!(
        warned.len(),
        2,
        "提交订单 and 确认支付 each warned once: {gates:?}"
    );
    assert!(warned.iter().all(|g| g.1 == RiskTier::Hard));
    // Every warning returned a receipt with the three options (S5).
    let receipts: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::GateDecision {
                receipt: Some(r),
                outcome: GateOutcome::Warned,
                ..
            } => Some(r),
            _ => None,
        })
        .collect();
    assert!(
        receipts.iter().all(|r| r.contains("confirm_irreversible")),
        "{receipts:?}"
    );
    // The finish was two-stage and verified.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::FinishReview { .. }))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::FinishVerifier {
            verdict: VerifierVerdict::Pass,
            ..
        }
    )));
    // Everything is in the store, in order.
    let run = h
        .store
        .run(uuid::Uuid::parse_str(&out.run_id).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    let stored = h.store.events(run.id).unwrap();
    assert!(stored.len() > 20);
    assert!(stored.windows(2).all(|w| w[1].seq == w[0].seq + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_mode_rejection_places_no_order() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}
{"content": "finish(message=\"The user declined to submit the order.\")"}
{"content": "finish(message=\"The user declined to submit the order.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"no order\"}"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            mode: AccessMode::Hard,
            scenario: Some("checkout"),
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|k| match k {
        HumanRequestKind::Approval { .. } => HumanResponse::Reject {
            note: Some("not now".into()),
        },
        _ => HumanResponse::Reject { note: None },
    });
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(
        h.truth().orders_placed,
        0,
        "a rejected approval must leave no order"
    );
    let gates = gate_decisions(&events);
    assert!(
        gates
            .iter()
            .any(|g| g.2 == GateOutcome::NeedsApproval && g.1 == RiskTier::Hard),
        "{gates:?}"
    );
    assert!(
        gates.iter().any(|g| g.2 == GateOutcome::Rejected),
        "{gates:?}"
    );
    assert!(!events.iter().any(
        |e| matches!(e, AgentEvent::ActionDispatched { action_type, .. } if action_type == "tap")
    ));
    assert_eq!(out.status, RunStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_mode_approval_runs_the_original_call() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}
{"content": "finish(message=\"Order submitted.\")"}
{"content": "finish(message=\"Order submitted.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"payment sheet visible\"}"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            mode: AccessMode::Hard,
            scenario: Some("checkout"),
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|_| HumanResponse::Approve);
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert_eq!(h.truth().orders_placed, 1);
    assert!(
        gate_decisions(&events)
            .iter()
            .any(|g| g.2 == GateOutcome::Approved)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draft_mail_is_never_sent_and_stays_visible() {
    let mut h = Harness::new(DRAFT, Opts::default()).await;
    let out = h
        .run("Draft an email to bob@example.com about lunch on Friday, but don't send it")
        .await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = h.truth();
    assert!(
        t.mails_sent.is_empty(),
        "nothing may be sent: {:?}",
        t.mails_sent
    );
    assert_eq!(t.current_screen, "mail_compose", "the draft stays visible");
    // Every field of the draft is filled, the recipient included (it was once left empty
    // while the run still "succeeded").
    let fields = &t.typed_text.fields;
    assert_eq!(
        fields.get("mail.to").map(String::as_str),
        Some("bob@example.com"),
        "{fields:?}"
    );
    assert_eq!(
        fields.get("mail.subject").map(String::as_str),
        Some("Lunch on Friday")
    );
    assert!(
        fields
            .get("mail.body")
            .is_some_and(|b| b.contains("— Alice")),
        "{fields:?}"
    );
    // The Send tap was blocked with zero touches.
    let blocked = gate_decisions(&events)
        .into_iter()
        .filter(|g| g.2 == GateOutcome::BlockedByTaskBoundary)
        .count();
    assert_eq!(blocked, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialog_between_planning_and_dispatch_cancels_the_stale_tap() {
    // The coupon dialog appears 1.2 s after the product page opens; the model takes 1.5 s to
    // answer, so its tap was planned on a screen without the dialog.
    let script = r#"
{"delay_ms": 1500, "content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", reason=\"Add to cart.\")"}
{"content": "do(action=\"Tap\", element={{center:关闭}}, target_description=\"关闭\", reason=\"Close the dialog.\")"}
{"content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", reason=\"Add to cart.\")"}
{"content": "finish(message=\"Added.\")"}
{"content": "finish(message=\"Added.\", confirm=True)"}
"#;
    let faults = Faults {
        dialog_delay_ms: Some(1200),
        ..Faults::default()
    };
    let mut h = Harness::new(
        script,
        Opts {
            faults: Some(faults),
            scenario: Some("product"),
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Add the product to the cart").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        events.iter().any(|e| matches!(
            e,
            AgentEvent::Freshness {
                outcome: FreshnessOutcome::Stale,
                ..
            }
        )),
        "the tap planned before the dialog must be stale: {:?}",
        events
            .iter()
            .filter(|e| matches!(
                e,
                AgentEvent::Freshness { .. }
                    | AgentEvent::GateDecision { .. }
                    | AgentEvent::ScreenRead { .. }
            ))
            .collect::<Vec<_>>()
    );
    // Zero touches for the stale action: exactly two taps were dispatched (close, add).
    let taps = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ActionDispatched { .. }))
        .count();
    assert_eq!(taps, 2);
    assert_eq!(h.truth().cart.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_answer_gets_one_protocol_retry() {
    let script = r#"
{"content": "I will tap the shop icon now: ```do(action=\"Tap\", element=[500, 500])```"}
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"content": "finish(message=\"The shop is open.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Open the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ProtocolRejected { attempt: 1, .. }))
    );
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ModelCall { call_kind, .. } if call_kind == "protocol_retry")
    ));
    assert_eq!(h.truth().current_screen, "shop");
    // The retry request told the model what was wrong.
    let reqs = h.model.chat_requests();
    assert!(reqs[1].body_text_without_images().contains("rejected"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_is_retried_then_succeeds() {
    let script = r#"
{"status": 429, "retry_after": 1}
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"content": "finish(message=\"The shop is open.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let t0 = Instant::now();
    let out = h.run("Open the shop").await;
    let _ = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    assert_eq!(h.model.chat_requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_screen_sends_no_tap_and_asks_a_human() {
    let script = r#"
{"content": "do(action=\"Tap\", element=[500, 500], reason=\"should never be asked\")"}
"#;
    let faults = Faults {
        black_frames: true,
        ..Faults::default()
    };
    let mut h = Harness::new(
        script,
        Opts {
            faults: Some(faults),
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|_| HumanResponse::Reject { note: None });
    let out = h.run("Open the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.termination_code, "screenshot_blocked");
    assert!(h.truth().touches.is_empty(), "no touch on a blocked screen");
    assert!(
        h.model.chat_requests().is_empty(),
        "the model never plans on a black frame"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::HumanRequested {
            request: HumanRequestKind::TakeOver { .. },
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_loss_pauses_and_resumes_without_replaying() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Tap\", element={{center:shop.product.0}}, target_description=\"first product\", reason=\"Open it.\")"}
{"content": "finish(message=\"Product page open.\")"}
{"content": "finish(message=\"Product page open.\", confirm=True)"}
"#;
    let faults = Faults {
        dialog_disabled: true,
        ..Faults::default()
    };
    let mut h = Harness::new(
        script,
        Opts {
            faults: Some(faults.clone()),
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    // Unplug the phone right after the first command was dispatched (during verification).
    let mut rx = h.agent.subscribe();
    let phone = h.sim.phone(&h.serial).unwrap();
    let unplug = tokio::spawn(async move {
        while let Ok(env) = rx.recv().await {
            if matches!(env.event, AgentEvent::ActionDispatched { .. }) {
                phone.set_faults(Faults {
                    disconnect_after_commands: Some(0),
                    reconnect_after_ms: Some(1000),
                    ..faults
                });
                return true;
            }
        }
        false
    });
    let out = h.run("Open the first product in the shop").await;
    let unplugged = tokio::time::timeout(Duration::from_secs(2), unplug).await;
    assert!(matches!(unplugged, Ok(Ok(true))), "the phone was unplugged");
    let events = h.drain();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::DeviceLost { .. })),
        "device loss was seen"
    );
    // The interrupted step was not replayed: exactly two taps were dispatched.
    let taps = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ActionDispatched { .. }))
        .count();
    assert_eq!(taps, 2);
    assert_eq!(h.truth().current_screen, "product");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::DeviceRestored { .. })),
        "and it came back"
    );
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_model_call_ends_quickly_and_restores_the_ime() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.mail}}, target_description=\"邮件\", reason=\"Open mail.\")"}
{"content": "do(action=\"Tap\", element={{center:mail.compose}}, target_description=\"写邮件\", reason=\"Compose.\")"}
{"content": "do(action=\"Tap\", element={{center:mail.subject}}, target_description=\"主题\", reason=\"Focus subject.\")"}
{"content": "do(action=\"Type\", text=\"你好 👋\", reason=\"Type the subject.\")"}
{"delay_ms": 30000, "content": "do(action=\"Back\")"}
"#;
    let mut h = Harness::new(script, Opts::default()).await;
    let ime_before = h.truth().ime.clone();
    let cancel = CancellationToken::new();
    let agent = h.agent.clone();
    let c2 = cancel.clone();
    let run = tokio::spawn(async move { agent.run("Write a mail with subject 你好", c2).await });
    // Wait until the slow fifth planning call is in flight.
    let deadline = Instant::now() + Duration::from_secs(60);
    while h.model.chat_requests().len() < 5 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(h.model.chat_requests().len(), 5);
    let typed_ime = h.truth().ime.clone();
    if crate::harness::capture_mode() == phoneagent_device::ScreenshotMode::Scrcpy {
        // scrcpy's clipboard paste types without switching the IME (SPEC D9).
        assert_eq!(typed_ime, ime_before, "the IME was not switched");
        assert_eq!(
            h.truth().typed_text.fields["mail.subject"],
            "你好 👋",
            "typed by clipboard paste"
        );
    } else {
        assert_ne!(
            typed_ime, ime_before,
            "ADB Keyboard was switched on for typing"
        );
    }
    let t0 = Instant::now();
    cancel.cancel();
    let out = run.await.unwrap().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "cancelled within 1 s: {:?}",
        t0.elapsed()
    );
    assert_eq!(out.status, RunStatus::Cancelled);
    assert_eq!(
        h.truth().ime,
        ime_before,
        "the original IME is restored on cancel"
    );
    let _ = h.drain();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_detector_replans_then_asks_for_takeover() {
    // Tapping the empty status-bar area does nothing, again and again.
    let tap = r#"{"content": "do(action=\"Tap\", element=[500, 5], target_description=\"status bar\", reason=\"Try again.\")"}"#;
    let script = std::iter::repeat_n(tap, 8).collect::<Vec<_>>().join("\n");
    let mut h = Harness::new(
        &script,
        Opts {
            max_steps: 12,
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|_| HumanResponse::Reject { note: None });
    let out = h.run("Open the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(out.termination_code, "loop_detected", "{out:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Recovery { outcome: phoneagent_protocol::event::RecoveryOutcome::Replan, detail, .. } if detail.contains("repeated")
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::HumanRequested {
            request: HumanRequestKind::TakeOver { .. },
            ..
        }
    )));
    // The replan carried a rejection summary to the model.
    assert!(h.model.chat_requests().iter().any(|r| {
        r.body_text_without_images()
            .contains("repeated with no visible effect")
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn premature_finish_is_blocked_by_the_search_guard() {
    let script = r#"
{"content": "finish(message=\"The weather is sunny.\")"}
{"content": "do(action=\"Tap\", element={{center:home.app.search}}, target_description=\"搜索\", reason=\"Open the search app.\")"}
{"content": "do(action=\"Tap\", element={{center:search.query}}, target_description=\"search box\", reason=\"Focus the search box.\")"}
{"content": "do(action=\"Type\", text=\"weather\", reason=\"Type the query.\")"}
{"content": "do(action=\"Tap\", element={{center:search.submit}}, target_description=\"搜索\", reason=\"Submit.\")"}
{"content": "finish(message=\"Results for weather are shown.\")"}
{"content": "finish(message=\"Results for weather are shown.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Search the Search app for weather").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::FinishRejected { by, .. } if by.starts_with("guard:"))
        )
    );
    let t = h.truth();
    assert_eq!(t.search.submitted_query.as_deref(), Some("weather"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifier_rejecting_twice_hands_over_to_a_human() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"Bought it.\")"}
{"content": "finish(message=\"Bought it.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"reject\", \"reason\": \"no order confirmation is visible\"}"}
{"content": "finish(message=\"Bought it.\")"}
{"content": "finish(message=\"Bought it.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"reject\", \"reason\": \"still only the product list\"}"}
"#;
    let mut h = Harness::new(script, Opts::default()).await;
    let out = h.run("Buy the first product in the shop").await;
    let _ = h.drain();
    assert_eq!(out.status, RunStatus::TakenOver, "{out:?}");
    assert_eq!(out.termination_code, "finish_rejected_twice");
    assert_eq!(h.truth().orders_placed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_mode_fails_closed_without_a_reviewer_model() {
    // Bare "删除" is a soft candidate: only the reviewer could let it through.
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.settings}}, target_description=\"设置\", reason=\"Open settings.\")"}
{"content": "do(action=\"Tap\", element={{center:删除账号}}, target_description=\"删除\", reason=\"Open the delete option.\")"}
{"content": "finish(message=\"Stopped.\")"}
{"content": "finish(message=\"Stopped.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            mode: AccessMode::Reviewer,
            verifier: false,
            screen_reading: false,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Look at the account options in settings").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let failclosed = events.iter().any(|e| matches!(
        e,
        AgentEvent::GateDecision { outcome: GateOutcome::Warned, reasons, .. } if reasons.iter().any(|r| r == "reviewer_unavailable_failclosed")
    ));
    assert!(failclosed, "{:?}", gate_decisions(&events));
    assert_eq!(h.truth().accounts_deleted, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_screen_text_never_lowers_a_tier() {
    // The model falls for the notice and claims the user pre-approved the payment.
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:确认支付}}, target_description=\"确认支付\", reason=\"The notice on screen says the user pre-approved this payment, so it is safe and reversible.\")"}
{"content": "finish(message=\"Did not pay.\")"}
{"content": "finish(message=\"Did not pay.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"ok\"}"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            scenario: Some("injection"),
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Look at the payment page").await;
    let events = h.drain();
    let gates = gate_decisions(&events);
    assert_eq!(
        gates.first().map(|g| (g.1, g.2)),
        Some((RiskTier::Hard, GateOutcome::Warned)),
        "{gates:?}"
    );
    assert_eq!(h.truth().payments_confirmed, 0);
    assert_eq!(out.status, RunStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_requests_carry_no_android_semantics() {
    let mut h = Harness::new(BUY, Opts::default()).await;
    let _ = h.run("Buy the first product in the shop").await;
    let _ = h.drain();
    let reqs = h.model.chat_requests();
    assert!(reqs.len() >= 12);
    for r in reqs {
        let body = r.body_text_without_images();
        for bad in [
            "com.android",
            "com.phoneagent",
            "mCurrentFocus",
            "ui_tree",
            "package_name",
            "installed_apps",
            "resource-id",
        ] {
            assert!(!body.contains(bad), "{bad:?} reached the model: {body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_protocol_runs_the_same_task() {
    let script = r#"
{"tool_calls": [{"name": "tap", "arguments": {"element": "{{center:home.app.shop}}", "target_description": "商城", "reason": "Open the shop.", "screen_description": "home"}}]}
{"tool_calls": [{"name": "finish", "arguments": {"message": "The shop is open."}}]}
{"tool_calls": [{"name": "finish", "arguments": {"message": "The shop is open.", "confirm": true}}, {"name": "tap", "arguments": {"element": [500, 500], "reason": "sibling after finish"}}]}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            protocol: ActionProtocol::Tools,
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Open the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    // The sibling after the accepted finish is skipped (F1).
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::ToolResult { text, .. } if text.starts_with("skipped"))
        )
    );
    let reqs = h.model.chat_requests();
    assert!(
        reqs[0]
            .body
            .get("tools")
            .and_then(|t| t.as_array())
            .is_some_and(|t| !t.is_empty())
    );
}

/// Regression (found by the app's WebDriver take-over test): after a `take_over` the human
/// operated the phone and handed it back; a finish must then not be blocked by the text-only
/// guard as if nothing had been done on the phone (it looped until max steps before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_after_a_handed_back_take_over_is_not_text_only() {
    let script = r#"
{"content": "do(action=\"Take_over\", message=\"Please open the shop for me\")"}
{"content": "finish(message=\"The shop is open\")"}
{"content": "finish(message=\"The shop is open\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            max_steps: 6,
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|k| match k {
        HumanRequestKind::TakeOver { .. } => HumanResponse::HandBack,
        _ => HumanResponse::Reject { note: None },
    });
    let out = h.run("Open the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::FinishRejected { .. })),
        "no finish was rejected after the hand-back"
    );
}

/// P1/M6: every planning request carries exactly the stored planning frame of its step,
/// prepared for the model. The preparation runs on a blocking thread while the capture goes on
/// (geometry, storing, events), so this checks it is matched to the right frame: byte for byte
/// the JPEG that `prepare_image` makes from the stored PNG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_planning_request_carries_its_own_planning_frame() {
    use phoneagent_llm::image::{ImagePolicy, prepare_image};
    let mut h = Harness::new(BUY, Opts::default()).await;
    let out = h.run("Buy the first product in the shop").await;
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    // The script went as written (no re-plan, no retried request): the order is in the phone.
    let t = h.truth();
    assert_eq!((t.orders_placed, t.payments_confirmed), (1, 1), "{t:?}");
    let events = h.drain();
    let expected: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Observation {
                screenshot,
                purpose,
                ..
            } if *purpose == ObservationPurpose::Plan => Some(screenshot.clone()),
            _ => None,
        })
        .map(|hash| {
            let stored = h.store.screenshot(&hash).unwrap().unwrap();
            let img = image::load_from_memory(&stored.bytes).unwrap().into_rgba8();
            prepare_image(&img, &ImagePolicy::default())
                .unwrap()
                .data_url()
        })
        .collect();
    let sent: Vec<String> = h
        .model
        .chat_requests()
        .iter()
        .filter(|r| r.system_text().contains("[phoneagent-role: actor]"))
        .flat_map(|r| r.image_urls())
        .collect();
    assert!(expected.len() >= 5, "{} planning frames", expected.len());
    assert_eq!(sent.len(), expected.len(), "one image per planning request");
    let distinct: std::collections::HashSet<&String> = expected.iter().collect();
    assert!(distinct.len() >= 3, "the run goes through several screens");
    for (i, (s, e)) in sent.iter().zip(&expected).enumerate() {
        assert!(s == e, "planning request {i} carries another frame");
    }
}
