//! Benchmark of the scripted model server: what one model call costs a test.
//!
//! Run: `cargo bench -p phoneagent-testkit --bench scripted_model` (prints a table).
//! Measures the round trip of a text answer, an SSE answer, a request carrying a 1080x2400
//! screenshot, an oracle probe answer, and the oracle's target search alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark binary

use std::time::{Duration, Instant};

use base64::Engine as _;
use image::{Rgba, RgbaImage};
use phoneagent_testkit::{
    OnExhausted, OracleConfig, Script, ScriptEntry, ScriptedModel, ScriptedModelConfig,
};
use serde_json::{Value, json};

fn probe(w: u32, h: u32, cx: u32, cy: u32, r: u32) -> RgbaImage {
    let mut img = RgbaImage::from_pixel(w, h, Rgba([236, 236, 236, 255]));
    for y in cy - r..=cy + r {
        for x in cx - r..=cx + r {
            let (dx, dy) = (f64::from(x) - f64::from(cx), f64::from(y) - f64::from(cy));
            if dx.hypot(dy) <= f64::from(r) {
                img.put_pixel(x, y, Rgba([220, 30, 30, 255]));
            }
        }
    }
    img
}

fn data_url(img: &RgbaImage) -> String {
    let mut buf = std::io::Cursor::new(Vec::new());
    img.write_to(&mut buf, image::ImageFormat::Png).unwrap();
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(buf.into_inner())
    )
}

fn request(image: Option<&str>, stream: bool) -> Value {
    let mut content = vec![json!({"type": "text", "text": "do the task"})];
    if let Some(url) = image {
        content.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    json!({
        "model": "bench",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "[phoneagent-role: actor] You operate a phone."},
            {"role": "user", "content": content}
        ]
    })
}

struct Row {
    name: &'static str,
    n: usize,
    total: Duration,
}

async fn time_requests(
    name: &'static str,
    n: usize,
    model: &ScriptedModel,
    body: &Value,
    rows: &mut Vec<Row>,
) {
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", model.base_url());
    // Warm up the connection.
    let _ = http
        .post(&url)
        .json(body)
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    let t0 = Instant::now();
    for _ in 0..n {
        let r = http.post(&url).json(body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let _ = r.bytes().await.unwrap();
    }
    rows.push(Row {
        name,
        n,
        total: t0.elapsed(),
    });
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut rows = Vec::new();
        let mut script = Script::from_entries(vec![ScriptEntry::text(
            "<think>open the shop</think>do(action=\"Tap\", element=[120,450])",
        )]);
        script.on_exhausted = OnExhausted::RepeatLast;
        let model = ScriptedModel::start(ScriptedModelConfig {
            script,
            oracle: Some(OracleConfig::default()),
            ..ScriptedModelConfig::default()
        })
        .await
        .unwrap();
        time_requests(
            "text answer, no image",
            200,
            &model,
            &request(None, false),
            &mut rows,
        )
        .await;
        time_requests(
            "SSE answer, no image",
            200,
            &model,
            &request(None, true),
            &mut rows,
        )
        .await;
        let screen = RgbaImage::from_fn(1080, 2400, |x, y| {
            Rgba([(x % 200) as u8, (y % 180) as u8, 90, 255])
        });
        let screen_url = data_url(&screen);
        time_requests(
            "1080x2400 screenshot (oracle checks it, script answers)",
            20,
            &model,
            &request(Some(&screen_url), false),
            &mut rows,
        )
        .await;
        let probe_img = probe(1080, 2400, 300, 1700, 54);
        let probe_url = data_url(&probe_img);
        time_requests(
            "1080x2400 calibration probe (oracle answers)",
            20,
            &model,
            &request(Some(&probe_url), false),
            &mut rows,
        )
        .await;
        model.shutdown().await;

        let t0 = Instant::now();
        let n = 20;
        for _ in 0..n {
            std::hint::black_box(phoneagent_testkit::oracle::find_target(&probe_img));
        }
        rows.push(Row {
            name: "oracle find_target on 1080x2400 (no HTTP)",
            n,
            total: t0.elapsed(),
        });

        println!("{:<58} {:>6} {:>12}", "case", "n", "ms / call");
        for r in &rows {
            println!(
                "{:<58} {:>6} {:>12.3}",
                r.name,
                r.n,
                r.total.as_secs_f64() * 1000.0 / r.n as f64
            );
        }
    });
}
