//! What the model-backed judges see, and how the reviewer fails (SPEC S7, F2, P1; issue 5).
//!
//! The request bodies are taken from the scripted model server's record of what really went over
//! HTTP, with image data replaced by a placeholder, and pinned as insta snapshots: any change to
//! what a judge sees shows up in review.

use std::time::Duration;

use phoneagent_protocol::AgentEvent;
use phoneagent_protocol::event::GateOutcome;
use phoneagent_runtime::FinishVerifyMode;
use phoneagent_testkit::RecordedRequest;
use serde_json::Value;

use crate::harness::{Harness, Opts, gate_decisions};

/// Replace every `data:image/…` URL by a placeholder naming its media type.
fn without_images(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with("data:image/") => {
            let kind = s.split([';', ',']).next().unwrap_or("data:image");
            Value::String(format!("<{kind} elided>"))
        }
        Value::Array(a) => Value::Array(a.iter().map(without_images).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), without_images(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn bodies_for(h: &Harness, queue: &str) -> Vec<Value> {
    h.model
        .chat_requests()
        .iter()
        .filter(|r: &&RecordedRequest| r.queue.as_deref() == Some(queue))
        .map(|r| without_images(&r.body))
        .collect()
}

/// The user message text of a reviewer request.
fn user_text(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .expect("the reviewer's user message is plain text")
        .to_string()
}

/// The `<<<…>>>` target summary inside a reviewer request.
fn summary_of(body: &Value) -> String {
    let t = user_text(body);
    let start = t.find("<<<").expect("summary start") + 3;
    let end = t.rfind(">>>").expect("summary end");
    t[start..end].to_string()
}

fn reviewer_opts() -> Opts {
    Opts {
        mode: phoneagent_protocol::AccessMode::Reviewer,
        reviewer: true,
        verifier: false,
        scenario: Some("settings"),
        screen_reading: false,
        ..Opts::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reversibility_reviewer_sees_only_the_tool_and_a_redacted_summary_zh() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:删除账号}}, target_description=\"删除\", screen_description=\"设置页面，底部有红色的删除账号按钮。\", reason=\"用户让我清理账号，先点删除看看有哪些选项。\")"}
{"queue": "safety_reviewer", "content": "{\"reversible\": false, \"reason\": \"删除账号无法撤销\"}"}
{"content": "finish(message=\"没有删除任何东西。\")"}
{"content": "finish(message=\"没有删除任何东西。\", confirm=True)"}
"#;
    let mut h = Harness::new(script, reviewer_opts()).await;
    let out = h.run("看看设置里的账号选项").await;
    let events = h.drain();
    let bodies = bodies_for(&h, "safety_reviewer");
    assert_eq!(bodies.len(), 1, "one soft candidate, one review");
    let body = &bodies[0];
    insta::assert_json_snapshot!("reversibility_reviewer_request_zh", body);
    // Never the conversation: no task, no screen description, no reason, no image.
    let all = body.to_string();
    for leak in [
        "看看设置里的账号选项",
        "设置页面",
        "用户让我清理账号",
        "image",
    ] {
        assert!(!all.contains(leak), "{leak:?} reached the reviewer: {all}");
    }
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
    assert_eq!(summary_of(body), "删除");
    // Its verdict was applied: a warning, nothing deleted.
    assert!(
        gate_decisions(&events)
            .iter()
            .any(|g| g.2 == GateOutcome::Warned)
    );
    assert_eq!(h.truth().accounts_deleted, 0);
    assert_eq!(
        out.status,
        phoneagent_protocol::RunStatus::Succeeded,
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reversibility_reviewer_summary_is_redacted_then_cut_to_120_chars_en() {
    let script = r#"
{"content": "do(action=\"Tap\", element=[500, 500], target_description=\"Delete the saved address of alice@example.com (phone +1 415 555 0100) from this account and all of its synced devices, including the tablet\", screen_description=\"Address book with one saved address.\", reason=\"The user wants the old address gone; it belongs to Alice.\")"}
{"queue": "safety_reviewer", "content": "{\"reversible\": false, \"reason\": \"deleting an address cannot be undone\"}"}
{"content": "finish(message=\"Nothing was deleted.\")"}
{"content": "finish(message=\"Nothing was deleted.\", confirm=True)"}
"#;
    let mut h = Harness::new(script, reviewer_opts()).await;
    let _ = h.run("Tidy up my saved addresses").await;
    let _ = h.drain();
    let bodies = bodies_for(&h, "safety_reviewer");
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    insta::assert_json_snapshot!("reversibility_reviewer_request_en", body);
    let summary = summary_of(body);
    assert!(summary.chars().count() <= 120, "{summary:?}");
    assert!(
        summary.contains("[email]") && summary.contains("[phone]"),
        "{summary:?}"
    );
    let all = body.to_string();
    for leak in [
        "alice@example.com",
        "415 555",
        "Tidy up my saved addresses",
        "Address book",
        "belongs to Alice",
    ] {
        assert!(!all.contains(leak), "{leak:?} reached the reviewer: {all}");
    }
}

/// Run "open the shop" with the finish verifier always on and return the one request body it
/// was sent; `task`/`claim` in the test's language, the actor's prompt must not leak.
async fn verifier_request(task: &str, claim: &str) -> Value {
    let script = format!(
        r#"
{{"content": "do(action=\"Tap\", element={{{{center:home.app.shop}}}}, target_description=\"商城\", screen_description=\"Home screen with app icons.\", reason=\"Open the shop app first.\")"}}
{{"content": "finish(message=\"{claim}\")"}}
{{"content": "finish(message=\"{claim}\", confirm=True)"}}
{{"queue": "verifier", "content": "{{\"verdict\": \"pass\", \"reason\": \"the product list is visible\"}}"}}
"#
    );
    let mut h = Harness::new(
        &script,
        Opts {
            verifier: true,
            config: |c| c.finish_verify = FinishVerifyMode::Always,
            ..Opts::default()
        },
    )
    .await;
    let out = h.run(task).await;
    let _ = h.drain();
    assert_eq!(
        out.status,
        phoneagent_protocol::RunStatus::Succeeded,
        "{out:?}"
    );
    let bodies = bodies_for(&h, "verifier");
    assert_eq!(bodies.len(), 1);
    let body = bodies[0].clone();
    // Goal, claim and route are there; the actor's prompt and conversation are not.
    let all = body.to_string();
    assert!(all.contains(&format!("Goal: {task}")), "{all}");
    assert!(all.contains(&format!("Agent's claim: {claim}")), "{all}");
    for leak in [
        "phoneagent-role: actor",
        "Home screen with app icons",
        "Open the shop app first",
    ] {
        assert!(!all.contains(leak), "{leak:?} reached the verifier: {all}");
    }
    let images = all.matches("<data:image/").count();
    assert!((1..=3).contains(&images), "tail screenshots only: {images}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_verifier_sees_goal_claim_route_and_tail_screens_only() {
    let body = verifier_request("Open the shop app", "The shop is open.").await;
    insta::assert_json_snapshot!("finish_verifier_request", body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_verifier_request_zh() {
    let body = verifier_request("打开商城应用", "商城已打开。").await;
    insta::assert_json_snapshot!("finish_verifier_request_zh", body);
}

/// One soft candidate (bare 删除 on the settings screen) in reviewer mode; the run must stop it.
const DELETE_THEN_STOP: &str = r#"
{"content": "do(action=\"Tap\", element={{center:删除账号}}, target_description=\"删除\", reason=\"Open the delete option.\")"}
{"content": "finish(message=\"Stopped.\")"}
{"content": "finish(message=\"Stopped.\", confirm=True)"}
"#;

/// Run DELETE_THEN_STOP with the reviewer set up by `opts`; assert it failed closed with `code`
/// and touched nothing irreversible.
async fn assert_fails_closed(script: &str, opts: Opts, code: &str) {
    let mut h = Harness::new(script, opts).await;
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        h.run("Look at the account options"),
    )
    .await
    .expect("run in time");
    let events = h.drain();
    let gate = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::GateDecision {
                outcome,
                reasons,
                receipt,
                ..
            } => Some((*outcome, reasons.clone(), receipt.clone())),
            _ => None,
        })
        .expect("a gate decision");
    assert_eq!(gate.0, GateOutcome::Warned, "{gate:?}");
    assert!(gate.1.iter().any(|r| r == code), "{gate:?}");
    assert!(gate.2.is_some_and(|r| !r.is_empty()), "a warning receipt");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ActionDispatched { .. })),
        "no tap was sent"
    );
    let t = h.truth();
    assert_eq!(t.accounts_deleted, 0);
    assert!(t.touches.is_empty());
    assert_eq!(
        out.status,
        phoneagent_protocol::RunStatus::Succeeded,
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_unreachable_fails_closed_with_no_irreversible_action() {
    // A port that was free a moment ago: connection refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_fails_closed(
        DELETE_THEN_STOP,
        Opts {
            reviewer_url: Some(format!("http://127.0.0.1:{port}/v1")),
            ..reviewer_opts()
        },
        "reviewer_error_failclosed",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_http_500_fails_closed() {
    let script = format!(
        "{DELETE_THEN_STOP}\n{}",
        r#"{"queue": "safety_reviewer", "status": 500, "error_message": "upstream overloaded"}"#
    );
    assert_fails_closed(
        &script,
        Opts {
            reviewer_url: Some(String::new()), // the scripted model, without retries
            ..reviewer_opts()
        },
        "reviewer_error_failclosed",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_timeout_fails_closed() {
    let script = format!(
        "{DELETE_THEN_STOP}\n{}",
        r#"{"queue": "safety_reviewer", "delay_ms": 6000, "content": "{\"reversible\": true}"}"#
    );
    assert_fails_closed(
        &script,
        Opts {
            reviewer_url: Some(String::new()), // 2 s client timeout
            ..reviewer_opts()
        },
        "reviewer_error_failclosed",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_not_configured_fails_closed_as_unavailable() {
    assert_fails_closed(
        DELETE_THEN_STOP,
        Opts {
            reviewer: false,
            ..reviewer_opts()
        },
        "reviewer_unavailable_failclosed",
    )
    .await;
}

/// Issue #13: the human-request contract every front end uses. A request is registered before
/// `human_requested` is sent, so an answer given the instant the event is seen is taken (the
/// app used to retry for 500 ms); the event names the answers it takes; and "Skip" on an
/// `ask_user` (a `reject`) is accepted and reaches the model as a skipped question — before,
/// it always failed with a mismatched-response error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_answered_the_moment_it_is_announced_and_ask_user_skip_work() {
    use phoneagent_protocol::event::HumanResponse;
    let script = r#"
{"content": "do(action=\"Interact\", message=\"Which size do you want?\")"}
{"content": "finish(message=\"Stopped: the size is unknown.\")"}
{"content": "finish(message=\"Stopped: the size is unknown.\", confirm=True)"}
"#;
    let h = crate::harness::Harness::new(
        script,
        crate::harness::Opts {
            verifier: false,
            ..crate::harness::Opts::default()
        },
    )
    .await;
    let mut events = h.agent.subscribe();
    let approvals = h.approvals.clone();
    let answered = tokio::spawn(async move {
        loop {
            let e = events.recv().await.expect("events");
            if let phoneagent_protocol::AgentEvent::HumanRequested {
                request_id,
                allowed_responses,
                ..
            } = e.event
            {
                // No wait, no retry: answered on sight.
                let r = approvals.answer(&request_id, HumanResponse::Reject { note: None });
                return (r, allowed_responses);
            }
        }
    });
    let out = h.run("Buy a T-shirt").await;
    let (result, allowed) = tokio::time::timeout(std::time::Duration::from_secs(10), answered)
        .await
        .expect("a human request was announced")
        .unwrap();
    assert_eq!(result, Ok(()), "answered on sight");
    assert_eq!(allowed, vec!["answer".to_string(), "reject".to_string()]);
    let _ = out; // how the run ends after a skipped question is the finish guards' business
    let told = h
        .model
        .chat_requests()
        .iter()
        .any(|r| r.all_text().contains("the user skipped this question"));
    assert!(told, "the model is told the question was skipped");
    // An answer of the wrong kind is refused with what the request takes.
    let err = h
        .approvals
        .answer("no-such-request", HumanResponse::Approve)
        .unwrap_err();
    assert!(err.to_string().contains("no pending request"), "{err}");
}
