//! The timing profile (SPEC V6) and the protocol fixes of issue #12 item 6 that need no stock
//! adb: `exec:` carries stderr, an unknown fault name is an error.

use std::time::{Duration, Instant};

use phoneagent_sim::{SimConfig, TimingProfile};

use crate::common::*;

fn slow(screencap_ms: f64) -> TimingProfile {
    let mut t = TimingProfile::instant();
    t.set("screencap_ms", screencap_ms).unwrap();
    t.set("input_ms", 300.0).unwrap();
    t
}

/// The cost is charged before the response (a lower bound: a sleep never ends early), and
/// only for the commands it names.
#[tokio::test]
async fn real_timing_charges_each_command_before_its_response() {
    let (sim, phone) = start_with(SimConfig::default().with_timing(&slow(400.0))).await;
    let p = sim.port();
    let t0 = Instant::now();
    sh(p, "input tap 5 6").await;
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(phone.ground_truth().touches.last().map(|t| t.x), Some(5));
    let t0 = Instant::now();
    let png = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(decode_png(&png).dimensions(), (1080, 2400));
    // The profile can be changed on a running phone: instant again.
    phone.set_timing(TimingProfile::instant());
    assert!(phone.timing().is_instant());
}

/// A slow command on one stream does not hold up another (async sleep, not a shared loop).
#[tokio::test]
async fn a_slow_screencap_does_not_block_other_streams() {
    let (sim, _phone) = start_with(SimConfig::default().with_timing(&slow(5_000.0))).await;
    let p = sim.port();
    let slow = tokio::spawn(async move { raw_service(p, SERIAL, "exec:screencap").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(sh(p, "echo quick").await, "quick\n");
    assert!(!slow.is_finished(), "the screencap is still being charged");
    slow.abort();
}

/// `exec:` merges stderr into the stream as a real phone does; shell v2 keeps it apart.
#[tokio::test]
async fn exec_carries_stderr_in_the_stream() {
    let (sim, _phone) = start().await;
    let p = sim.port();
    let out = raw_service(p, SERIAL, "exec:frobnicate").await.unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("frobnicate: inaccessible or not found"),
        "{text:?}"
    );
    let r = shell_v2(p, SERIAL, "frobnicate").await.unwrap();
    assert!(r.stdout.is_empty());
    assert!(r.err().contains("inaccessible or not found"));
}

/// An unknown fault name is refused with the known names, not silently ignored.
#[tokio::test]
async fn an_unknown_fault_name_is_an_error_naming_the_known_ones() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let mut s = connect(p).await;
    send(&mut s, "host:sim-fault:{\"blak_frames\":true}").await;
    let err = status(&mut s).await.unwrap_err();
    assert!(
        err.contains("blak_frames") && err.contains("black_frames"),
        "{err}"
    );
    assert!(!phone.ground_truth().faults.black_frames);
    let e = serde_json::from_str::<phoneagent_sim::Faults>("{\"rotaton\":1}").unwrap_err();
    assert!(e.to_string().contains("rotation"), "{e}");
}
