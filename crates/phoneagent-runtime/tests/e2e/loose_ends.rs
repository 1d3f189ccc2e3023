//! Loose ends of issue #11 item 8, end to end: a stale `finish(confirm=true)` (F1), the search
//! guard's pixel-grounded submission (F4), limits on the task, on `Retry-After` and on the
//! model's answer.

use std::time::Duration;

use phoneagent_protocol::{AgentEvent, RunStatus};

use crate::harness::{Harness, Opts};

/// Wait (at most 30 s) until the scripted model has received `n` chat requests.
async fn until_requests(h: &Harness, n: usize) {
    let t0 = std::time::Instant::now();
    while h.model.chat_requests().len() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the model never got request #{n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_is_stale_when_the_screen_changes_while_the_model_thinks_about_it() {
    // The confirm answer takes 1.5 s; while the model "thinks", the phone's screen changes (the
    // test opens the mail app on the virtual phone). The planning frame of the confirm turn
    // still showed the shop, so only a re-observation before accepting can see it (F1).
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"delay_ms": 1500, "content": "finish(message=\"The shop is open.\", confirm=True)"}
{"content": "finish(message=\"The mail app is open instead.\")"}
{"content": "finish(message=\"The mail app is open instead.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            verifier: false,
            ..Opts::default()
        },
    )
    .await;
    let phone = h.sim.phone(&h.serial).unwrap();
    let agent = h.agent.clone();
    let run = tokio::spawn(async move {
        agent
            .run("Open the shop", tokio_util::sync::CancellationToken::new())
            .await
    });
    until_requests(&h, 3).await;
    phone.reset("mail").unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("run finished in time")
        .unwrap()
        .unwrap();
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::FinishRejected { by, .. } if by == "stale_confirm")),
        "the confirm planned on the shop screen must be rejected as stale"
    );
    assert_eq!(out.message, "The mail app is open instead.");
    assert_eq!(h.model.chat_requests().len(), 5);
}
