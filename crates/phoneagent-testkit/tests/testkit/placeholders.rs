//! Label placeholders resolved against a running virtual phone (`phoneagent-sim`, in process,
//! over its ADB-protocol port).

use base64::Engine as _;
use phoneagent_protocol::CoordinateSpace;
use phoneagent_sim::{Faults, SimConfig, SimServer};
use phoneagent_testkit::{ScriptEntry, ScriptedModel, ScriptedModelConfig, SimTarget};
use serde_json::{Value, json};

use crate::{body, body_with_image, content, png_data_url, post, post_ok, start};

async fn sim_on(scenario: &str) -> (SimServer, String) {
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let serial = sim.serials()[0].clone();
    sim.phone(&serial).unwrap().reset(scenario).unwrap();
    (sim, serial)
}

async fn model_for(
    sim: &SimServer,
    space: CoordinateSpace,
    entries: Vec<ScriptEntry>,
) -> ScriptedModel {
    ScriptedModel::start(ScriptedModelConfig {
        space,
        sim: Some(SimTarget {
            port: sim.port(),
            serial: None,
        }),
        ..ScriptedModelConfig::with_entries(entries)
    })
    .await
    .unwrap()
}

/// The screenshot the sim renders now, downscaled by `factor`, as a PNG data URL.
fn screenshot(sim: &SimServer, serial: &str, factor: u32) -> (String, u32, u32) {
    let png = sim.phone(serial).unwrap().screenshot_png().unwrap();
    let img = image::load_from_memory(&png).unwrap().to_rgba8();
    let (w, h) = (img.width() / factor, img.height() / factor);
    let small = image::imageops::resize(&img, w, h, image::imageops::FilterType::Triangle);
    (png_data_url(&small), w, h)
}

fn parse_point(text: &str, prefix: &str) -> (f64, f64) {
    let inner = text
        .strip_prefix(prefix)
        .and_then(|r| r.strip_suffix("])"))
        .unwrap_or_else(|| panic!("unexpected answer {text:?}"));
    let (x, y) = inner.split_once(',').unwrap();
    (x.parse().unwrap(), y.parse().unwrap())
}

#[tokio::test]
async fn center_placeholder_in_relative_space_hits_the_element() {
    let (sim, serial) = sim_on("checkout").await;
    let gt = sim.phone(&serial).unwrap().ground_truth();
    let label = "提交订单";
    let el = gt
        .element_by_label(label)
        .unwrap_or_else(|| panic!("checkout has no {label}: {:?}", gt.elements))
        .clone();
    let model = model_for(
        &sim,
        CoordinateSpace::Relative0999,
        vec![ScriptEntry::text(format!(
            "<think>submit</think>do(action=\"Tap\", element={{{{center:{label}}}}})"
        ))],
    )
    .await;
    let v = post_ok(&model, &body("s", "u")).await;
    let (x, y) = parse_point(
        content(&v),
        "<think>submit</think>do(action=\"Tap\", element=[",
    );
    // Map back as a client does (v / 1000 · size) and land inside the element's box.
    let (dx, dy) = (
        x / 1000.0 * f64::from(gt.width),
        y / 1000.0 * f64::from(gt.height),
    );
    let [x0, y0, x1, y1] = el.bounds;
    assert!(
        (f64::from(x0)..f64::from(x1)).contains(&dx)
            && (f64::from(y0)..f64::from(y1)).contains(&dy),
        "({dx},{dy}) not in {:?}",
        el.bounds
    );
    let (cx, cy) = el.center();
    assert!((dx - f64::from(cx)).abs() <= 1.2 && (dy - f64::from(cy)).abs() <= 2.5);
    model.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test]
async fn tool_argument_placeholders_in_image_pixels_of_the_sent_image() {
    let (sim, serial) = sim_on("home").await;
    let gt = sim.phone(&serial).unwrap().ground_truth();
    let el = gt.elements[0].clone();
    let (url, w, h) = screenshot(&sim, &serial, 2);
    assert_eq!((w, h), (gt.width / 2, gt.height / 2));
    let model = model_for(
        &sim,
        CoordinateSpace::ImagePixels,
        vec![ScriptEntry::tool_call(
            "tap",
            json!({"element": format!("{{{{center:{}}}}}", el.id),
                   "target_description": format!("the {{{{x:{}}}}} icon", el.id)}),
        )],
    )
    .await;
    let v = post_ok(&model, &body_with_image("s", "u", &url)).await;
    let args: Value = serde_json::from_str(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let (cx, cy) = el.center();
    let (ax, ay) = (
        args["element"][0].as_f64().unwrap(),
        args["element"][1].as_f64().unwrap(),
    );
    // In pixels of the half-size image that was sent.
    assert!((ax - f64::from(cx) / 2.0).abs() <= 1.0, "{args}");
    assert!((ay - f64::from(cy) / 2.0).abs() <= 1.0, "{args}");
    assert_eq!(
        args["target_description"],
        format!("the {} icon", args["element"][0])
    );
    model.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test]
async fn placeholders_follow_rotation_and_name_missing_labels() {
    let (sim, serial) = sim_on("home").await;
    sim.phone(&serial).unwrap().set_faults(Faults {
        rotation: 1,
        ..Faults::default()
    });
    let gt = sim.phone(&serial).unwrap().ground_truth();
    assert!(
        gt.width > gt.height,
        "landscape expected: {}x{}",
        gt.width,
        gt.height
    );
    let el = gt.elements[0].clone();
    let model = model_for(
        &sim,
        CoordinateSpace::Relative0999,
        vec![
            ScriptEntry::text(format!("{{{{x:{0}}}}} {{{{y:{0}}}}}", el.id)),
            ScriptEntry::text("do(action=\"Tap\", element={{center:不存在的按钮}})"),
        ],
    )
    .await;
    let v = post_ok(&model, &body("s", "u")).await;
    let (x, y) = content(&v).split_once(' ').unwrap();
    let (cx, cy) = el.center();
    let x: f64 = x.parse().unwrap();
    let y: f64 = y.parse().unwrap();
    assert!((x / 1000.0 * f64::from(gt.width) - f64::from(cx)).abs() <= 1.5);
    assert!((y / 1000.0 * f64::from(gt.height) - f64::from(cy)).abs() <= 1.5);
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 500);
    let err: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(err["error"]["code"], "placeholder_unresolved");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("不存在的按钮") && msg.contains("home"),
        "{msg}"
    );
    assert!(
        msg.contains(&el.label),
        "the message lists visible labels: {msg}"
    );
    let rec = &model.chat_requests()[1];
    assert_eq!(rec.answered_by.as_deref(), Some("error"));
    assert!(rec.error.as_deref().unwrap_or("").contains("不存在的按钮"));
    model.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test]
async fn unreachable_phone_and_no_phone_are_clear_errors() {
    let model = start(vec![ScriptEntry::text(
        "do(action=\"Tap\", element={{center:提交订单}})",
    )])
    .await;
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 500);
    assert!(text.contains("placeholder_unresolved"), "{text}");
    assert!(text.contains("no virtual phone"), "{text}");
    model.shutdown().await;

    // A port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let model = ScriptedModel::start(ScriptedModelConfig {
        sim: Some(SimTarget { port, serial: None }),
        ..ScriptedModelConfig::with_entries(vec![ScriptEntry::text("{{center:x}}")])
    })
    .await
    .unwrap();
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 500);
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    model.shutdown().await;
}

#[tokio::test]
async fn oracle_and_script_share_one_server() {
    // Oracle answers the probe; the script (resolved against the phone) answers the step.
    let (sim, serial) = sim_on("home").await;
    let gt = sim.phone(&serial).unwrap().ground_truth();
    let el = gt.elements[0].clone();
    let model = ScriptedModel::start(ScriptedModelConfig {
        oracle: Some(phoneagent_testkit::OracleConfig::default()),
        sim: Some(SimTarget {
            port: sim.port(),
            serial: Some(serial.clone()),
        }),
        ..ScriptedModelConfig::with_entries(vec![ScriptEntry::text(format!(
            "do(action=\"Tap\", element={{{{center:{}}}}})",
            el.id
        ))])
    })
    .await
    .unwrap();
    let probe = image::RgbaImage::from_fn(200, 400, |x, y| {
        if (f64::from(x) - 50.0).hypot(f64::from(y) - 300.0) <= 12.0 {
            image::Rgba([220, 30, 30, 255])
        } else {
            image::Rgba([236, 236, 236, 255])
        }
    });
    let v = post_ok(
        &model,
        &body_with_image("s", "tap the disc", &png_data_url(&probe)),
    )
    .await;
    let (x, y) = parse_point(content(&v), "do(action=\"Tap\", element=[");
    assert_eq!((x, y), (253.0, 751.0));
    let (url, _, _) = screenshot(&sim, &serial, 1);
    let v = post_ok(&model, &body_with_image("s", "open the shop", &url)).await;
    assert!(
        content(&v).starts_with("do(action=\"Tap\", element=["),
        "{v}"
    );
    let who: Vec<_> = model
        .chat_requests()
        .iter()
        .map(|r| r.answered_by.clone().unwrap_or_default())
        .collect();
    assert_eq!(who, ["oracle", "script"]);
    // The screenshot the script step carried is recorded as sent.
    let sent = &model.chat_requests()[1].image_urls()[0];
    let b64 = sent.split_once(',').unwrap().1;
    assert!(
        !base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
            .is_empty()
    );
    model.shutdown().await;
    sim.shutdown().await;
}
