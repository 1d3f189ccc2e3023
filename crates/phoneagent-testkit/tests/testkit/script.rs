//! Script order, queues, routing rules, exhaustion policy, run-time script updates.

use phoneagent_testkit::{
    OnExhausted, QueueRule, Script, ScriptEntry, ScriptedModel, ScriptedModelConfig,
};
use serde_json::{Value, json};

use crate::{body, content, post, post_ok, start};

#[tokio::test]
async fn answers_in_order_then_reports_exhaustion() {
    let model = start(vec![
        ScriptEntry::text("one"),
        ScriptEntry::text("two"),
        ScriptEntry::text("three"),
    ])
    .await;
    for want in ["one", "two", "three"] {
        let v = post_ok(&model, &body("sys", "go")).await;
        assert_eq!(content(&v), want);
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "test-model");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    }
    let (status, _, text) = post(&model, &body("sys", "go")).await;
    assert_eq!(status, 500);
    let err: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(err["error"]["code"], "script_exhausted");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("\"default\"") && msg.contains("3 served"),
        "{msg}"
    );
    let reqs = model.chat_requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[3].answered_by.as_deref(), Some("error"));
    assert_eq!(reqs[3].response_status, 500);
    assert_eq!(model.pending().get("default"), Some(&0));
    model.shutdown().await;
}

#[tokio::test]
async fn queues_are_chosen_by_marker_header_and_rules() {
    let script = Script {
        entries: vec![
            ScriptEntry::text("actor-1").in_queue("actor"),
            ScriptEntry::text("verifier-1").in_queue("verifier"),
            ScriptEntry::text("actor-2").in_queue("actor"),
            ScriptEntry::text("safety-1").in_queue("safety_reviewer"),
            ScriptEntry::text("auto-1").in_queue("auto_reviewer"),
            ScriptEntry::text("fallback-1"),
        ],
        rules: vec![QueueRule {
            queue: "auto_reviewer".into(),
            system_contains: Some("approve on the user's behalf".into()),
            contains: None,
        }],
        on_exhausted: OnExhausted::Error,
    };
    let model = ScriptedModel::start(ScriptedModelConfig {
        script,
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    let actor = body("You operate a phone. [phoneagent-role: actor]", "task");
    let verifier = body("[phoneagent-role: verifier] Is the task done?", "x");
    // Interleaved: each role gets its own queue in order.
    assert_eq!(content(&post_ok(&model, &verifier).await), "verifier-1");
    assert_eq!(content(&post_ok(&model, &actor).await), "actor-1");
    assert_eq!(content(&post_ok(&model, &actor).await), "actor-2");
    // The header names a queue.
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .header("x-phoneagent-role", "safety_reviewer")
        .json(&body("no marker here", "x"))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(content(&v), "safety-1");
    // A rule beats the marker.
    let auto = body(
        "[phoneagent-role: verifier] You approve on the user's behalf.",
        "x",
    );
    assert_eq!(content(&post_ok(&model, &auto).await), "auto-1");
    // A role the script never mentions falls back to the default queue.
    let unknown = body("[phoneagent-role: calibration]", "x");
    assert_eq!(content(&post_ok(&model, &unknown).await), "fallback-1");
    // An exhausted named queue does not fall back: it is an error naming the queue.
    let (status, _, text) = post(&model, &verifier).await;
    assert_eq!(status, 500);
    assert!(text.contains("\\\"verifier\\\""), "{text}");
    let queues: Vec<_> = model
        .chat_requests()
        .iter()
        .map(|r| r.queue.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        queues,
        [
            "verifier",
            "actor",
            "actor",
            "safety_reviewer",
            "auto_reviewer",
            "default",
            "verifier"
        ]
    );
    model.shutdown().await;
}

#[tokio::test]
async fn repeat_last_policy_repeats_faults_too() {
    let mut script = Script::from_entries(vec![ScriptEntry::text("a"), ScriptEntry::status(503)]);
    script.on_exhausted = OnExhausted::RepeatLast;
    let model = ScriptedModel::start(ScriptedModelConfig {
        script,
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(content(&post_ok(&model, &body("s", "u")).await), "a");
    for _ in 0..3 {
        let (status, _, _) = post(&model, &body("s", "u")).await;
        assert_eq!(status, 503);
    }
    model.shutdown().await;
}

#[tokio::test]
async fn script_can_be_replaced_and_appended_at_run_time() {
    let model = start(vec![ScriptEntry::text("old")]).await;
    let http = reqwest::Client::new();
    let url = format!("http://{}/__script", model.addr());
    // Replace with a JSON object.
    let r: Value = http
        .post(&url)
        .json(&json!({"entries": [{"content": "new-1"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["mode"], "replace");
    assert_eq!(r["pending"]["default"], 1);
    // Append JSONL text.
    let r = http
        .post(format!("{url}?mode=append"))
        .body(
            "{\"content\": \"new-2\"}\n# comment\n{\"queue\": \"verifier\", \"content\": \"v\"}\n",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Library API appends too.
    model
        .push_entries(vec![ScriptEntry::text("new-3")])
        .unwrap();
    for want in ["new-1", "new-2", "new-3"] {
        assert_eq!(content(&post_ok(&model, &body("s", "u")).await), want);
    }
    assert_eq!(
        content(&post_ok(&model, &body("[phoneagent-role: verifier]", "u")).await),
        "v"
    );
    // A bad update is refused with a message naming the line.
    let r = http
        .post(&url)
        .body("{\"content\": \"ok\"}\n{\"stauts\": 500}\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(text.contains("line 2") && text.contains("stauts"), "{text}");
    model.shutdown().await;
}

#[tokio::test]
async fn tool_calls_reasoning_and_usage() {
    let mut with_usage = ScriptEntry::text("x");
    with_usage.usage = Some(json!({"prompt_tokens": 1000, "completion_tokens": 20}));
    let mut no_usage = ScriptEntry::text("y");
    no_usage.usage = Some(Value::Null);
    let mut tool = ScriptEntry::tool_call("tap", json!({"element": [10, 20], "reason": "go"}));
    tool.reasoning_content = Some("thinking…".into());
    tool.tool_calls.push(phoneagent_testkit::ScriptToolCall {
        id: Some("call_custom".into()),
        name: "note".into(),
        arguments: Value::String("{broken".into()),
    });
    let model = start(vec![tool, with_usage, no_usage]).await;
    let v = post_ok(&model, &body("s", "hello there")).await;
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], Value::Null);
    assert_eq!(msg["reasoning_content"], "thinking…");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let calls = msg["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "tap");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"element": [10, 20], "reason": "go"}));
    assert_eq!(calls[1]["id"], "call_custom");
    assert_eq!(calls[1]["function"]["arguments"], "{broken");
    // Estimated usage is present and consistent.
    let u = &v["usage"];
    assert!(u["prompt_tokens"].as_u64().unwrap() >= 1);
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
    );
    let v = post_ok(&model, &body("s", "u")).await;
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020})
    );
    let v = post_ok(&model, &body("s", "u")).await;
    assert!(v.get("usage").is_none());
    model.shutdown().await;
}

#[tokio::test]
async fn models_health_and_unknown_paths() {
    let model = ScriptedModel::start(ScriptedModelConfig {
        models: vec!["glm-4v".into(), "autoglm-phone".into()],
        ..ScriptedModelConfig::with_entries(vec![ScriptEntry::text("a")])
    })
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let v: Value = http
        .get(format!("{}/models", model.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "glm-4v");
    assert_eq!(v["data"][1]["id"], "autoglm-phone");
    let h: Value = http
        .get(format!("http://{}/__health", model.addr()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["pending"]["default"], 1);
    assert_eq!(h["space"], "relative_0_999");
    let r = http
        .post(format!("http://{}/chat/completions", model.addr()))
        .json(&body("s", "u"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let text = r.text().await.unwrap();
    assert!(text.contains("/v1"), "{text}");
    // A request that is not a chat request is a 400 naming what is wrong.
    let r = http
        .post(format!("{}/chat/completions", model.base_url()))
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("messages"));
    // Neither consumed the script entry.
    assert_eq!(model.pending().get("default"), Some(&1));
    model.shutdown().await;
}

#[tokio::test]
async fn invalid_config_is_refused() {
    let err = ScriptedModel::start(ScriptedModelConfig {
        space: phoneagent_protocol::CoordinateSpace::DisplayPixels,
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("relative_0_999"), "{err}");
    let err = ScriptedModel::start(ScriptedModelConfig::with_entries(vec![
        ScriptEntry::status(42),
    ]))
    .await
    .unwrap_err();
    assert!(err.to_string().contains("entry 1"), "{err}");
}
