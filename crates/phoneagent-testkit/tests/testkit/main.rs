//! Integration tests of the scripted model server over real HTTP on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod binary;
mod faults;
mod oracle;
mod placeholders;
mod recording;
mod script;
mod stream;

use base64::Engine as _;
use phoneagent_testkit::{ScriptEntry, ScriptedModel, ScriptedModelConfig};
use serde_json::{Value, json};

/// Start a server answering `entries` in order.
pub async fn start(entries: Vec<ScriptEntry>) -> ScriptedModel {
    ScriptedModel::start(ScriptedModelConfig::with_entries(entries))
        .await
        .unwrap()
}

/// A chat request body with a system prompt and a user text.
pub fn body(system: &str, user: &str) -> Value {
    json!({
        "model": "test-model",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user}
        ]
    })
}

/// A chat request body with a user image (data URL).
pub fn body_with_image(system: &str, user: &str, data_url: &str) -> Value {
    json!({
        "model": "test-model",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": [
                {"type": "text", "text": user},
                {"type": "image_url", "image_url": {"url": data_url}}
            ]}
        ]
    })
}

/// POST a chat request, returning (status, headers, body text).
pub async fn post(
    model: &ScriptedModel,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

/// POST and parse the JSON answer; panics unless 200.
pub async fn post_ok(model: &ScriptedModel, body: &Value) -> Value {
    let (status, _, text) = post(model, body).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// `choices[0].message.content` of an answer.
pub fn content(v: &Value) -> &str {
    v["choices"][0]["message"]["content"].as_str().unwrap_or("")
}

/// Encode an RGBA image as a PNG data URL.
pub fn png_data_url(img: &image::RgbaImage) -> String {
    use image::ImageEncoder as _;
    let mut buf = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut buf,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgba8,
    )
    .unwrap();
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(buf)
    )
}

/// Encode an RGB image as a JPEG data URL (quality 85).
pub fn jpeg_data_url(img: &image::RgbaImage) -> String {
    let rgb = image::DynamicImage::ImageRgba8(img.clone()).to_rgb8();
    let mut buf = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut buf, 85)
        .encode_image(&rgb)
        .unwrap();
    format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(buf)
    )
}
