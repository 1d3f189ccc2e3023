//! SSE stream shape: role chunk, content and tool-call deltas, finish chunk, usage, `[DONE]`;
//! stream faults.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use phoneagent_testkit::{MalformedBody, ScriptEntry, ScriptedModel};
use serde_json::{Value, json};

use crate::{body, start};

/// Send a streaming request and split the SSE body into `data:` payloads.
async fn stream_events(model: &ScriptedModel) -> (reqwest::header::HeaderMap, Vec<String>) {
    let mut b = body("s", "u");
    b["stream"] = json!(true);
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&b)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    (headers, parse_sse(&text))
}

fn parse_sse(text: &str) -> Vec<String> {
    assert!(
        text.ends_with("\n\n"),
        "events end with a blank line: {text:?}"
    );
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("event without data: {e:?}"))
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn stream_of_content_reasoning_and_tool_calls() {
    let mut e = ScriptEntry::text("<answer>do(action=\"Type\", text=\"你好, world\")</answer>");
    e.reasoning_content = Some("The field is focused.".into());
    e.tool_calls = vec![
        phoneagent_testkit::ScriptToolCall {
            id: Some("call_a".into()),
            name: "type_text".into(),
            arguments: json!({"text": "你好, world 😀"}),
        },
        phoneagent_testkit::ScriptToolCall {
            id: None,
            name: "finish".into(),
            arguments: json!({"message": "done"}),
        },
    ];
    let model = start(vec![e]).await;
    let (headers, events) = stream_events(&model).await;
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    // Every chunk has the same id and the chunk object type.
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], chunks[0]["id"]);
        assert_eq!(c["model"], "test-model");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for c in &chunks {
        if let Some(u) = c.get("usage") {
            assert_eq!(c["choices"], json!([]));
            usage = Some(u.clone());
            continue;
        }
        let ch = &c["choices"][0];
        if let Some(f) = ch["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
        let d = &ch["delta"];
        if let Some(t) = d["content"].as_str() {
            content.push_str(t);
        }
        if let Some(t) = d["reasoning_content"].as_str() {
            reasoning.push_str(t);
        }
        if let Some(tcs) = d["tool_calls"].as_array() {
            for tc in tcs {
                let i = tc["index"].as_u64().unwrap() as usize;
                if i == calls.len() {
                    // The first delta of a call carries id, type and name.
                    assert_eq!(tc["type"], "function");
                    calls.push((
                        tc["id"].as_str().unwrap().into(),
                        tc["function"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    calls[i].2.push_str(a);
                }
            }
        }
    }
    assert_eq!(
        content,
        "<answer>do(action=\"Type\", text=\"你好, world\")</answer>"
    );
    assert_eq!(reasoning, "The field is focused.");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_a");
    assert_eq!(calls[0].1, "type_text");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        json!({"text": "你好, world 😀"})
    );
    assert_eq!(calls[1].1, "finish");
    assert!(calls[1].0.starts_with("call_"));
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    let usage = usage.expect("usage chunk");
    assert!(usage["total_tokens"].as_u64().unwrap() > 0);
    // Content came in several deltas, not one.
    assert!(chunks.len() > 8, "{}", chunks.len());
    model.shutdown().await;
}

#[tokio::test]
async fn stream_errors_are_plain_json() {
    let mut e = ScriptEntry::status(429);
    e.retry_after = Some(1);
    let model = start(vec![e]).await;
    let mut b = body("s", "u");
    b["stream"] = json!(true);
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&b)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    model.shutdown().await;
}

#[tokio::test]
async fn stream_faults_malformed_missing_truncated_and_no_usage() {
    let mut malformed = ScriptEntry::text("abcdefghijklmnopqrstuvwxyz");
    malformed.malformed_body = Some(MalformedBody::Flag(true));
    let mut missing = ScriptEntry::text("abc");
    missing.missing_fields = vec!["choices".into()];
    let mut no_usage = ScriptEntry::text("abc");
    no_usage.usage = Some(Value::Null);
    let mut truncated = ScriptEntry::text("abcdefghijklmnopqrstuvwxyz0123456789");
    truncated.truncated = true;
    let model = start(vec![malformed, missing, no_usage, truncated]).await;

    let (_, events) = stream_events(&model).await;
    let bad = events
        .iter()
        .filter(|e| *e != "[DONE]" && serde_json::from_str::<Value>(e).is_err())
        .count();
    assert_eq!(bad, 1, "{events:?}");
    assert_eq!(events.last().unwrap(), "[DONE]");

    let (_, events) = stream_events(&model).await;
    for e in &events[..events.len() - 1] {
        let v: Value = serde_json::from_str(e).unwrap();
        assert!(v.get("choices").is_none(), "{e}");
    }

    let (_, events) = stream_events(&model).await;
    assert!(
        events.iter().all(|e| !e.contains("\"usage\"")),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap(), "[DONE]");

    // Truncated: the body breaks off halfway, no finish_reason, no [DONE].
    let mut b = body("s", "u");
    b["stream"] = json!(true);
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&b)
        .send()
        .await
        .unwrap();
    let mut s = resp.bytes_stream();
    let mut got = Vec::new();
    let mut errored = false;
    while let Some(item) = s.next().await {
        match item {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(_) => {
                errored = true;
                break;
            }
        }
    }
    assert!(errored, "the stream should end with a transport error");
    let text = String::from_utf8(got).unwrap();
    assert!(text.contains("data: {"));
    assert!(!text.contains("[DONE]"));
    assert!(!text.contains("\"finish_reason\":\"stop\""));
    assert_eq!(model.chat_requests()[3].outcome, "truncated");
    model.shutdown().await;
}

#[tokio::test]
async fn chunk_delay_and_cancel_mid_stream() {
    let mut e = ScriptEntry::text("a slow answer that trickles in chunk by chunk");
    e.chunk_delay_ms = Some(150);
    let model = start(vec![e]).await;
    let mut b = body("s", "u");
    b["stream"] = json!(true);
    let t0 = Instant::now();
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&b)
        .send()
        .await
        .unwrap();
    let mut s = resp.bytes_stream();
    let first = s.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    // Cancel: drop the stream after the first chunk.
    drop(s);
    assert!(t0.elapsed() < Duration::from_secs(1));
    let deadline = Instant::now() + Duration::from_secs(3);
    while model.chat_requests()[0].outcome != "client_disconnected" {
        assert!(
            Instant::now() < deadline,
            "outcome stayed {:?}",
            model.chat_requests()[0].outcome
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    model.shutdown().await;
}
