//! Integration tests of the consoles' backend without a webview: [`Console`] against the
//! in-process virtual phone (real ADB protocol on loopback) and the scripted model server (real
//! HTTP on loopback). They prove the adapters the commands call: device listing, the mirror,
//! hard-mode approvals validated against the pending id, rejection leaving no order, take-over
//! taps refused outside a take_over, settings persistence.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use phoneagent_console::Console;
use phoneagent_console::dto::{MirrorMessage, RequestKind, StartRunRequest};
use phoneagent_console::settings::AppSettings;
use phoneagent_protocol::AgentEvent;
use phoneagent_protocol::RunStatus;
use phoneagent_protocol::event::HumanResponse as AnswerInput;
use phoneagent_testkit::{ScriptEntry, ScriptedModel, ScriptedModelConfig};
use support::{Recorder, order_script};

impl Recorder {
    fn kinds(&self) -> Vec<&'static str> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.event.kind())
            .collect()
    }
    fn pending_request(&self) -> Option<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                AgentEvent::HumanRequested { request_id, .. } => Some(request_id.clone()),
                _ => None,
            })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    state: Arc<Console>,
    model: ScriptedModel,
    sim_addr: SocketAddr,
}

async fn fixture(entries: Vec<ScriptEntry>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let state = Console::open(
        dir.path().join("phoneagent.sqlite3"),
        dir.path().join("exports"),
    )
    .unwrap();
    let phone = state.start_virtual_phone().await.unwrap();
    let sim_addr: SocketAddr = phone.adb_addr.parse().unwrap();
    let mut cfg = ScriptedModelConfig::with_entries(entries);
    cfg.sim = Some(phoneagent_testkit::SimTarget {
        port: sim_addr.port(),
        serial: None,
    });
    let model = ScriptedModel::start(cfg).await.unwrap();
    let mut s = AppSettings::default();
    s.profiles[0].base_url = model.base_url();
    s.profiles[0].model = "scripted".into();
    s.profiles[0].key_entry = String::new();
    s.max_duration_secs = 120;
    s.finish_verify = "off".into();
    state.save_settings(&s).unwrap();
    Fixture {
        _dir: dir,
        state,
        model,
        sim_addr,
    }
}

async fn run_hard(f: &Fixture, answer: AnswerInput) -> (Arc<Recorder>, u64) {
    phoneagent_sim::client::reset_at(f.sim_addr, None, "checkout")
        .await
        .unwrap();
    let rec = Recorder::follow(&f.state, Duration::from_secs(20));
    f.state
        .start_run(StartRunRequest {
            task: "提交订单".into(),
            profile: String::new(),
            max_steps: 6,
            mode: "hard".into(),
        })
        .await
        .unwrap();
    let id = rec
        .wait("an approval request", |r| r.pending_request())
        .await;
    let truth = phoneagent_sim::client::fetch_state_at(f.sim_addr, None)
        .await
        .unwrap();
    assert_eq!(
        truth.orders_placed, 0,
        "nothing runs before the human answers"
    );
    // While the run drives the phone, the mirror does not take the person's taps (they must
    // pause first), and nothing reaches the phone.
    let err = f.state.take_over_tap(540, 1200).await.unwrap_err();
    assert_eq!(err.code, "pause_first", "{}", err.message);
    let after = phoneagent_sim::client::fetch_state_at(f.sim_addr, None)
        .await
        .unwrap();
    assert_eq!(after.touches.len(), truth.touches.len());
    // A made-up id and a mismatched answer are refused by the Rust side.
    let err = f
        .state
        .answer("not-a-request", AnswerInput::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "unknown_request");
    let err = f
        .state
        .answer(&id, AnswerInput::Answer { text: "yes".into() })
        .await
        .unwrap_err();
    assert_eq!(err.code, "mismatched_response");
    f.state.answer(&id, answer).await.unwrap();
    // A second answer loses: the request is gone.
    assert_eq!(
        f.state
            .answer(&id, AnswerInput::Approve)
            .await
            .unwrap_err()
            .code,
        "unknown_request"
    );
    let ended = rec.wait("the run to end", |r| r.last_ended()).await;
    assert!(!ended.run_id.is_empty(), "{ended:?}");
    let truth = phoneagent_sim::client::fetch_state_at(f.sim_addr, None)
        .await
        .unwrap();
    (rec, truth.orders_placed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_hard_request_places_the_order_and_is_recorded() {
    let f = fixture(order_script()).await;
    let (rec, orders) = run_hard(&f, AnswerInput::Approve).await;
    assert_eq!(orders, 1);
    let kinds = rec.kinds();
    assert!(
        kinds.contains(&"human_resolved") && kinds.contains(&"run_finished"),
        "{kinds:?}"
    );
    let runs = f.state.list_runs(10).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(!runs[0].demo, "a real run is not a demo");
    let events = f.state.run_events(&runs[0].id).unwrap();
    assert_eq!(
        events.len(),
        rec.events.lock().unwrap().len(),
        "the store has the same stream"
    );
    let ledger = f.state.ledger(&runs[0].id).unwrap();
    assert!(
        ledger
            .iter()
            .any(|l| l.decided_by.as_deref() == Some("human")),
        "{ledger:?}"
    );
    let html = f.state.export(&runs[0].id, "html").unwrap();
    assert!(html.bytes > 1000);
    f.model.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_hard_request_leaves_no_order() {
    let f = fixture(order_script()).await;
    let (_rec, orders) = run_hard(
        &f,
        AnswerInput::Reject {
            note: Some("no".into()),
        },
    )
    .await;
    assert_eq!(orders, 0);
    f.model.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_mirror_and_take_over_guard() {
    let f = fixture(vec![]).await;
    let view = f.state.list_devices().await;
    let v = view
        .devices
        .iter()
        .find(|d| d.is_virtual)
        .expect("the virtual phone is listed");
    assert_eq!(v.state, "device");
    assert_eq!(
        view.selected.as_ref().map(|s| s.serial.as_str()),
        Some(v.serial.as_str())
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    f.state
        .start_mirror(move |m| tx.send(m).is_ok())
        .await
        .unwrap();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a mirror message within 20 s")
            .expect("the mirror channel stays open")
    };
    // First the paths in use (SPEC D8): with the default capture `auto` and no scrcpy-server
    // on this computer, the virtual phone streams through `screenrecord`.
    match next().await {
        MirrorMessage::Paths {
            capture,
            input,
            note,
        } => {
            assert!(
                capture == "screenrecord" || capture.starts_with("scrcpy "),
                "{capture}"
            );
            if capture == "screenrecord" {
                assert_eq!(input, "shell input");
                assert!(
                    note.unwrap_or_default().contains("scrcpy"),
                    "says how to get scrcpy"
                );
            }
        }
        other => panic!("expected the paths first, got {other:?}"),
    }
    match next().await {
        MirrorMessage::Frame { frame } => {
            // Live video from the stream; the picture is a downscaled JPEG served by the `pa:`
            // scheme (issue #14), never base64 in the message; the size is the device's.
            assert!(frame.live, "a stream frame, not a polled screenshot");
            assert_eq!((frame.width, frame.height), (1080, 2400));
            let r = f.state.picture(&format!("/mirror/{}", frame.seq));
            assert_eq!(r.status, 200);
            assert_eq!(r.content_type, "image/jpeg");
            let jpeg = &r.bytes;
            let img = image::load_from_memory(jpeg).unwrap();
            assert_eq!((img.width(), img.height()), (432, 960));
            assert!(jpeg.len() < 120_000, "{} bytes per frame", jpeg.len());
        }
        other => panic!("expected a frame, got {other:?}"),
    }
    // With no run active the person may use the phone through the mirror (issue #12 item 5),
    // and the mirror shows what the tap did.
    f.state.take_over_tap(540, 1200).await.unwrap();
    let truth = phoneagent_sim::client::fetch_state_at(f.sim_addr, None)
        .await
        .unwrap();
    assert_eq!(truth.touches.len(), 1, "the person's tap reached the phone");
    f.state.stop_mirror();
    assert_eq!(f.state.stop_run().unwrap_err().code, "not_running");
    f.model.shutdown().await;
}

#[test]
fn settings_persist_and_keys_never_enter_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let state = Console::open(path.clone(), dir.path().join("exports")).unwrap();
    let mut s = state.settings().unwrap();
    s.default_mode = "hard".into();
    s.profiles[0].key_entry = "openai-main".into();
    state.save_settings(&s).unwrap();
    drop(state);
    let state = Console::open(path, dir.path().join("exports")).unwrap();
    let back = state.settings().unwrap();
    assert_eq!(back, s);
    let json = serde_json::to_string(&back).unwrap();
    assert!(
        !json.contains("api_key") && !json.contains("\"key\""),
        "{json}"
    );
}

/// Without an adb server (SPEC D1): a phone added by its network address is listed with its
/// state, selected, and driven over the phone-side ADB protocol (the virtual phone's adbd face),
/// with this computer's own key; the address is remembered across restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_added_by_address_is_listed_and_driven_without_an_adb_server() {
    use phoneagent_console::devices::DIRECT_TCP;
    use phoneagent_sim::{AdbdConfig, SimConfig, SimServer};

    let dir = tempfile::tempdir().unwrap();
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let adbd = sim.start_adbd(AdbdConfig::default(), 0).await.unwrap();
    let db = dir.path().join("phoneagent.sqlite3");
    let open = || {
        let st = Console::open(db.clone(), dir.path().join("exports")).unwrap();
        st.set_adb_key_dir(dir.path().join("keys"));
        st
    };
    let state = open();
    let bad = state.add_direct_device("phone.lan:notaport").unwrap_err();
    assert!(
        bad.message.contains("phone.lan:notaport"),
        "{}",
        bad.message
    );

    let serial = state
        .add_direct_device(&format!("127.0.0.1:{}", adbd.port()))
        .unwrap();
    let view = state.list_devices().await;
    let entry = view
        .devices
        .iter()
        .find(|d| d.adb_addr == DIRECT_TCP)
        .unwrap_or_else(|| panic!("not listed: {view:?}"));
    assert_eq!(entry.serial, serial);
    assert_eq!(entry.state, "device", "{entry:?}");
    assert_eq!(entry.transport, "tcp");

    state
        .select_device(DIRECT_TCP.to_string(), serial.clone())
        .unwrap();
    let checks = state.readiness().await.unwrap();
    assert!(
        checks.iter().any(|c| c.name == "screenshot" && c.ok),
        "{checks:?}"
    );
    assert!(
        checks
            .iter()
            .any(|c| c.name == "state" && c.ok && c.detail.contains("direct TCP")),
        "{checks:?}"
    );
    // The gate's own eyes are listed with the phone's checks (SPEC S10), as in `doctor`.
    assert!(
        checks
            .iter()
            .any(|c| c.name == "screen_reading" && c.ok && c.detail.starts_with("on:")),
        "{checks:?}"
    );
    assert!(
        dir.path().join("keys/adbkey").is_file(),
        "the key was created"
    );
    assert!(adbd.authorized_connections() >= 1);
    assert_eq!(
        adbd.prompts_shown(),
        1,
        "one \"Allow USB debugging?\" prompt: every connection uses the same key"
    );
    drop(state);

    // Remembered; forgetting it removes it from the list.
    let state = open();
    assert!(state.direct_targets().contains(&serial));
    state
        .select_device(DIRECT_TCP.to_string(), serial.clone())
        .unwrap();
    state.remove_direct_device(&serial).unwrap();
    assert!(
        state.readiness().await.is_err(),
        "a forgotten phone is no longer selected"
    );
    let view = state.list_devices().await;
    assert!(view.devices.iter().all(|d| d.adb_addr != DIRECT_TCP));
}

/// "Try a demo" (SPEC C1) with no phone and no model configured: the in-app virtual phone and
/// the scripted model server run the purchase end to end; the run is labelled a demo; the
/// approve-for-me variant leaves its ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_end_to_end_without_a_phone_or_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let state = Console::open(
        dir.path().join("phoneagent.sqlite3"),
        dir.path().join("exports"),
    )
    .unwrap();
    let bad = state.start_demo("nope", None).await.unwrap_err();
    assert!(bad.message.contains("draft-mail"), "{}", bad.message);

    for mode in [None, Some("approve-for-me")] {
        let rec = Recorder::follow(&state, Duration::from_secs(20));
        state.start_demo("buy", mode).await.unwrap();
        let ended = rec.wait("the demo to end", |r| r.last_ended()).await;
        assert_eq!(ended.status, RunStatus::Succeeded, "{mode:?}: {ended:?}");
        let started = rec
            .events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                AgentEvent::RunStarted { demo, .. } => Some(*demo),
                _ => None,
            });
        assert_eq!(started, Some(true), "labelled a demo");
        let reviews = state.approval_reviews(&ended.run_id).unwrap();
        if mode.is_some() {
            assert_eq!(reviews.len(), 2, "提交订单 and 确认支付 were reviewed");
        } else {
            assert!(reviews.is_empty());
        }
    }
    assert!(
        state.recent_tasks().unwrap().is_empty(),
        "a demo does not fill the recent tasks"
    );
    let runs = state.list_runs(10).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.demo), "history marks demo runs");
}

/// The approval contract of the dialog's Skip button (`ApprovalDialog.svelte`, `#skip-btn`
/// sends `{type: "reject", note: null}`): an `ask_user` question skipped from the UI is taken by
/// the run's session (the old bug answered `mismatched_response`), and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_user_question_skipped_from_the_ui_is_accepted() {
    let f = fixture(vec![
        ScriptEntry::text(r#"do(action="Interact", message="Which size do you want?")"#),
        ScriptEntry::text(r#"finish(message="done")"#),
        ScriptEntry::text(r#"finish(message="done", confirm=True)"#),
    ])
    .await;
    let rec = Recorder::follow(&f.state, Duration::from_secs(20));
    f.state
        .start_run(StartRunRequest {
            task: "buy a shirt".into(),
            profile: String::new(),
            max_steps: 6,
            mode: "wary".into(),
        })
        .await
        .unwrap();
    let id = rec.wait("the question", |r| r.pending_request()).await;
    let pending = f.state.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].kind, RequestKind::AskUser);
    // Exactly what the Skip button sends, through the same dispatch the web console uses.
    f.state
        .dispatch(
            "answer_request",
            serde_json::json!({"id": id, "answer": {"type": "reject", "note": null}}),
        )
        .await
        .unwrap();
    let ended = rec.wait("the run to end", |r| r.last_ended()).await;
    assert!(!ended.run_id.is_empty(), "{ended:?}");
    assert!(rec.kinds().contains(&"human_resolved"), "{:?}", rec.kinds());
    assert!(f.state.active_run().is_none());
    f.model.shutdown().await;
}
