//! Oracle mode on synthetic probe images: answers within 1 px in both spaces and both forms,
//! deliberate error, bad mode, non-probe fall-through.

use image::{Rgba, RgbaImage};
use phoneagent_protocol::CoordinateSpace;
use phoneagent_testkit::{OracleConfig, ScriptEntry, ScriptedModel, ScriptedModelConfig};
use serde_json::{Value, json};

use crate::{body_with_image, content, jpeg_data_url, png_data_url, post, post_ok};

/// A probe as the calibrator (`phoneagent_llm::calibration::render_probe`) draws it: plain
/// background, a red disc split by a white crosshair `r / 8` px wide across its whole diameter.
fn probe(w: u32, h: u32, cx: u32, cy: u32, r: u32) -> RgbaImage {
    let bg = [236u8, 239, 241, 255].repeat((w * h) as usize);
    let mut img = RgbaImage::from_raw(w, h, bg).unwrap();
    for y in cy.saturating_sub(r)..=(cy + r).min(h - 1) {
        for x in cx.saturating_sub(r)..=(cx + r).min(w - 1) {
            let d = (f64::from(x) - f64::from(cx)).hypot(f64::from(y) - f64::from(cy));
            if d <= f64::from(r) {
                let bar = i64::from((r / 8).max(1));
                let (dx, dy) = (i64::from(x) - i64::from(cx), i64::from(y) - i64::from(cy));
                let cross = dx.abs() <= bar / 2 || dy.abs() <= bar / 2;
                let p = if cross {
                    Rgba([255, 255, 255, 255])
                } else {
                    Rgba([220, 20, 30, 255])
                };
                img.put_pixel(x, y, p);
            }
        }
    }
    img
}

async fn oracle_server(space: CoordinateSpace, cfg: OracleConfig) -> ScriptedModel {
    ScriptedModel::start(ScriptedModelConfig {
        space,
        oracle: Some(cfg),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap()
}

fn parse_do_tap(text: &str) -> (f64, f64) {
    let inner = text
        .strip_prefix("do(action=\"Tap\", element=[")
        .and_then(|r| r.strip_suffix("])"))
        .unwrap_or_else(|| panic!("not a do Tap: {text}"));
    let (x, y) = inner.split_once(',').unwrap();
    (x.trim().parse().unwrap(), y.trim().parse().unwrap())
}

/// Per-axis error in px of an answer against a target pixel: relative answers are compared
/// with the pixel's centre in continuous coordinates (`v / 1000 · size` vs `c + 0.5`).
fn error_px(
    space: CoordinateSpace,
    (x, y): (f64, f64),
    (w, h): (u32, u32),
    (cx, cy): (u32, u32),
) -> (f64, f64) {
    match space {
        CoordinateSpace::Relative0999 => (
            (x / 1000.0 * f64::from(w) - (f64::from(cx) + 0.5)).abs(),
            (y / 1000.0 * f64::from(h) - (f64::from(cy) + 0.5)).abs(),
        ),
        _ => ((x - f64::from(cx)).abs(), (y - f64::from(cy)).abs()),
    }
}

/// Map an answer back to image pixel index space the way a client would.
fn to_px(space: CoordinateSpace, (x, y): (f64, f64), w: u32, h: u32) -> (f64, f64) {
    match space {
        CoordinateSpace::Relative0999 => (x / 1000.0 * f64::from(w), y / 1000.0 * f64::from(h)),
        _ => (x, y),
    }
}

const CASES: &[(u32, u32, u32, u32)] = &[
    // (w, h, cx, cy): tall, downscaled tall, not multiples of 28, landscape, corners.
    (1080, 2400, 540, 1200),
    (1080, 2400, 97, 2290),
    (706, 1568, 650, 33),
    (1001, 777, 333, 444),
    (2400, 1080, 2301, 999),
];

#[tokio::test]
async fn do_text_answers_within_one_pixel_relative_0_999() {
    do_text_answers_within_one_pixel(CoordinateSpace::Relative0999).await;
}

#[tokio::test]
async fn do_text_answers_within_one_pixel_image_pixels() {
    do_text_answers_within_one_pixel(CoordinateSpace::ImagePixels).await;
}

async fn do_text_answers_within_one_pixel(space: CoordinateSpace) {
    {
        let model = oracle_server(space, OracleConfig::default()).await;
        for &(w, h, cx, cy) in CASES {
            let url = png_data_url(&probe(w, h, cx, cy, 18));
            let v = post_ok(&model, &body_with_image("Tap the red dot.", "probe", &url)).await;
            let raw = parse_do_tap(content(&v));
            let (ex, ey) = error_px(space, raw, (w, h), (cx, cy));
            // Image pixels: within 1 px. Relative: within the half-unit quantization of the
            // 0..999 grid (0.5 · size / 1000 px) plus 0.05 px.
            let (tx, ty) = match space {
                CoordinateSpace::Relative0999 => (
                    0.5 * f64::from(w) / 1000.0 + 0.05,
                    0.5 * f64::from(h) / 1000.0 + 0.05,
                ),
                _ => (1.0, 1.0),
            };
            assert!(
                ex <= tx && ey <= ty,
                "{space} {w}x{h} target ({cx},{cy}) answered {raw:?}: error ({ex},{ey}) px"
            );
        }
        let reqs = model.chat_requests();
        assert!(
            reqs.iter()
                .all(|r| r.answered_by.as_deref() == Some("oracle"))
        );
        model.shutdown().await;
    }
}

#[tokio::test]
async fn tool_answers_follow_the_tool_schema_and_jpeg_works() {
    let model = oracle_server(CoordinateSpace::ImagePixels, OracleConfig::default()).await;
    let (w, h, cx, cy) = (728, 1568, 200, 1400);
    let url = jpeg_data_url(&probe(w, h, cx, cy, 20));
    let mut b = body_with_image("sys", "Tap the target", &url);
    b["tools"] = json!([
        {"type": "function", "function": {"name": "finish", "parameters": {"type": "object", "properties": {"message": {}}}}},
        {"type": "function", "function": {"name": "tap", "parameters": {"type": "object", "properties": {"element": {"type": "array"}}}}}
    ]);
    let v = post_ok(&model, &b).await;
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "tap");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    let (x, y) = (
        args["element"][0].as_f64().unwrap(),
        args["element"][1].as_f64().unwrap(),
    );
    assert!(
        (x - f64::from(cx)).abs() <= 1.0 && (y - f64::from(cy)).abs() <= 1.0,
        "{args}"
    );
    // A schema with separate x/y gets x/y.
    b["tools"] = json!([{"type": "function", "function": {"name": "tap", "parameters": {"properties": {"x": {}, "y": {}}}}}]);
    let v = post_ok(&model, &b).await;
    let args: Value = serde_json::from_str(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(
        (args["x"].as_f64().unwrap() - f64::from(cx)).abs() <= 1.0,
        "{args}"
    );
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() >= 765);
    model.shutdown().await;
}

#[tokio::test]
async fn deliberate_error_and_bad_mode() {
    let (w, h, cx, cy) = (1000, 2000, 400, 900);
    let url = png_data_url(&probe(w, h, cx, cy, 15));
    let err = oracle_server(
        CoordinateSpace::ImagePixels,
        OracleConfig {
            error_px: 25.0,
            bad: false,
        },
    )
    .await;
    let v = post_ok(&err, &body_with_image("s", "u", &url)).await;
    let (x, y) = parse_do_tap(content(&v));
    assert!(
        (x - 425.0).abs() <= 1.0 && (y - 900.0).abs() <= 1.0,
        "{x},{y}"
    );
    err.shutdown().await;

    for space in [CoordinateSpace::Relative0999, CoordinateSpace::ImagePixels] {
        let bad = oracle_server(
            space,
            OracleConfig {
                error_px: 0.0,
                bad: true,
            },
        )
        .await;
        let v = post_ok(&bad, &body_with_image("s", "u", &url)).await;
        let raw = parse_do_tap(content(&v));
        // Wrong under either interpretation of the numbers.
        for interp in [CoordinateSpace::Relative0999, CoordinateSpace::ImagePixels] {
            let (x, y) = to_px(interp, raw, w, h);
            let d = (x - f64::from(cx)).hypot(y - f64::from(cy));
            assert!(
                d > 100.0,
                "{space}: bad answer {raw:?} as {interp} is only {d} px off"
            );
        }
        bad.shutdown().await;
    }
}

#[tokio::test]
async fn non_probe_images_fall_through_to_the_script() {
    let model = ScriptedModel::start(ScriptedModelConfig {
        oracle: Some(OracleConfig::default()),
        ..ScriptedModelConfig::with_entries(vec![ScriptEntry::text("do(action=\"Back\")")])
    })
    .await
    .unwrap();
    // A busy screenshot with a red button is not a probe.
    let screenshot = RgbaImage::from_fn(300, 600, |x, y| {
        if (100..200).contains(&x) && (500..540).contains(&y) {
            Rgba([230, 30, 30, 255])
        } else {
            Rgba([
                (x * 5 % 256) as u8,
                (y * 3 % 256) as u8,
                ((x + y) % 256) as u8,
                255,
            ])
        }
    });
    let url = png_data_url(&screenshot);
    let v = post_ok(&model, &body_with_image("s", "u", &url)).await;
    assert_eq!(content(&v), "do(action=\"Back\")");
    assert_eq!(
        model.chat_requests()[0].answered_by.as_deref(),
        Some("script")
    );
    // With the script exhausted, the error explains what oracle mode answers.
    let (status, _, text) = post(&model, &body_with_image("s", "u", &url)).await;
    assert_eq!(status, 500);
    assert!(text.contains("red disc"), "{text}");
    // A request marked as calibration whose image has no target is an oracle error.
    let blank = png_data_url(&RgbaImage::from_pixel(50, 50, Rgba([255, 255, 255, 255])));
    let (status, _, text) = post(
        &model,
        &body_with_image("[phoneagent-role: calibration]", "u", &blank),
    )
    .await;
    assert_eq!(status, 500);
    assert!(text.contains("no saturated red target"), "{text}");
    model.shutdown().await;
}

#[tokio::test]
async fn no_virtual_phone_screen_is_mistaken_for_a_probe() {
    // Real screenshots have red buttons, orange icons and red prices: none is a probe.
    let sim = phoneagent_sim::SimServer::start(phoneagent_sim::SimConfig::default(), 0)
        .await
        .unwrap();
    let serial = sim.serials()[0].clone();
    let phone = sim.phone(&serial).unwrap();
    for scenario in phoneagent_sim::SCENARIOS {
        phone.reset(scenario).unwrap();
        let png = phone.screenshot_png().unwrap();
        let img = image::load_from_memory(&png).unwrap().to_rgba8();
        if let Some(t) = phoneagent_testkit::oracle::find_target(&img) {
            assert!(!t.is_probe(false), "{scenario}: {t:?}");
        }
    }
    sim.shutdown().await;
}
