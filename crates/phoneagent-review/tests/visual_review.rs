//! The isolated visual reviewer against the scripted model server over HTTP on loopback
//! (SPEC S11): a verdict is parsed, a garbage answer is irreversible, a 500 is an error the
//! caller fails closed on, and the model receives exactly the fixed prompt and two images —
//! no conversation, no task, no model reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use image::{Rgba, RgbaImage};
use phoneagent_llm::image::ImagePolicy;
use phoneagent_llm::{ChatClient, ClientConfig, ModelClient, RetryPolicy};
use phoneagent_review::visual::{VisualEffect, VisualReviewError, VisualReviewer};
use phoneagent_testkit::{ScriptEntry, ScriptedModel, ScriptedModelConfig};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn client(base_url: &str) -> Arc<dyn ModelClient> {
    let mut cfg = ClientConfig::new(base_url, "scripted-model");
    cfg.timeout_ms = 5_000;
    cfg.connect_timeout_ms = 1_000;
    cfg.retry = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    Arc::new(ChatClient::new(cfg).unwrap())
}

/// A compose screen with an icon-only send button top right.
fn frame() -> RgbaImage {
    let mut img = RgbaImage::from_pixel(540, 1200, Rgba([255, 255, 255, 255]));
    for y in 60..90u32 {
        for x in 470..500u32 {
            if x - 470 <= y - 60 {
                img.put_pixel(x, y, Rgba([22, 119, 255, 255]));
            }
        }
    }
    img
}

async fn server(entries: Vec<ScriptEntry>) -> ScriptedModel {
    let entries = entries
        .into_iter()
        .map(|e| e.in_queue("safety_reviewer"))
        .collect();
    ScriptedModel::start(ScriptedModelConfig::with_entries(entries))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_verdict_is_parsed_and_the_model_sees_only_the_prompt_and_two_images() {
    let srv = server(vec![ScriptEntry::text(
        r#"{"effect": "send", "irreversible": true, "label": "paper-plane send icon"}"#,
    )])
    .await;
    let reviewer = VisualReviewer::new(Some(client(&srv.base_url())), ImagePolicy::default());
    let (v, resp) = reviewer
        .review(&frame(), (485, 75), &CancellationToken::new())
        .await;
    let v = v.unwrap();
    assert_eq!(v.effect, VisualEffect::Send);
    assert!(v.irreversible);
    assert_eq!(v.label.as_deref(), Some("paper-plane send icon"));
    assert!(resp.is_some());

    let reqs = srv.chat_requests();
    assert_eq!(reqs.len(), 1);
    let mut body = reqs[0].body.clone();
    let messages = body["messages"].as_array_mut().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "system + one user message, no conversation"
    );
    let mut images = 0;
    for m in messages.iter_mut() {
        if let Some(parts) = m["content"].as_array_mut() {
            for p in parts {
                if let Some(url) = p.pointer_mut("/image_url/url") {
                    let s = url.as_str().unwrap();
                    assert!(s.starts_with("data:image/jpeg;base64,"), "{}", &s[..40]);
                    *url = Value::String("<data:image/jpeg;base64,…>".into());
                    images += 1;
                }
            }
        }
    }
    assert_eq!(images, 2, "the marked frame and the crop");
    insta::assert_json_snapshot!("visual_review_request", body);
    srv.shutdown().await;
}

#[tokio::test]
async fn a_garbage_answer_is_irreversible() {
    let srv = server(vec![ScriptEntry::text(
        "Looks like some kind of button to me!",
    )])
    .await;
    let reviewer = VisualReviewer::new(Some(client(&srv.base_url())), ImagePolicy::default());
    let (v, _) = reviewer
        .review(&frame(), (485, 75), &CancellationToken::new())
        .await;
    let v = v.unwrap();
    assert!(!v.parsed);
    assert!(v.irreversible);
    assert_eq!(v.effect, VisualEffect::Unknown);
    srv.shutdown().await;
}

#[tokio::test]
async fn a_500_is_an_error_and_no_model_is_unavailable() {
    let srv = server(vec![ScriptEntry::status(500)]).await;
    let reviewer = VisualReviewer::new(Some(client(&srv.base_url())), ImagePolicy::default());
    let (v, resp) = reviewer
        .review(&frame(), (485, 75), &CancellationToken::new())
        .await;
    let e = v.unwrap_err();
    assert!(matches!(e, VisualReviewError::Call(_)), "{e:?}");
    assert_eq!(e.reason_code(), "reviewer_error_failclosed");
    assert!(resp.is_none());
    srv.shutdown().await;

    let none = VisualReviewer::new(None, ImagePolicy::default());
    let (v, _) = none
        .review(&frame(), (485, 75), &CancellationToken::new())
        .await;
    assert_eq!(
        v.unwrap_err().reason_code(),
        "reviewer_unavailable_failclosed"
    );
}
