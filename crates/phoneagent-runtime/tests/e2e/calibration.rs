//! The coordinate contract negotiated end to end (SPEC M4, M5; issue 3 "Calibration tests pass in
//! both coordinate spaces and fail closed on a model that answers badly"): the runtime's
//! `calibration::negotiate` probes the scripted model's oracle over real HTTP with synthetic
//! images (no device touch), freezes the space, and the run's taps then land on the right
//! element of the virtual phone.

use phoneagent_protocol::{AgentEvent, CalibrationMethod, CoordinateSpace, ErrorCode, RunStatus};
use phoneagent_testkit::OracleConfig;

use crate::harness::{Harness, Opts};

const OPEN_SHOP: &str = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"content": "finish(message=\"The shop is open.\", confirm=True)"}
"#;

fn auto(model_space: CoordinateSpace, oracle: OracleConfig) -> Opts {
    Opts {
        verifier: false,
        actor_space: CoordinateSpace::Auto,
        model_space,
        oracle: Some(oracle),
        ..Opts::default()
    }
}

fn calibration_events(
    events: &[AgentEvent],
) -> Vec<(CalibrationMethod, Option<CoordinateSpace>, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CoordinateCalibration {
                method,
                space,
                detail,
                ..
            } => Some((*method, *space, detail.clone())),
            _ => None,
        })
        .collect()
}

async fn negotiated_run(space: CoordinateSpace) {
    let mut h = Harness::new(OPEN_SHOP, auto(space, OracleConfig::default())).await;
    let out = h.run("Open the shop").await;
    let events = h.drain();
    let cal = calibration_events(&events);
    assert_eq!(cal.len(), 1, "{cal:?}");
    assert_eq!(
        (cal[0].0, cal[0].1),
        (CalibrationMethod::Negotiated, Some(space)),
        "{cal:?}"
    );
    // The probes went over HTTP, marked as calibration, and were counted (M3).
    let probes = h
        .model
        .chat_requests()
        .iter()
        .filter(|r| r.system_text().contains("[phoneagent-role: calibration]"))
        .count();
    assert!(probes >= 3, "{probes} probes");
    let counted = events
        .iter()
        .filter(
            |e| matches!(e, AgentEvent::ModelCall { call_kind, .. } if call_kind == "calibration"),
        )
        .count();
    assert_eq!(counted, probes);
    // Calibration never touched the phone; the one tap, mapped through the frozen contract,
    // opened the shop.
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = h.truth();
    assert_eq!(t.touches.len(), 1, "{:?}", t.touches);
    assert_eq!(t.current_screen, "shop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_contract_negotiates_relative_0_999_with_the_oracle() {
    negotiated_run(CoordinateSpace::Relative0999).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_contract_negotiates_image_pixels_with_the_oracle() {
    negotiated_run(CoordinateSpace::ImagePixels).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_points_badly_fails_closed_before_any_touch() {
    let mut h = Harness::new(
        OPEN_SHOP,
        auto(
            CoordinateSpace::Relative0999,
            OracleConfig {
                bad: true,
                ..OracleConfig::default()
            },
        ),
    )
    .await;
    let out = h.run("Open the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.termination_code, ErrorCode::CalibrationFailed.as_str());
    // The message names the endpoint, the model and the errors measured.
    assert!(
        out.message.contains(&h.model.base_url()) && out.message.contains("scripted-model"),
        "{}",
        out.message
    );
    assert!(out.message.contains("px"), "{}", out.message);
    let cal = calibration_events(&events);
    assert!(cal.iter().all(|c| c.1.is_none()), "{cal:?}");
    assert!(h.truth().touches.is_empty(), "no touch without a contract");
    // No planning call was made either.
    assert!(
        h.model
            .chat_requests()
            .iter()
            .all(|r| !r.system_text().contains("[phoneagent-role: actor]"))
    );
}
