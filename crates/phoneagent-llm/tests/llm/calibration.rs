//! Coordinate calibration (SPEC M4) against model servers on loopback whose answers are
//! computed from the probe image they receive: a model that answers in relative 0..999, one
//! that answers in image pixels whatever it is told, and bad models that must fail closed.

use base64::Engine;
use phoneagent_llm::calibration::{CalibrationCache, cache_key};
use phoneagent_llm::{
    ActionProtocol, Budgets, CalibrationContext, CalibrationMethod, CalibrationSettings, CallKind,
    ChatClient, ClientConfig, ImagePolicy, MemoryCalibrationCache, Profile, Role, TokenLedger,
    negotiate,
};
use phoneagent_protocol::{CoordinateSpace, ErrorCode, Rotation, ScreenGeometry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

#[derive(Clone, Copy)]
enum Answers {
    Relative,
    Pixels,
    /// Always the centre of the screen.
    Constant,
    /// Relative, but off by 8 % of the width.
    Sloppy,
    /// Prose, no call.
    Chatter,
}

struct Oracle {
    answers: Answers,
    protocol: ActionProtocol,
}

/// Finds the red disc: centroid of strongly red pixels, in image px, and the image size.
fn locate(url: &str) -> ((f64, f64), (u32, u32)) {
    let b64 = url.split_once(";base64,").unwrap().1;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0.0);
    for (x, y, p) in img.enumerate_pixels() {
        if p[0] > 150 && p[1] < 110 && p[2] < 110 {
            sx += f64::from(x);
            sy += f64::from(y);
            n += 1.0;
        }
    }
    assert!(n > 0.0, "no red disc in the probe");
    ((sx / n, sy / n), img.dimensions())
}

impl Respond for Oracle {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = req.body_json().unwrap();
        let url = body["messages"][1]["content"][0]["image_url"]["url"]
            .as_str()
            .unwrap();
        let ((cx, cy), (w, h)) = locate(url);
        let rel = |v: f64, size: u32| (v / f64::from(size - 1) * 999.0).round();
        let (x, y) = match self.answers {
            Answers::Relative => (rel(cx, w), rel(cy, h)),
            Answers::Pixels => (cx.round(), cy.round()),
            Answers::Constant => (500.0, 500.0),
            Answers::Sloppy => (rel(cx, w) + 80.0, rel(cy, h)),
            Answers::Chatter => (-1.0, -1.0),
        };
        let message = if matches!(self.answers, Answers::Chatter) {
            json!({"role": "assistant", "content": "I see a red circle near the top."})
        } else {
            match self.protocol {
                ActionProtocol::Do => json!({"role": "assistant",
                    "content": format!("<think>The disc is there.</think>\ndo(action=\"Tap\", element=[{x},{y}])")}),
                ActionProtocol::Tools => {
                    assert_eq!(body["tool_choice"]["function"]["name"], "tap");
                    json!({"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_1", "type": "function",
                        "function": {"name": "tap", "arguments": format!("{{\"element\": [{x}, {y}]}}")}}]})
                }
            }
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "model": "oracle",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 20}
        }))
    }
}

async fn server(answers: Answers, protocol: ActionProtocol) -> MockServer {
    let s = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Oracle { answers, protocol })
        .mount(&s)
        .await;
    s
}

fn geometry(w: u32, h: u32, rotation: Rotation) -> ScreenGeometry {
    ScreenGeometry {
        width_px: w,
        height_px: h,
        density_dpi: Some(440),
        rotation,
    }
}

struct Run {
    report: phoneagent_llm::CalibrationReport,
    ledger: TokenLedger,
}

async fn run(
    server: &MockServer,
    profile: &Profile,
    g: ScreenGeometry,
    cache: &MemoryCalibrationCache,
) -> Run {
    let client = ChatClient::new(ClientConfig::new(
        format!("{}/v1", server.uri()),
        profile.model.clone(),
    ))
    .unwrap();
    let ledger = TokenLedger::new(Budgets::default());
    let cancel = CancellationToken::new();
    let ctx = CalibrationContext {
        client: &client,
        profile,
        role: Role::Actor,
        geometry: g,
        ledger: &ledger,
        cache,
        cancel: &cancel,
        settings: CalibrationSettings::default(),
    };
    let report = negotiate(&ctx).await.unwrap();
    Run { report, ledger }
}

fn auto_profile(protocol: ActionProtocol) -> Profile {
    let mut p = Profile::new("http://unused/v1", "probe-model");
    p.protocol = protocol;
    p.coordinate_space = CoordinateSpace::Auto;
    p
}

#[tokio::test]
async fn relative_model_freezes_relative_and_is_cached() {
    let s = server(Answers::Relative, ActionProtocol::Do).await;
    let cache = MemoryCalibrationCache::default();
    let profile = auto_profile(ActionProtocol::Do);
    let g = geometry(1080, 2400, Rotation::R0);
    let r = run(&s, &profile, g, &cache).await;
    assert_eq!(
        r.report.method,
        CalibrationMethod::Negotiated,
        "{}",
        r.report.detail
    );
    assert_eq!(r.report.space, Some(CoordinateSpace::Relative0999));
    assert_eq!(
        r.report.require_frozen().unwrap(),
        CoordinateSpace::Relative0999
    );
    assert_eq!(r.report.calls, 4);
    assert_eq!(r.report.image_size, (672, 1493));
    let c = &r.report.candidates[0];
    assert!(c.accepted && c.probes.len() == 4);
    assert!(c.max_error_px.unwrap() <= 2.0, "{:?}", c.max_error_px);
    // Ledger: every probe booked as calibration under the actor.
    let calls = r.ledger.calls();
    assert_eq!(calls.len(), 4);
    assert!(
        calls
            .iter()
            .all(|c| c.kind == CallKind::Calibration && c.role == Role::Actor)
    );
    assert_eq!(r.ledger.used_tokens(), 4 * 920);
    // The event the runtime emits.
    let ev = serde_json::to_value(r.report.to_event()).unwrap();
    assert_eq!(ev["kind"], "coordinate_calibration");
    assert_eq!(ev["method"], "negotiated");
    assert_eq!(ev["space"], "relative_0_999");
    assert_eq!(ev["probes"].as_array().unwrap().len(), 4);
    // Probe requests carry only the role marker, the synthetic image and the instruction (no
    // device data).
    let reqs = s.received_requests().await.unwrap();
    let body: Value = reqs[0].body_json().unwrap();
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        body["messages"][0]["content"],
        "[phoneagent-role: calibration]\nYou point at targets on phone screenshots."
    );
    assert!(
        body["messages"][1]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("0 to 999")
    );

    // Second run: cache hit, no new requests.
    let r2 = run(&s, &profile, g, &cache).await;
    assert_eq!(r2.report.method, CalibrationMethod::Cached);
    assert_eq!(r2.report.space, Some(CoordinateSpace::Relative0999));
    assert_eq!(s.received_requests().await.unwrap().len(), 4);
    assert!(r2.report.detail.contains("from the calibration cache"));
    // A different thinking mode is a different cache entry.
    let mut thinking = profile.clone();
    thinking.extra_body.insert(
        "chat_template_kwargs".into(),
        json!({"enable_thinking": true}),
    );
    let endpoint = format!("{}/v1/chat/completions", s.uri());
    assert!(
        cache
            .get(&cache_key(&endpoint, &profile))
            .unwrap()
            .is_some()
    );
    assert!(
        cache
            .get(&cache_key(&endpoint, &thinking))
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn pixel_model_freezes_image_pixels_with_tools() {
    let s = server(Answers::Pixels, ActionProtocol::Tools).await;
    let cache = MemoryCalibrationCache::default();
    let profile = auto_profile(ActionProtocol::Tools);
    let r = run(&s, &profile, geometry(1080, 2400, Rotation::R0), &cache).await;
    assert_eq!(
        r.report.space,
        Some(CoordinateSpace::ImagePixels),
        "{}",
        r.report.detail
    );
    // The relative candidate failed on its first probe and stopped early.
    assert_eq!(r.report.candidates.len(), 2);
    assert!(!r.report.candidates[0].accepted);
    assert_eq!(r.report.candidates[0].probes.len(), 1);
    assert!(r.report.candidates[1].accepted);
    assert_eq!(r.report.calls, 5);
    assert_eq!(r.ledger.calls().len(), 5);
}

#[tokio::test]
async fn pixel_model_on_landscape_with_patch_aligned_images() {
    let s = server(Answers::Pixels, ActionProtocol::Do).await;
    let cache = MemoryCalibrationCache::default();
    let mut profile = auto_profile(ActionProtocol::Do);
    profile.image = ImagePolicy {
        max_long_side: 1000,
        multiple_of: Some(28),
        ..Default::default()
    };
    let r = run(&s, &profile, geometry(2400, 1080, Rotation::R90), &cache).await;
    assert_eq!(
        r.report.space,
        Some(CoordinateSpace::ImagePixels),
        "{}",
        r.report.detail
    );
    assert_eq!(r.report.image_size, (980, 448));
}

#[tokio::test]
async fn explicit_space_makes_no_calls() {
    let s = server(Answers::Constant, ActionProtocol::Do).await;
    let mut profile = auto_profile(ActionProtocol::Do);
    profile.coordinate_space = CoordinateSpace::DisplayPixels;
    let r = run(
        &s,
        &profile,
        geometry(1080, 2400, Rotation::R0),
        &MemoryCalibrationCache::default(),
    )
    .await;
    assert_eq!(r.report.method, CalibrationMethod::Explicit);
    assert_eq!(r.report.space, Some(CoordinateSpace::DisplayPixels));
    assert_eq!(s.received_requests().await.unwrap().len(), 0);
    assert_eq!(
        r.report.to_event(),
        phoneagent_protocol::AgentEvent::CoordinateCalibration {
            method: phoneagent_protocol::CalibrationMethod::Explicit,
            space: Some(CoordinateSpace::DisplayPixels),
            probes: vec![],
            detail: r.report.detail.clone(),
        }
    );
}

#[tokio::test]
async fn bad_models_fail_closed_with_endpoint_model_and_errors() {
    for (answers, what) in [
        (Answers::Constant, "probe errors ["),
        (Answers::Sloppy, "probe errors ["),
        (Answers::Chatter, "unusable (unparseable answer"),
    ] {
        let s = server(answers, ActionProtocol::Do).await;
        let cache = MemoryCalibrationCache::default();
        let profile = auto_profile(ActionProtocol::Do);
        let r = run(&s, &profile, geometry(1216, 2688, Rotation::R0), &cache).await;
        assert_eq!(r.report.method, CalibrationMethod::Rejected);
        assert_eq!(r.report.space, None);
        let err = r.report.require_frozen().unwrap_err();
        assert_eq!(err.code(), ErrorCode::CalibrationFailed);
        let msg = err.to_string();
        let endpoint = format!("{}/v1/chat/completions", s.uri());
        assert!(
            msg.starts_with(&format!("coordinate calibration failed for model probe-model at {endpoint}: no coordinate space met the bounds")),
            "{msg}"
        );
        assert!(
            msg.contains("relative_0_999: ") && msg.contains("image_pixels: "),
            "{msg}"
        );
        assert!(msg.contains(what), "{msg}");
        assert!(msg.contains("Stopping before touching the device"), "{msg}");
        // Nothing was cached.
        assert!(
            cache
                .get(&cache_key(&endpoint, &profile))
                .unwrap()
                .is_none()
        );
        let ev = serde_json::to_value(r.report.to_event()).unwrap();
        assert_eq!(ev["method"], "rejected");
        assert!(ev["space"].is_null());
        // Calibration calls still count in the ledger.
        assert_eq!(r.ledger.calls().len() as u32, r.report.calls);
    }
}

#[tokio::test]
async fn a_sloppy_model_passes_with_looser_bounds_only() {
    // Sloppy is 80/999 of the width off: ~54 px on a 672 px image; the default bound (disc
    // radius ≈ 34 px) rejects it, explicit 60 px bounds accept it.
    let s = server(Answers::Sloppy, ActionProtocol::Do).await;
    let profile = auto_profile(ActionProtocol::Do);
    let client =
        ChatClient::new(ClientConfig::new(format!("{}/v1", s.uri()), "probe-model")).unwrap();
    let ledger = TokenLedger::default();
    let cancel = CancellationToken::new();
    let cache = MemoryCalibrationCache::default();
    let ctx = CalibrationContext {
        client: &client,
        profile: &profile,
        role: Role::Actor,
        geometry: geometry(1080, 2400, Rotation::R0),
        ledger: &ledger,
        cache: &cache,
        cancel: &cancel,
        settings: CalibrationSettings {
            mean_bound_px: Some(60.0),
            max_bound_px: Some(60.0),
            ..Default::default()
        },
    };
    let r = negotiate(&ctx).await.unwrap();
    assert_eq!(r.space, Some(CoordinateSpace::Relative0999), "{}", r.detail);
}

#[tokio::test]
async fn cancelled_calibration_is_cancelled_not_rejected() {
    let s = server(Answers::Relative, ActionProtocol::Do).await;
    let profile = auto_profile(ActionProtocol::Do);
    let client =
        ChatClient::new(ClientConfig::new(format!("{}/v1", s.uri()), "probe-model")).unwrap();
    let ledger = TokenLedger::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cache = MemoryCalibrationCache::default();
    let ctx = CalibrationContext {
        client: &client,
        profile: &profile,
        role: Role::Actor,
        geometry: geometry(1080, 2400, Rotation::R0),
        ledger: &ledger,
        cache: &cache,
        cancel: &cancel,
        settings: CalibrationSettings::default(),
    };
    let err = negotiate(&ctx).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
}
