//! The step API and pause/resume (SPEC R1, R2, R7; U2's Pause button).

use std::time::{Duration, Instant};

use phoneagent_protocol::{AgentEvent, Phase, RunStatus};
use phoneagent_runtime::{RuntimeError, StepOutcome};
use tokio_util::sync::CancellationToken;

use crate::harness::{Harness, Opts};

const OPEN_PRODUCT: &str = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Tap\", element={{center:shop.product.0}}, target_description=\"first product\", reason=\"Open it.\")"}
{"content": "finish(message=\"Product page open.\")"}
{"content": "finish(message=\"Product page open.\", confirm=True)"}
"#;

fn no_verifier() -> Opts {
    Opts {
        verifier: false,
        ..Opts::default()
    }
}

fn phases(events: &[AgentEvent]) -> Vec<Phase> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Phase { phase } => Some(*phase),
            _ => None,
        })
        .collect()
}

/// Wait (bounded) until the agent's live phase is `phase`.
async fn wait_phase(h: &Harness, phase: Phase) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while h.agent.state().phase != phase {
        assert!(
            Instant::now() < deadline,
            "phase {phase:?} never came (now {:?})",
            h.agent.state()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_step_is_one_turn_and_the_last_one_ends_the_run_like_run_does() {
    let mut h = Harness::new(OPEN_PRODUCT, no_verifier()).await;
    h.sim
        .phone(&h.serial)
        .unwrap()
        .set_faults(phoneagent_sim::Faults {
            dialog_disabled: true,
            ..Default::default()
        });
    let mut session = h
        .agent
        .start_steps(
            "Open the first product in the shop",
            CancellationToken::new(),
        )
        .unwrap();
    // One task per agent (R2): neither `run` nor another session while this one is open.
    assert!(matches!(
        h.agent.run("other", CancellationToken::new()).await,
        Err(RuntimeError::Busy)
    ));
    assert!(matches!(
        h.agent.start_steps("other", CancellationToken::new()),
        Err(RuntimeError::Busy)
    ));

    // Step 1: exactly one planning call and one tap; back in `observing`.
    let StepOutcome::Continue(state) = session.step().await.unwrap() else {
        panic!("step 1 ended the run")
    };
    assert_eq!((state.step, state.phase), (1, Phase::Observing));
    assert_eq!(h.model.chat_requests().len(), 1);
    assert_eq!(h.truth().touches.len(), 1);
    assert_eq!(h.truth().current_screen, "shop");

    let StepOutcome::Continue(state) = session.step().await.unwrap() else {
        panic!("step 2 ended the run")
    };
    assert_eq!((state.step, state.phase), (2, Phase::Observing));
    assert_eq!(h.truth().current_screen, "product");
    assert_eq!(h.truth().touches.len(), 2);

    // Step 3: first-stage finish (review package) — not terminal (F1).
    assert!(matches!(
        session.step().await.unwrap(),
        StepOutcome::Continue(_)
    ));
    let StepOutcome::Finished(out) = session.step().await.unwrap() else {
        panic!("the confirmed finish must end the run")
    };
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert_eq!(out.termination_code, "finish_accepted");
    assert_eq!(out.steps, 4);
    assert_eq!(out.run_id, session.run_id());
    // Stepping a finished session returns the same outcome and touches nothing.
    assert_eq!(
        session.step().await.unwrap(),
        StepOutcome::Finished(out.clone())
    );
    assert_eq!(h.model.chat_requests().len(), 4);
    assert_eq!(h.agent.state().phase, Phase::Succeeded);

    // The same history as `run` writes: one run_started, one run_finished, gap-free, stored.
    let events = h.drain();
    let started = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::RunStarted { .. }))
        .count();
    assert_eq!(started, 1);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Succeeded,
            ..
        })
    ));
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    assert_eq!(
        h.store.run(id).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
    assert_eq!(h.store.events(id).unwrap().len(), events.len());
    // The agent is free again.
    drop(session);
    assert!(
        h.agent
            .start_steps("next", CancellationToken::new())
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_share_the_step_limit_and_recoverable_steps_return_in_observing() {
    // Two unparseable answers: the protocol retry fails too → a recoverable replan.
    let script = r#"
{"content": "I would tap [500, 500]."}
{"content": "```do(action=\"Tap\", element=[500, 500])```"}
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Back\", reason=\"never asked: the limit is 2 steps\")"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            max_steps: 2,
            ..no_verifier()
        },
    )
    .await;
    let mut session = h
        .agent
        .start_steps("Open the shop", CancellationToken::new())
        .unwrap();
    let StepOutcome::Continue(state) = session.step().await.unwrap() else {
        panic!("a protocol failure is recoverable")
    };
    assert_eq!(state.phase, Phase::Observing, "R2: recoverable → observing");
    let events = h.drain();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Recovery { .. }))
    );
    assert_eq!(phases(&events).last(), Some(&Phase::Observing));
    assert!(
        h.truth().touches.is_empty(),
        "nothing touched on bad answers"
    );

    assert!(matches!(
        session.step().await.unwrap(),
        StepOutcome::Continue(_)
    ));
    assert_eq!(h.truth().current_screen, "shop");
    // Step 3 is over the limit: the same terminal semantics as `run` (R7), no model call.
    let StepOutcome::Finished(out) = session.step().await.unwrap() else {
        panic!("max_steps must end the run")
    };
    assert_eq!(
        (out.status, out.termination_code.as_str()),
        (RunStatus::Failed, "max_steps")
    );
    assert_eq!(h.model.chat_requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_or_cancelling_an_unfinished_session_records_it_cancelled() {
    let h = Harness::new(OPEN_PRODUCT, no_verifier()).await;
    let mut session = h
        .agent
        .start_steps(
            "Open the first product in the shop",
            CancellationToken::new(),
        )
        .unwrap();
    assert!(matches!(
        session.step().await.unwrap(),
        StepOutcome::Continue(_)
    ));
    let out = session.cancel().await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled);
    assert_eq!(h.truth().touches.len(), 1, "no device command after cancel");
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    assert_eq!(
        h.store.run(id).unwrap().unwrap().status,
        RunStatus::Cancelled
    );

    let session = h
        .agent
        .start_steps(
            "Open the first product in the shop",
            CancellationToken::new(),
        )
        .unwrap();
    let run_id = session.run_id();
    drop(session);
    // The drop closes the run in the background; the agent becomes free again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match h.agent.start_steps("next", CancellationToken::new()) {
            Ok(_) => break,
            Err(RuntimeError::Busy) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    let id = uuid::Uuid::parse_str(&run_id).unwrap();
    assert_eq!(
        h.store.run(id).unwrap().unwrap().status,
        RunStatus::Cancelled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_every_device_command_until_resume_and_keeps_the_run() {
    // The first answer takes 600 ms: the pause arrives while the model is thinking.
    let script = r#"
{"delay_ms": 600, "content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"content": "finish(message=\"The shop is open.\", confirm=True)"}
"#;
    let mut h = Harness::new(script, no_verifier()).await;
    let agent = h.agent.clone();
    let run =
        tokio::spawn(async move { agent.run("Open the shop", CancellationToken::new()).await });
    let deadline = Instant::now() + Duration::from_secs(20);
    while h.model.chat_requests().is_empty() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pause = h.agent.pause_handle();
    pause.pause();
    // The model's answer arrives; the agent stops before its next device command.
    wait_phase(&h, Phase::Paused).await;
    let commands = h.truth().commands_received;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let t = h.truth();
    assert_eq!(
        t.commands_received, commands,
        "no device command while paused"
    );
    assert!(t.touches.is_empty(), "the planned tap waits");
    assert_eq!(h.agent.state().step, 1, "the run state is kept");
    assert_eq!(h.model.chat_requests().len(), 1, "no further model call");
    assert!(!run.is_finished());

    pause.resume();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert_eq!(h.truth().current_screen, "shop");
    assert_eq!(h.truth().touches.len(), 1, "the held tap ran once");
    let ph = phases(&h.drain());
    let i = ph.iter().position(|p| *p == Phase::Paused).unwrap();
    assert_ne!(
        ph[i + 1],
        Phase::Paused,
        "resumed into the phase it paused in"
    );
    assert!(!pause.is_paused());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_paused_ends_cancelled_within_a_second() {
    let mut h = Harness::new(OPEN_PRODUCT, no_verifier()).await;
    h.agent.pause();
    let cancel = CancellationToken::new();
    let agent = h.agent.clone();
    let c2 = cancel.clone();
    let run = tokio::spawn(async move { agent.run("Open the shop", c2).await });
    wait_phase(&h, Phase::Paused).await;
    assert!(
        h.model.chat_requests().is_empty(),
        "paused before the first screenshot"
    );
    let t0 = Instant::now();
    cancel.cancel();
    let out = run.await.unwrap().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(out.status, RunStatus::Cancelled);
    assert!(h.truth().touches.is_empty());
    assert!(
        !h.agent.pause_handle().is_paused(),
        "a pause ends with its run"
    );
    let _ = h.drain();
}
