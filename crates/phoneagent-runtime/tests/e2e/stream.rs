//! The runtime on the live screen stream (issue #12 items 2-4; SPEC D8, D9, R3, R4, D6): the
//! virtual phone runs scrcpy's server protocol for real (H.264 video socket, control socket);
//! observations are decoded frames, the settle watches the stream, input goes through the
//! control socket, and a stream that dies mid-run falls back to raw `screencap` without
//! losing the run. Ground truth is the judge.

use phoneagent_device::ScreenshotMode;
use phoneagent_protocol::AgentEvent;
use phoneagent_protocol::event::RunStatus;

use crate::harness::{BUY, Harness, Opts};

fn paths(events: &[AgentEvent]) -> Vec<(String, String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::DevicePaths {
                capture,
                input,
                note,
            } => Some((capture.clone(), input.clone(), note.clone())),
            _ => None,
        })
        .collect()
}

fn taps_dispatched(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(e, AgentEvent::ActionDispatched { action_type, command_ok: true, .. }
                if action_type == "tap")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buy_on_the_scrcpy_stream_observes_frames_and_sends_input_through_control() {
    let mut h = Harness::new(
        BUY,
        Opts {
            capture: Some(ScreenshotMode::Scrcpy),
            ..Opts::default()
        },
    )
    .await;
    let commands0 = h.truth().shell_commands;
    let out = h.run("Buy the first product in the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = h.truth();
    assert_eq!(t.orders_placed, 1);
    assert_eq!(t.payments_confirmed, 1);
    // Every tap sent reached the phone exactly once.
    assert_eq!(t.touches.len(), taps_dispatched(&events), "{:?}", t.touches);
    // The run recorded the path it used.
    let p = paths(&events);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].0.starts_with("scrcpy "), "{p:?}");
    assert_eq!(p[0].1, "scrcpy control");
    // Observations are frames of the stream: no screencap, no `input` per step. The services
    // the phone saw are the stream's start (push, server) and a handful of geometry reads,
    // not ~13 per step.
    let services = t.shell_commands - commands0;
    assert!(
        services < 15,
        "{services} device services for {} steps",
        out.steps
    );
    // Verification saw the taps' effects on the stream frames.
    let effects = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Verification(v) if v.observable_effect))
        .count();
    assert!(effects >= 5, "{effects} verified effects");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_dies_mid_run_falls_back_to_raw_and_the_run_goes_on() {
    let mut h = Harness::new(
        BUY,
        Opts {
            capture: Some(ScreenshotMode::Scrcpy),
            ..Opts::default()
        },
    )
    .await;
    // Kill the scrcpy server after the third tap reached the phone (the phone stays
    // connected: a crashed server, not a lost device).
    let phone = h.sim.phone(&h.serial).unwrap();
    let mut watch = h.agent.subscribe();
    let killer = tokio::spawn(async move {
        let mut taps = 0;
        while let Ok(env) = watch.recv().await {
            if let AgentEvent::ActionDispatched { action_type, .. } = &env.event
                && action_type == "tap"
            {
                taps += 1;
                if taps == 3 {
                    phone.stop_streams();
                    return true;
                }
            }
        }
        false
    });
    let out = h.run("Buy the first product in the shop").await;
    let events = h.drain();
    assert!(killer.await.unwrap(), "the stream was killed mid-run");
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    let t = h.truth();
    assert_eq!(t.orders_placed, 1);
    assert_eq!(t.payments_confirmed, 1);
    // No action was replayed: each tap dispatched reached the phone once.
    assert_eq!(t.touches.len(), taps_dispatched(&events), "{:?}", t.touches);
    // The run recorded the switch from the stream to raw screencap, and why.
    let p = paths(&events);
    assert!(p.len() >= 2, "{p:?}");
    assert!(p[0].0.starts_with("scrcpy "), "{p:?}");
    let last = p.last().unwrap();
    assert_eq!(last.0, "raw", "{p:?}");
    assert_eq!(last.1, "shell input", "{p:?}");
    assert!(
        last.2.as_deref().is_some_and(|n| n.contains("died")),
        "{p:?}"
    );
}
