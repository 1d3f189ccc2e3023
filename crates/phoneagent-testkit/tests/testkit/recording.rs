//! Recording: bodies, headers without credentials, `GET /__requests`, the record file.

use phoneagent_testkit::{RecordedRequest, ScriptEntry, ScriptedModel, ScriptedModelConfig};
use serde_json::Value;

use crate::{body, body_with_image, png_data_url};

const SECRET: &str = "sk-test-SECRET-value-0123456789";

#[tokio::test]
async fn records_requests_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.jsonl");
    let model = ScriptedModel::start(ScriptedModelConfig {
        require_api_key: Some(SECRET.into()),
        record_file: Some(file.clone()),
        ..ScriptedModelConfig::with_entries(vec![ScriptEntry::text("a"), ScriptEntry::text("b")])
    })
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", model.base_url());
    // Without the key: 401, and the entry is not consumed.
    let r = http.post(&url).json(&body("s", "u")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    // Wrong key: 401.
    let r = http
        .post(&url)
        .bearer_auth("sk-wrong")
        .json(&body("s", "u"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // With the key: answered; an image and a custom header are recorded.
    let img = image::RgbaImage::from_pixel(8, 8, image::Rgba([1, 2, 3, 255]));
    let data_url = png_data_url(&img);
    let r = http
        .post(&url)
        .bearer_auth(SECRET)
        .header("x-api-key", SECRET)
        .header("x-trace", "t-1")
        .json(&body_with_image(
            "[phoneagent-role: actor] operate the phone",
            "open the shop",
            &data_url,
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "a");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(!reqs[0].authorization_present);
    assert!(reqs[1].authorization_present && reqs[2].authorization_present);
    assert_eq!(reqs[0].response_status, 401);
    let last = &reqs[2];
    assert_eq!(last.method, "POST");
    assert_eq!(last.path, "/v1/chat/completions");
    assert_eq!(last.headers["x-trace"], "t-1");
    assert!(!last.headers.contains_key("authorization"));
    assert!(!last.headers.contains_key("x-api-key"));
    assert_eq!(last.queue.as_deref(), Some("default"));
    assert_eq!(last.outcome, "completed");
    assert!(last.system_text().contains("operate the phone"));
    assert!(last.all_text().contains("open the shop"));
    assert_eq!(last.image_urls(), vec![data_url.clone()]);
    let stripped = last.body_text_without_images();
    assert!(stripped.contains("<image>") && !stripped.contains(&data_url[30..]));
    // The secret appears nowhere: in memory, over HTTP, in the file.
    let over_http = http
        .get(format!("http://{}/__requests", model.addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let parsed: Vec<RecordedRequest> = serde_json::from_str(&over_http).unwrap();
    assert_eq!(parsed, reqs);
    assert!(!over_http.contains("SECRET"));
    assert!(!serde_json::to_string(&reqs).unwrap().contains("SECRET"));
    model.shutdown().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("SECRET"));
    let lines: Vec<RecordedRequest> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2].body, reqs[2].body);
    assert_eq!(lines[2].outcome, "completed");
}

#[tokio::test]
async fn requests_can_be_cleared_and_non_json_bodies_are_kept() {
    let model = ScriptedModel::start(ScriptedModelConfig::with_entries(vec![ScriptEntry::text(
        "a",
    )]))
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/chat/completions", model.base_url()))
        .body("not json at all")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let rec = &model.requests()[0];
    assert!(!rec.body_is_json);
    assert_eq!(rec.body, Value::String("not json at all".into()));
    assert_eq!(rec.answered_by.as_deref(), Some("error"));
    let _ = http
        .get(format!("{}/models", model.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.chat_requests().len(), 1);
    // Control endpoints are not recorded.
    let _ = http
        .get(format!("http://{}/__health", model.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 2);
    let r = http
        .delete(format!("http://{}/__requests", model.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(model.requests().is_empty());
    model.clear_requests();
    model.shutdown().await;
}
