//! The session API (SPEC A7, issue #13): ops in, events out, against the virtual phone (ADB on
//! loopback) and the scripted model (HTTP on loopback) with the real SQLite store. Each test
//! checks the phone's ground truth, not only the events.

use std::sync::Arc;
use std::time::Duration;

use phoneagent_device::{AdbDevice, AdbServer, AdbServerAddr, Device};
use phoneagent_llm::config::ActionProtocol;
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AccessMode, AgentEvent, Op, RunStatus, TaskOptions};
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    Ack, AgentConfig, Approver, Delegation, PolicyApprover, Session, SessionError, SessionParts,
    Submitter,
};
use phoneagent_sim::{SimConfig, SimServer};
use phoneagent_store::Store;
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};

use crate::harness::{BUY, device_options, route, screen_reader};

/// Tap 提交订单 on the checkout screen, then the two-stage finish.
const SUBMIT: &str = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}
{"content": "finish(message=\"Submitted the order.\")"}
{"content": "finish(message=\"Submitted the order.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"ok\"}"}
"#;

/// Home → shop → first product → close the coupon → add to cart, then finish.
const TO_CART: &str = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop app.\")"}
{"content": "do(action=\"Tap\", element={{center:shop.product.0}}, target_description=\"无线蓝牙耳机\", reason=\"Open the first product.\")"}
{"content": "do(action=\"Tap\", element={{center:关闭}}, target_description=\"关闭\", reason=\"Close the coupon dialog.\")"}
{"content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", reason=\"Add it to the cart.\")"}
{"content": "finish(message=\"The first product is in the cart.\")"}
{"content": "finish(message=\"The first product is in the cart.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"the cart badge shows 1\"}"}
"#;

/// A question, then the two-stage finish.
const ASK: &str = r#"
{"content": "do(action=\"Interact\", message=\"Which size do you want?\")"}
{"content": "finish(message=\"Asked about the size.\")"}
{"content": "finish(message=\"Asked about the size.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"ok\"}"}
"#;

/// One phone of `sim` with its own scripted model, as a session over `store`.
struct Phone {
    serial: String,
    session: Session,
    _model: ScriptedModel,
}

async fn phone(
    sim: &SimServer,
    serial: &str,
    script: &str,
    store: &Store,
    delegation: Delegation,
    person: Option<Arc<dyn Approver>>,
) -> Phone {
    let model = ScriptedModel::start(ScriptedModelConfig {
        script: Script::parse_jsonl(script).unwrap(),
        sim: Some(SimTarget {
            port: sim.port(),
            serial: Some(serial.to_string()),
        }),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    let addr = AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port())).unwrap();
    let device: Arc<dyn Device> = Arc::new(
        AdbDevice::open(AdbServer::new(addr), serial, device_options())
            .await
            .unwrap(),
    );
    let base = model.base_url();
    let session = Session::new(
        SessionParts {
            device,
            actor: route(&base, "test-actor", ActionProtocol::Do),
            verifier: Some(route(&base, "test-verifier", ActionProtocol::Do)),
            safety_reviewer: None,
            auto_reviewer: None,
            auto_review: Default::default(),
            recorder: Arc::new(StoreRecorder::new(store.clone())),
            calibration_cache: None,
            screen_reader: Some(screen_reader()),
            person,
        },
        AgentConfig {
            max_steps: 20,
            settle_ms: 250,
            ..AgentConfig::default()
        },
        delegation,
    );
    Phone {
        serial: serial.to_string(),
        session,
        _model: model,
    }
}

async fn one_phone(scenario: &str, script: &str, delegation: Delegation) -> (SimServer, Phone) {
    one_phone_with(scenario, script, delegation, None).await
}

async fn one_phone_with(
    scenario: &str,
    script: &str,
    delegation: Delegation,
    person: Option<Arc<dyn Approver>>,
) -> (SimServer, Phone) {
    let _ = screen_reader();
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let serial = sim.serials().into_iter().next().unwrap();
    if scenario != "home" {
        sim.phone(&serial).unwrap().reset(scenario).unwrap();
    }
    let p = phone(
        &sim,
        &serial,
        script,
        &Store::open_in_memory().unwrap(),
        delegation,
        person,
    )
    .await;
    (sim, p)
}

fn start(task: &str, mode: AccessMode) -> Op {
    Op::StartTask {
        task: task.into(),
        mode,
        options: TaskOptions::default(),
    }
}

async fn wait(s: &Session, run_id: &str) -> phoneagent_runtime::RunOutcome {
    tokio::time::timeout(Duration::from_secs(120), s.wait(run_id))
        .await
        .expect("run ended in time")
        .expect("run has an outcome")
}

#[tokio::test]
async fn session_runs_the_demo_buy_in_wary_mode_and_one_order_is_paid() {
    let (sim, p) = one_phone("home", BUY, Delegation::default()).await;
    let mut events = p.session.subscribe();
    let Ack::Started { run_id } = p
        .session
        .submit(start("Buy the first product in the shop", AccessMode::Wary))
        .unwrap()
    else {
        panic!("not started")
    };
    // One run per phone (R2): a second start is refused while the first goes on.
    let again = p.session.submit(start("Open Settings", AccessMode::Wary));
    assert!(
        matches!(&again, Err(SessionError::Busy { run_id: r }) if *r == run_id),
        "{again:?}"
    );
    let out = wait(&p.session, &run_id).await;
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = sim.phone(&p.serial).unwrap().ground_truth();
    assert_eq!((t.orders_placed, t.payments_confirmed), (1, 1), "{t:?}");
    let mut kinds = Vec::new();
    while let Ok(e) = events.try_recv() {
        assert_eq!(e.run_id, run_id);
        kinds.push(e.event.kind());
    }
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    // Idle again: control ops have nothing to act on.
    assert!(!p.session.is_busy());
    for op in [Op::Cancel, Op::Pause, Op::Resume] {
        assert!(matches!(
            p.session.submit(op),
            Err(SessionError::NotRunning)
        ));
    }
}

#[tokio::test]
async fn hard_mode_answers_are_validated_and_only_the_person_approves() {
    let (sim, p) = one_phone("checkout", SUBMIT, Delegation::default()).await;
    let s = &p.session;
    let mut events = s.subscribe();
    let Ack::Started { run_id } = s
        .submit(start("Buy the first product in the shop", AccessMode::Hard))
        .unwrap()
    else {
        panic!()
    };
    // Answer the moment the event is seen: the request is registered before it is announced.
    let (id, allowed) = loop {
        let e = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let AgentEvent::HumanRequested {
            request_id,
            allowed_responses,
            request: HumanRequestKind::Approval { .. },
            ..
        } = e.event
        {
            break (request_id, allowed_responses);
        }
    };
    assert_eq!(allowed, ["approve", "reject"]);
    let wrong = s.submit(Op::Answer {
        request_id: id.clone(),
        response: HumanResponse::Answer { text: "yes".into() },
    });
    assert!(
        matches!(&wrong, Err(SessionError::ResponseNotAllowed { given, .. }) if given == "answer"),
        "{wrong:?}"
    );
    let unknown = s.submit(Op::Answer {
        request_id: "no-such-request".into(),
        response: HumanResponse::Approve,
    });
    assert!(matches!(unknown, Err(SessionError::UnknownRequest(_))));
    // A delegate (an MCP client) can never approve the gate's approval…
    let delegate = s.submit_as(
        Submitter::Delegate,
        Op::Answer {
            request_id: id.clone(),
            response: HumanResponse::Approve,
        },
    );
    assert!(
        matches!(&delegate, Err(SessionError::NotDelegated(m)) if m.contains("only the person")),
        "{delegate:?}"
    );
    assert_eq!(delegate.unwrap_err().code(), "not_delegated");
    // …nor grant itself an override or start in a mode the person did not allow.
    assert!(matches!(
        s.submit_as(
            Submitter::Delegate,
            Op::GrantOverride {
                request_id: id.clone()
            }
        ),
        Err(SessionError::NotDelegated(_))
    ));
    assert!(matches!(
        s.submit_as(Submitter::Delegate, start("x", AccessMode::Off)),
        Err(SessionError::NotDelegated(_))
    ));
    assert_eq!(
        sim.phone(&p.serial).unwrap().ground_truth().orders_placed,
        0,
        "nothing ran while the approval waited"
    );
    assert_eq!(s.status().pending.len(), 1);
    assert!(
        s.auto_review_status().is_none(),
        "no approve-for-me status outside that mode"
    );
    assert!(matches!(
        s.submit(Op::GrantOverride {
            request_id: id.clone()
        }),
        Err(SessionError::NotApproveForMe)
    ));
    s.submit(Op::Answer {
        request_id: id.clone(),
        response: HumanResponse::Approve,
    })
    .unwrap();
    // The first valid answer wins; a second one finds nothing.
    assert!(matches!(
        s.submit(Op::Answer {
            request_id: id.clone(),
            response: HumanResponse::Reject { note: None },
        }),
        Err(SessionError::UnknownRequest(_))
    ));
    let out = wait(s, &run_id).await;
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert_eq!(
        sim.phone(&p.serial).unwrap().ground_truth().orders_placed,
        1,
        "the person approved: one order"
    );
}

#[tokio::test]
async fn the_persons_standing_answer_goes_through_the_registry_at_once() {
    // A policy answers the moment it is asked: its answer must reach the waiting run at once
    // (not after the request's 15-minute expiry), validated like any other.
    let person: Arc<dyn Approver> = Arc::new(PolicyApprover { approve: true });
    let (sim, p) = one_phone_with("checkout", SUBMIT, Delegation::default(), Some(person)).await;
    let t0 = std::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        p.session.run(
            "Buy the first product in the shop",
            AccessMode::Hard,
            TaskOptions::default(),
        ),
    )
    .await
    .expect("the approved run ended within a minute")
    .unwrap();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(
        sim.phone(&p.serial).unwrap().ground_truth().orders_placed,
        1
    );
    assert!(p.session.pending().is_empty());
}

#[tokio::test]
async fn cancel_while_an_approval_waits_ends_the_run_with_no_order() {
    let (sim, p) = one_phone("checkout", SUBMIT, Delegation::default()).await;
    let s = &p.session;
    let Ack::Started { run_id } = s
        .submit(start("Buy the first product in the shop", AccessMode::Hard))
        .unwrap()
    else {
        panic!()
    };
    let req = tokio::time::timeout(Duration::from_secs(60), s.next_pending())
        .await
        .unwrap();
    s.submit(Op::Pause).unwrap();
    assert!(s.status().paused);
    // Cancelling is never an escalation: a delegate may stop the run.
    s.submit_as(Submitter::Delegate, Op::Cancel).unwrap();
    let out = wait(s, &run_id).await;
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(matches!(
        s.submit(Op::Answer {
            request_id: req.id,
            response: HumanResponse::Approve
        }),
        Err(SessionError::UnknownRequest(_))
    ));
    let t = sim.phone(&p.serial).unwrap().ground_truth();
    assert_eq!(t.orders_placed, 0, "{t:?}");
    assert!(t.touches.is_empty(), "no tap reached the phone");
}

#[tokio::test]
async fn a_delegated_ask_user_is_answered_or_skipped_by_the_delegate() {
    for (delegated, skip) in [(true, true), (true, false), (false, true)] {
        let d = Delegation {
            ask_user: delegated,
            ..Delegation::default()
        };
        let (_sim, p) = one_phone("home", ASK, d).await;
        let s = &p.session;
        let Ack::Started { run_id } = s
            .submit(start("Ask me which size I want", AccessMode::Wary))
            .unwrap()
        else {
            panic!()
        };
        let req = tokio::time::timeout(Duration::from_secs(60), s.next_pending())
            .await
            .unwrap();
        let response = if skip {
            HumanResponse::Reject { note: None }
        } else {
            HumanResponse::Answer { text: "M".into() }
        };
        let op = Op::Answer {
            request_id: req.id.clone(),
            response: response.clone(),
        };
        let r = s.submit_as(Submitter::Delegate, op.clone());
        if delegated {
            // Skip is `reject`, one of ask_user's allowed responses (the old Skip bug).
            r.unwrap();
        } else {
            assert!(matches!(r, Err(SessionError::NotDelegated(_))), "{r:?}");
            s.submit(op).unwrap();
        }
        let out = wait(s, &run_id).await;
        assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    }
}

#[tokio::test]
async fn two_sessions_on_two_phones_share_one_store_without_stepping_on_each_other() {
    let _ = screen_reader();
    let sim = SimServer::start(SimConfig::with_devices(2), 0)
        .await
        .unwrap();
    let serials = sim.serials();
    sim.phone(&serials[1]).unwrap().reset("checkout").unwrap();
    let store = Store::open_in_memory().unwrap();
    let a = phone(
        &sim,
        &serials[0],
        TO_CART,
        &store,
        Delegation::default(),
        None,
    )
    .await;
    let b = phone(
        &sim,
        &serials[1],
        SUBMIT,
        &store,
        Delegation::default(),
        None,
    )
    .await;
    let Ack::Started { run_id: ra } = a
        .session
        .submit(start("Put the first product in the cart", AccessMode::Wary))
        .unwrap()
    else {
        panic!()
    };
    let Ack::Started { run_id: rb } = b
        .session
        .submit(start("Buy the first product in the shop", AccessMode::Hard))
        .unwrap()
    else {
        panic!()
    };
    assert_ne!(ra, rb);
    // B waits for its person; A's session has nothing pending and knows nothing of B's request.
    let req = tokio::time::timeout(Duration::from_secs(60), b.session.next_pending())
        .await
        .unwrap();
    assert!(a.session.pending().is_empty());
    assert!(matches!(
        a.session.submit(Op::Answer {
            request_id: req.id.clone(),
            response: HumanResponse::Approve
        }),
        Err(SessionError::UnknownRequest(_))
    ));
    let oa = wait(&a.session, &ra).await;
    assert_eq!(oa.status, RunStatus::Succeeded, "{oa:?}");
    b.session
        .submit(Op::Answer {
            request_id: req.id,
            response: HumanResponse::Reject { note: None },
        })
        .unwrap();
    let ob = wait(&b.session, &rb).await;
    assert_eq!(ob.run_id, rb);
    let ta = sim.phone(&serials[0]).unwrap().ground_truth();
    let tb = sim.phone(&serials[1]).unwrap().ground_truth();
    assert_eq!(ta.cart.len(), 1, "{ta:?}");
    assert_eq!((ta.orders_placed, tb.orders_placed), (0, 0));
    assert!(tb.touches.is_empty(), "B's rejected tap never reached B");
    // One store, two runs, each with its own phone's events only.
    for (id, serial) in [(&ra, &serials[0]), (&rb, &serials[1])] {
        let uuid = uuid::Uuid::parse_str(id).unwrap();
        let events = store.events(uuid).unwrap();
        assert!(!events.is_empty());
        assert_eq!(events[0].kind, "run_started");
        assert_eq!(
            events[0].payload["serial"],
            serial.as_str(),
            "{:?}",
            events[0]
        );
        assert_eq!(events.last().unwrap().kind, "run_finished");
        assert!(
            events.windows(2).all(|w| w[1].seq == w[0].seq + 1),
            "each run keeps its own gap-free sequence"
        );
    }
}
