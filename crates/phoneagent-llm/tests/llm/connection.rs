//! The shared connection test (issue #15 item 4) against the scripted model server (real
//! OpenAI-compatible HTTP on loopback, `phoneagent-testkit`): all steps pass, and a closed port,
//! a wrong key and an unlisted model each fail at their own step with their fix.

use phoneagent_llm::connection_test::{self, ConnectionTestOptions, StepId, StepStatus};
use phoneagent_llm::{ApiKey, ClientConfig, Profile, Role};
use phoneagent_protocol::CoordinateSpace;
use phoneagent_testkit::oracle::OracleConfig;
use phoneagent_testkit::script::Script;
use phoneagent_testkit::{ScriptedModel, ScriptedModelConfig};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-connection-test-right-0123456789";

async fn model(script: &str, models: &[&str], key: Option<&str>, oracle: bool) -> ScriptedModel {
    ScriptedModel::start(ScriptedModelConfig {
        script: Script::parse_jsonl(script).unwrap(),
        models: models.iter().map(|m| m.to_string()).collect(),
        require_api_key: key.map(str::to_string),
        oracle: oracle.then_some(OracleConfig {
            error_px: 0.0,
            bad: false,
        }),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap()
}

fn client(p: &Profile, key: Option<&str>) -> ClientConfig {
    let mut c = ClientConfig::new(p.base_url.clone(), p.model.clone());
    c.api_key = key.map(|k| ApiKey::new(k.to_string()));
    c.key_source = "test".into();
    c
}

async fn test(p: &Profile, key: Option<&str>) -> connection_test::ConnectionReport {
    connection_test::run(
        p,
        client(p, key),
        &ConnectionTestOptions::deep("local", Role::Actor),
        &CancellationToken::new(),
    )
    .await
}

fn status(r: &connection_test::ConnectionReport) -> Vec<(StepId, StepStatus)> {
    r.steps.iter().map(|s| (s.id, s.status)).collect()
}

#[tokio::test]
async fn every_step_passes_against_the_scripted_model_in_a_family_grammar() {
    let script = concat!(
        "{\"content\": \"white\"}\n",
        "{\"queue\": \"connection_check\", \"content\": \"Thought: the black half is below.\\nAction: click(point='<point>16 24</point>')\"}\n",
    );
    let m = model(script, &["UI-TARS-1.5-7B"], Some(KEY), false).await;
    let p = Profile::new(m.base_url(), "UI-TARS-1.5-7B");
    let r = test(&p, Some(KEY)).await;
    assert!(r.ok(), "{r:#?}");
    assert!(
        r.steps.iter().all(|s| s.status == StepStatus::Ok),
        "{:?}",
        status(&r)
    );
    assert_eq!(
        r.step(StepId::VisionAnswered).unwrap().sample.as_deref(),
        Some("white")
    );
    let fam = r.step(StepId::FamilyGrammar).unwrap();
    assert!(fam.detail.contains("ui_tars grammar parsed"), "{fam:?}");
    assert!(fam.sample.as_deref().unwrap().contains("click(point="));
    let c = r.step(StepId::CoordinateContract).unwrap();
    assert!(c.detail.contains("own convention"), "{c:?}");
    assert!(r.family.starts_with("ui_tars"), "{}", r.family);
    // The key never reaches the report.
    assert!(!format!("{r:?}").contains(KEY));
}

#[tokio::test]
async fn auto_coordinates_are_negotiated_by_the_calibration_probes() {
    // A generic model with coordinate space auto: the oracle answers the probes.
    let m = model(
        "{\"content\": \"white\"}\n",
        &["scripted-model"],
        None,
        true,
    )
    .await;
    let mut p = Profile::new(m.base_url(), "scripted-model");
    p.coordinate_space = CoordinateSpace::Auto;
    let r = test(&p, None).await;
    assert!(r.ok(), "{r:#?}");
    assert_eq!(
        r.step(StepId::FamilyGrammar).unwrap().status,
        StepStatus::Skipped
    );
    let c = r.step(StepId::CoordinateContract).unwrap();
    assert_eq!(c.status, StepStatus::Ok, "{c:?}");
    assert!(
        c.detail.contains("negotiated relative_0_999"),
        "{}",
        c.detail
    );
    assert!(c.sample.as_deref().unwrap().starts_with('['), "{c:?}");
}

#[tokio::test]
async fn a_closed_port_fails_at_reachable_with_the_fix() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = Profile::new(format!("http://127.0.0.1:{port}/v1"), "scripted-model");
    let r = test(&p, None).await;
    let s = r.first_failure().unwrap();
    assert_eq!(s.id, StepId::Reachable, "{r:#?}");
    assert!(s.detail.contains("unreachable"), "{s:?}");
    assert!(
        s.fix.as_deref().unwrap().contains("Start the model server"),
        "{s:?}"
    );
    assert!(
        r.steps[1..].iter().all(|s| s.status == StepStatus::Skipped),
        "{:?}",
        status(&r)
    );
}

#[tokio::test]
async fn a_wrong_key_fails_at_key_accepted_and_is_never_shown() {
    let m = model(
        "{\"content\": \"white\"}\n",
        &["scripted-model"],
        Some(KEY),
        false,
    )
    .await;
    let mut p = Profile::new(m.base_url(), "scripted-model");
    p.keyring_entry = Some("local".into());
    let wrong = "sk-connection-test-WRONG-9876543210";
    let r = test(&p, Some(wrong)).await;
    assert_eq!(r.step(StepId::Reachable).unwrap().status, StepStatus::Ok);
    let s = r.first_failure().unwrap();
    assert_eq!(s.id, StepId::KeyAccepted, "{r:#?}");
    assert!(s.detail.contains("HTTP 401"), "{s:?}");
    assert!(s.fix.as_deref().unwrap().contains("\"local\""), "{s:?}");
    assert_eq!(
        r.step(StepId::VisionAnswered).unwrap().status,
        StepStatus::Skipped
    );
    let all = format!("{r:?}");
    assert!(!all.contains(wrong) && !all.contains(KEY), "{all}");
    // No key at all for a profile that names a keyring entry: the same step, with the fix to
    // store one.
    let mut opts = ConnectionTestOptions::deep("local", Role::Actor);
    opts.missing_key_entry = Some("local".into());
    let r = connection_test::run(&p, client(&p, None), &opts, &CancellationToken::new()).await;
    let s = r.first_failure().unwrap();
    assert_eq!(s.id, StepId::KeyAccepted, "{r:#?}");
    assert!(s.detail.contains("none is stored"), "{s:?}");
}

#[tokio::test]
async fn an_unlisted_model_fails_at_model_listed_and_names_what_is_served() {
    let m = model(
        "{\"content\": \"white\"}\n",
        &["scripted-model", "other-model"],
        None,
        false,
    )
    .await;
    let p = Profile::new(m.base_url(), "no-such-model");
    let r = test(&p, None).await;
    let s = r.first_failure().unwrap();
    assert_eq!(s.id, StepId::ModelListed, "{r:#?}");
    assert!(s.detail.contains("no-such-model"), "{s:?}");
    let fix = s.fix.as_deref().unwrap();
    assert!(
        fix.contains("scripted-model") && fix.contains("other-model"),
        "{fix}"
    );
    assert_eq!(r.listed_models, ["scripted-model", "other-model"]);
    assert_eq!(
        r.step(StepId::VisionAnswered).unwrap().status,
        StepStatus::Skipped
    );
}

#[tokio::test]
async fn a_family_answer_out_of_grammar_fails_with_an_inert_sample_and_the_fix() {
    // The answer carries a terminal escape sequence: the sample shows it inert.
    let script = concat!(
        "{\"content\": \"white\"}\n",
        "{\"queue\": \"connection_check\", \"content\": \"I would tap \\u001b[31mthe black part.\"}\n",
    );
    let m = model(script, &["autoglm-phone-9b"], None, false).await;
    let p = Profile::new(m.base_url(), "autoglm-phone-9b");
    let r = test(&p, None).await;
    let s = r.first_failure().unwrap();
    assert_eq!(s.id, StepId::FamilyGrammar, "{r:#?}");
    assert!(s.detail.contains("not in the autoglm grammar"), "{s:?}");
    assert!(s.fix.as_deref().unwrap().contains("family"), "{s:?}");
    let sample = s.sample.as_deref().unwrap();
    assert!(sample.contains("the black part"), "{sample:?}");
    assert!(!sample.contains('\u{1b}'), "{sample:?}");
}

#[test]
fn samples_are_inert_and_bounded() {
    let long = "a\u{1b}]0;title\u{7}\n".repeat(100);
    let s = connection_test::sample(&long);
    assert!(s.chars().count() <= connection_test::SAMPLE_CHARS + 1);
    assert!(!s.chars().any(|c| c.is_control()), "{s:?}");
}
