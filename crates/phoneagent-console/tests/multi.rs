//! Several sessions at once, one per phone (issue #13): one [`Console`] drives two phones of
//! one virtual-phone server (real ADB protocol on loopback) with a scripted model each (real
//! HTTP on loopback). Both runs are busy at the same moment, a second start on a busy phone is
//! refused, each answer reaches the run that asked, each phone's ground truth shows only its own
//! run's effect, and each phone has its own mirror.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use phoneagent_console::Console;
use phoneagent_console::dto::{MirrorMessage, RunEnded, StartRunRequest};
use phoneagent_console::settings::AppSettings;
use phoneagent_protocol::event::HumanResponse;
use phoneagent_protocol::{AgentEvent, RunStatus};
use phoneagent_sim::{SimConfig, SimServer};
use phoneagent_testkit::{ScriptedModel, ScriptedModelConfig, SimTarget};
use support::{Recorder, order_script};

impl Recorder {
    /// The run started on phone `serial` (from its `run_started` event).
    fn run_on(&self, serial: &str) -> Option<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                AgentEvent::RunStarted { serial: s, .. } if s == serial => Some(e.run_id.clone()),
                _ => None,
            })
    }

    /// The first human request of run `run_id`.
    fn request_of(&self, run_id: &str) -> Option<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                AgentEvent::HumanRequested { request_id, .. } if e.run_id == run_id => {
                    Some(request_id.clone())
                }
                _ => None,
            })
    }

    /// The run that resolved request `id`.
    fn resolved_by(&self, id: &str) -> Option<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                AgentEvent::HumanResolved { request_id, .. } if request_id == id => {
                    Some(e.run_id.clone())
                }
                _ => None,
            })
    }

    fn ended(&self, run_id: &str) -> Option<RunEnded> {
        self.ended
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.run_id == run_id)
            .cloned()
    }
}

struct TwoPhones {
    _dir: tempfile::TempDir,
    console: Arc<Console>,
    sim: SimServer,
    addr: SocketAddr,
    serials: [String; 2],
    models: Vec<ScriptedModel>,
}

/// A console, a virtual-phone server with two phones on the checkout screen, and one scripted
/// model per phone (profile `scripted-<i>` drives phone `i`'s script, seeing that phone).
async fn two_phones() -> TwoPhones {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::open(
        dir.path().join("phoneagent.sqlite3"),
        dir.path().join("exports"),
    )
    .unwrap();
    let sim = SimServer::start(SimConfig::with_devices(2), 0)
        .await
        .unwrap();
    let addr = sim.addr();
    let serials = sim.serials();
    assert_eq!(serials.len(), 2, "{serials:?}");
    let serials = [serials[0].clone(), serials[1].clone()];
    let mut s = AppSettings::default();
    let template = s.profiles[0].clone();
    s.profiles.clear();
    let mut models = vec![];
    for (i, serial) in serials.iter().enumerate() {
        phoneagent_sim::client::reset_at(addr, Some(serial), "checkout")
            .await
            .unwrap();
        let mut cfg = ScriptedModelConfig::with_entries(order_script());
        cfg.sim = Some(SimTarget {
            port: addr.port(),
            serial: Some(serial.clone()),
        });
        let model = ScriptedModel::start(cfg).await.unwrap();
        let mut p = template.clone();
        p.name = format!("scripted-{i}");
        p.base_url = model.base_url();
        p.model = "scripted".into();
        p.key_entry = String::new();
        s.profiles.push(p);
        models.push(model);
    }
    s.roles.actor = "scripted-0".into();
    s.max_duration_secs = 120;
    s.finish_verify = "off".into();
    console.save_settings(&s).unwrap();
    TwoPhones {
        _dir: dir,
        console,
        sim,
        addr,
        serials,
        models,
    }
}

fn hard_order(profile: &str) -> StartRunRequest {
    StartRunRequest {
        task: "提交订单".into(),
        profile: profile.into(),
        max_steps: 6,
        mode: "hard".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phones_run_at_once_and_each_answer_reaches_its_run() {
    let f = two_phones().await;
    let c = &f.console;
    let [a, b] = f.serials.clone();
    let addr = f.addr.to_string();
    let rec = Recorder::follow(c, Duration::from_secs(30));

    // A run on each phone, started one after the other while the first one runs.
    c.select_device(addr.clone(), a.clone()).unwrap();
    let started = c.start_run(hard_order("scripted-0")).await.unwrap();
    assert_eq!(started.serial, a);
    let run_a = rec.wait("the run on A", |r| r.run_on(&a)).await;
    c.select_device(addr.clone(), b.clone()).unwrap();
    let started = c.start_run(hard_order("scripted-1")).await.unwrap();
    assert_eq!(started.serial, b);
    let run_b = rec.wait("the run on B", |r| r.run_on(&b)).await;
    assert_ne!(run_a, run_b);

    // Both wait for the person at once: both sessions busy at the same moment.
    let req_a = rec.wait("A's approval", |r| r.request_of(&run_a)).await;
    let req_b = rec.wait("B's approval", |r| r.request_of(&run_b)).await;
    let runs = c.active_runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (serial, run) in [(&a, &run_a), (&b, &run_b)] {
        let v = runs.iter().find(|v| &v.serial == serial).unwrap();
        assert!(v.busy, "{v:?}");
        assert_eq!(v.run_id.as_ref(), Some(run), "{v:?}");
        assert_eq!(v.pending, 1, "{v:?}");
    }
    assert_eq!(c.active_run_of(Some(&a)), Some(run_a.clone()));
    assert_eq!(c.active_run_of(Some(&b)), Some(run_b.clone()));
    // The selected phone (B) is the default target of a control without a serial.
    assert_eq!(c.active_run(), Some(run_b.clone()));
    assert_eq!(c.pending().len(), 2, "every phone's requests");
    assert_eq!(c.pending_of(Some(&a))[0].id, req_a);
    assert_eq!(c.pending_of(Some(&run_b))[0].id, req_b, "by run id too");

    // A second start on a busy phone is refused (B is selected, then A), the runs go on.
    let err = c.start_run(hard_order("scripted-1")).await.unwrap_err();
    assert_eq!(err.code, "busy", "{}", err.message);
    c.select_device(addr.clone(), a.clone()).unwrap();
    let err = c.start_run(hard_order("scripted-0")).await.unwrap_err();
    assert_eq!(err.code, "busy", "{}", err.message);
    assert!(c.active_runs().iter().all(|v| v.busy));
    // Nothing happened on either phone before the answers.
    for serial in [&a, &b] {
        let truth = phoneagent_sim::client::fetch_state_at(f.addr, Some(serial))
            .await
            .unwrap();
        assert_eq!(truth.orders_placed, 0, "{serial}");
    }

    // Pause and resume reach the named phone only.
    c.set_paused_of(Some(&b), true).unwrap();
    let paused: Vec<(String, bool)> = c
        .active_runs()
        .into_iter()
        .map(|v| (v.serial, v.paused))
        .collect();
    assert_eq!(paused, vec![(a.clone(), false), (b.clone(), true)]);
    c.set_paused_of(Some(&b), false).unwrap();

    // Approve A's order through the same dispatch the web console uses; reject B's. Each
    // answer reaches the run that asked (whatever phone is selected).
    c.dispatch(
        "answer_request",
        serde_json::json!({"id": req_a, "answer": {"type": "approve"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        rec.wait("A's request resolved", |r| r.resolved_by(&req_a))
            .await,
        run_a
    );
    assert_eq!(
        c.pending_of(Some(&b)).len(),
        1,
        "B still waits for its own answer"
    );
    let ended_a = rec.wait("A's end", |r| r.ended(&run_a)).await;
    assert_eq!(ended_a.serial, a, "{ended_a:?}");
    assert!(
        c.active_runs()
            .iter()
            .any(|v| v.serial == b && v.busy && v.pending == 1),
        "B runs on after A ended: {:?}",
        c.active_runs()
    );
    c.answer(
        &req_b,
        HumanResponse::Reject {
            note: Some("not on this phone".into()),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        rec.wait("B's request resolved", |r| r.resolved_by(&req_b))
            .await,
        run_b
    );
    let ended_b = rec.wait("B's end", |r| r.ended(&run_b)).await;
    assert_eq!(ended_b.serial, b, "{ended_b:?}");
    assert_ne!(ended_b.status, RunStatus::Failed, "{ended_b:?}");

    // Each phone's ground truth shows its own run's effect only.
    let truth_a = phoneagent_sim::client::fetch_state_at(f.addr, Some(&a))
        .await
        .unwrap();
    let truth_b = phoneagent_sim::client::fetch_state_at(f.addr, Some(&b))
        .await
        .unwrap();
    assert_eq!(truth_a.orders_placed, 1, "approved on A");
    assert_eq!(truth_b.orders_placed, 0, "rejected on B");

    // Both runs are still shown (finished), with their ids; controls of a finished run say so.
    let runs = c.active_runs();
    assert!(runs.iter().all(|v| !v.busy), "{runs:?}");
    assert_eq!(
        runs.iter()
            .map(|v| v.run_id.clone().unwrap())
            .collect::<Vec<_>>(),
        vec![run_a.clone(), run_b.clone()]
    );
    assert_eq!(c.stop_run_of(Some(&a)).unwrap_err().code, "not_running");
    assert_eq!(
        c.stop_run_of(Some("no-such-phone")).unwrap_err().code,
        "not_running"
    );
    assert_eq!(c.list_runs(10).unwrap().len(), 2);
    for m in f.models {
        m.shutdown().await;
    }
    drop(f.sim);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_phone_has_its_own_mirror() {
    let f = two_phones().await;
    let c = &f.console;
    let addr = f.addr.to_string();
    // A phone is mirrored once the console knows it (selected, as the Devices list does): then
    // its mirror goes on while another phone is selected and mirrored.
    assert_eq!(
        c.start_mirror_of(Some(&f.serials[1]), |_| true)
            .await
            .unwrap_err()
            .code,
        "no_device"
    );
    let mut rxs = vec![];
    for serial in &f.serials {
        c.select_device(addr.clone(), serial.clone()).unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        c.start_mirror_of(Some(serial), move |m| tx.send(m).is_ok())
            .await
            .unwrap();
        rxs.push(rx);
    }
    for (serial, rx) in f.serials.iter().zip(rxs.iter_mut()) {
        let seq = loop {
            let m = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                .await
                .expect("a mirror message within 20 s")
                .expect("the mirror channel stays open");
            if let MirrorMessage::Frame { frame } = m {
                break frame.seq;
            }
        };
        let r = c.picture(&format!("/mirror/{serial}/{seq}"));
        assert_eq!(
            (r.status, r.content_type.as_str()),
            (200, "image/jpeg"),
            "{serial}"
        );
    }
    // `mirror/<seq>` is the selected phone's: the first one's after selecting it again (its
    // mirror kept going), as long as it has one.
    c.select_device(addr, f.serials[0].clone()).unwrap();
    assert_eq!(c.picture("/mirror/1").status, 200);
    // Stopping one phone's mirror leaves the other's.
    c.stop_mirror_of(Some(&f.serials[0]));
    assert_eq!(
        c.picture(&format!("/mirror/{}/1", f.serials[0])).status,
        404
    );
    // The selected phone has none now: `mirror/<seq>` is the only mirror still going (as
    // with one mirror, which kept its frames whatever was selected).
    let only = c.picture("/mirror/1");
    assert_eq!(only.status, 200);
    assert_eq!(
        only.bytes,
        c.picture(&format!("/mirror/{}/1", f.serials[1])).bytes
    );
    assert_eq!(
        c.picture(&format!("/mirror/{}/1", f.serials[1])).status,
        200
    );
    c.stop_mirror();
    assert_eq!(
        c.picture(&format!("/mirror/{}/1", f.serials[1])).status,
        404
    );
    for m in f.models {
        m.shutdown().await;
    }
}
