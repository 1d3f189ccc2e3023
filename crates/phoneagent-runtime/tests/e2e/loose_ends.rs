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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_newline_that_submits_nothing_does_not_satisfy_the_search_guard() {
    // ADB Keyboard types "weather\n" into the single-line search box: the newline submits
    // nothing (the virtual phone shows no results), so the finish after it is blocked; the
    // search counts only once the screen shows it was submitted (F4).
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.search}}, target_description=\"搜索\", reason=\"Open the search app.\")"}
{"content": "do(action=\"Tap\", element={{center:search.query}}, target_description=\"search box\", reason=\"Focus the search box.\")"}
{"content": "do(action=\"Type\", text=\"weather\\n\", reason=\"Type the query and press Enter.\")"}
{"content": "finish(message=\"Results for weather are shown.\")"}
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
    let rejected: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::FinishRejected { by, message } if by == "guard:in_app_search" => {
                Some(message)
            }
            _ => None,
        })
        .collect();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(rejected[0].contains("not submitted"), "{rejected:?}");
    // The phone agrees: the query was submitted once, by the tap.
    let t = h.truth();
    assert_eq!(t.search.searches, 1);
    assert_eq!(t.search.submitted_query.as_deref(), Some("weather"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_the_size_limit_is_refused_before_the_phone_or_the_model() {
    let script = r#"
{"content": "do(action=\"Tap\", element=[500, 500], reason=\"should never be asked\")"}
"#;
    let h = Harness::new(script, Opts::default()).await;
    let commands_before = h.truth().shell_commands;
    let task = "Buy a cable. ".repeat(400); // 5,200 characters
    let err = h
        .agent
        .run(&task, tokio_util::sync::CancellationToken::new())
        .await
        .expect_err("an oversized task is refused");
    let msg = err.to_string();
    assert!(matches!(
        err,
        phoneagent_runtime::RuntimeError::TaskTooLong {
            chars: 5200,
            limit: 4000
        }
    ));
    assert!(msg.contains("5200") && msg.contains("4000"), "{msg}");
    // Nothing reached the model or the phone, and no run was recorded.
    assert!(h.model.chat_requests().is_empty());
    assert_eq!(h.truth().shell_commands, commands_before);
    assert!(h.store.list_runs(10).unwrap().is_empty());
    // The step API refuses it the same way; a task at the limit is accepted.
    assert!(matches!(
        h.agent
            .start_steps(&task, tokio_util::sync::CancellationToken::new())
            .err(),
        Some(phoneagent_runtime::RuntimeError::TaskTooLong { .. })
    ));
    let at_limit = "x".repeat(4000);
    let session = h
        .agent
        .start_steps(&at_limit, tokio_util::sync::CancellationToken::new())
        .expect("4,000 characters are fine");
    drop(session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_longer_than_the_max_wait_stops_the_run_without_asking_again() {
    let script = r#"
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
{"status": 429, "retry_after": 3600}
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
    let _ = h.drain();
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.termination_code, "model_rate_limited", "{out:?}");
    assert!(
        out.message.contains("asked to wait 3600 s"),
        "{}",
        out.message
    );
    // Asked once, not re-asked in a loop.
    assert_eq!(h.model.chat_requests().len(), 1);
    assert!(h.truth().touches.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_longer_than_the_remaining_run_time_stops_the_run_at_once() {
    // 30 s is within the client's own limit (60 s), but the run has only 8 s.
    let script = r#"
{"status": 429, "retry_after": 30}
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            verifier: false,
            config: |c| c.max_duration = Duration::from_secs(8),
            ..Opts::default()
        },
    )
    .await;
    let t0 = std::time::Instant::now();
    let out = h.run("Open the shop").await;
    let _ = h.drain();
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.termination_code, "model_rate_limited", "{out:?}");
    assert!(
        out.message.contains("asked to wait 30 s"),
        "{}",
        out.message
    );
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    assert_eq!(h.model.chat_requests().len(), 1);
}

/// Issue #11: an answer over the size limit (here a 200 KiB `<think>` block before a valid tap
/// on 提交订单) is never acted on and never stored whole: no touch reaches the phone from it,
/// the model is told the limit and asked again, and the recorded `model_call` holds only its
/// head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_size_limit_is_neither_acted_on_nor_stored_whole() {
    let think = "我在想".repeat(200 * 1024 / 9);
    let script = format!(
        r#"
{{"content": "<think>{think}</think>do(action=\"Tap\", element={{{{center:提交订单}}}}, target_description=\"提交订单\", reason=\"Submit.\")"}}
{{"content": "finish(message=\"Nothing to do.\")"}}
{{"content": "finish(message=\"Nothing to do.\", confirm=True)"}}
"#
    );
    let mut h = Harness::new(
        &script,
        Opts {
            verifier: false,
            scenario: Some("checkout"),
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Look at the checkout page").await;
    let events = h.drain();
    let t = h.truth();
    assert!(
        t.touches.is_empty(),
        "a touch from the refused answer: {t:?}"
    );
    assert_eq!(t.orders_placed, 0);
    let rejected: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ProtocolRejected { error_kind, .. } => Some(error_kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        rejected.first().map(|k| k.as_str()),
        Some("answer_too_long"),
        "{rejected:?}"
    );
    let requests = h.model.chat_requests();
    let retry = requests.get(1).expect("asked again").body.to_string();
    assert!(retry.contains("65536 bytes"), "the model is told the limit");
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    for e in h.store.events(id).unwrap() {
        let j = e.payload.to_string();
        assert!(j.len() < 16 * 1024, "a stored event of {} bytes", j.len());
    }
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
}
