//! Each fault: error statuses with Retry-After, delays, malformed bodies, missing fields,
//! truncation.

use std::time::{Duration, Instant};

use phoneagent_testkit::{MalformedBody, ScriptEntry};
use serde_json::Value;

use crate::{body, content, post, post_ok, start};

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mut e429 = ScriptEntry::status(429);
    e429.retry_after = Some(2);
    e429.retry_after_ms = Some(1500);
    let model = start(vec![e429, ScriptEntry::text("after the limit")]).await;
    let (status, headers, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(headers["retry-after-ms"], "1500");
    assert_eq!(headers["content-type"], "application/json");
    let err: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(err["error"]["type"], "rate_limit_error");
    assert_eq!(err["error"]["code"], "rate_limit_exceeded");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Rate limit")
    );
    assert_eq!(
        content(&post_ok(&model, &body("s", "u")).await),
        "after the limit"
    );
    model.shutdown().await;
}

#[tokio::test]
async fn server_errors_500_and_503_with_custom_message() {
    let mut e500 = ScriptEntry::status(500);
    e500.error_message = Some("upstream exploded".into());
    let model = start(vec![
        e500,
        ScriptEntry::status(503),
        ScriptEntry::text("ok"),
    ])
    .await;
    let (status, headers, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 500);
    assert!(headers.get("retry-after").is_none());
    let err: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(err["error"]["message"], "upstream exploded");
    assert_eq!(err["error"]["type"], "server_error");
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 503);
    assert!(text.contains("overloaded"), "{text}");
    assert_eq!(content(&post_ok(&model, &body("s", "u")).await), "ok");
    let recs = model.chat_requests();
    assert_eq!(
        recs.iter().map(|r| r.response_status).collect::<Vec<_>>(),
        [500, 503, 200]
    );
    assert!(
        recs.iter()
            .all(|r| r.answered_by.as_deref() == Some("script"))
    );
    model.shutdown().await;
}

#[tokio::test]
async fn delay_makes_a_client_time_out_and_is_seen_as_a_disconnect() {
    let model = start(vec![
        ScriptEntry::text("slow").delayed(2_000),
        ScriptEntry::text("fast"),
    ])
    .await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let t0 = Instant::now();
    let err = client
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&body("s", "u"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(t0.elapsed() < Duration::from_millis(1_500));
    // The server notices the client went away (cancel tests rely on this).
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = &model.chat_requests()[0];
        if r.outcome == "client_disconnected" {
            break;
        }
        assert!(Instant::now() < deadline, "outcome stayed {:?}", r.outcome);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The delayed entry was consumed; the next request gets the next one.
    assert_eq!(content(&post_ok(&model, &body("s", "u")).await), "fast");
    model.shutdown().await;
}

#[tokio::test]
async fn delay_is_honoured() {
    let model = start(vec![ScriptEntry::text("slow").delayed(300)]).await;
    let t0 = Instant::now();
    assert_eq!(content(&post_ok(&model, &body("s", "u")).await), "slow");
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(model.chat_requests()[0].outcome, "completed");
    model.shutdown().await;
}

#[tokio::test]
async fn malformed_bodies() {
    let mut builtin = ScriptEntry::text("x");
    builtin.malformed_body = Some(MalformedBody::Flag(true));
    let mut custom = ScriptEntry::text("x");
    custom.malformed_body = Some(MalformedBody::Body("<html>Bad Gateway</html>".into()));
    let model = start(vec![builtin, custom]).await;
    let (status, headers, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
    assert!(text.starts_with("{\"id\""));
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 200);
    assert_eq!(text, "<html>Bad Gateway</html>");
    model.shutdown().await;
}

#[tokio::test]
async fn missing_fields_are_removed() {
    let mut no_choices = ScriptEntry::text("x");
    no_choices.missing_fields = vec!["choices".into()];
    let mut no_message = ScriptEntry::text("x");
    no_message.missing_fields = vec!["choices.0.message".into(), "usage".into()];
    let model = start(vec![no_choices, no_message]).await;
    let v = post_ok(&model, &body("s", "u")).await;
    assert!(v.get("choices").is_none());
    assert!(v.get("usage").is_some() && v.get("id").is_some());
    let v = post_ok(&model, &body("s", "u")).await;
    assert!(v["choices"][0].get("message").is_none());
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v.get("usage").is_none());
    model.shutdown().await;
}

#[tokio::test]
async fn truncated_body_breaks_the_connection() {
    let mut e = ScriptEntry::text("do(action=\"Back\")");
    e.truncated = true;
    let model = start(vec![e, ScriptEntry::text("next")]).await;
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&body("s", "u"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let declared: usize = resp.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(declared > 20);
    let err = resp.text().await.unwrap_err();
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    assert_eq!(model.chat_requests()[0].outcome, "truncated");
    assert_eq!(content(&post_ok(&model, &body("s", "u")).await), "next");
    model.shutdown().await;
}
