//! Fault injection (SPEC V4).

use std::time::{Duration, Instant};

use phoneagent_sim::Faults;

use crate::common::*;

#[tokio::test]
async fn black_frames_are_black_and_of_the_right_size() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        black_frames: true,
        ..Default::default()
    });
    let img = decode_png(&raw_service(p, SERIAL, "exec:screencap -p").await.unwrap());
    assert_eq!(img.dimensions(), (1080, 2400));
    assert!(img.pixels().all(|px| px.0 == [0, 0, 0, 255]));
    phone.set_faults(Faults::default());
    let img = decode_png(&raw_service(p, SERIAL, "exec:screencap -p").await.unwrap());
    assert!(img.pixels().any(|px| px.0 != [0, 0, 0, 255]));
}

#[tokio::test]
async fn slow_screencap_waits() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        screencap_delay_ms: 400,
        ..Default::default()
    });
    let t = Instant::now();
    let png = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(decode_png(&png).dimensions(), (1080, 2400));
    // Other commands are not delayed by it.
    let t = Instant::now();
    sh(p, "echo fast").await;
    assert!(t.elapsed() < Duration::from_millis(400));
}

#[tokio::test]
async fn disconnect_after_n_commands_then_reconnect() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(2),
        reconnect_after_ms: Some(300),
        ..Default::default()
    });
    sh(p, "echo 1").await;
    assert_eq!(
        host_query(p, "host:devices").await.unwrap(),
        "virtual-phone-1\tdevice\n"
    );
    sh(p, "echo 2").await; // the 2nd completes, then the device vanishes
    assert_eq!(host_query(p, "host:devices").await.unwrap(), "");
    let err = shell_v2(p, SERIAL, "echo 3").await.unwrap_err();
    assert_eq!(err, "device 'virtual-phone-1' not found");
    assert_eq!(phone.ground_truth().state, "disconnected");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        host_query(p, "host:devices").await.unwrap(),
        "virtual-phone-1\tdevice\n"
    );
    assert_eq!(sh(p, "echo back").await, "back\n");
    let gt = phone.ground_truth();
    assert_eq!((gt.disconnects, gt.state.as_str()), (1, "device"));
    assert_eq!(gt.faults.disconnect_after_commands, None, "one-shot");
}

#[tokio::test]
async fn disconnect_closes_open_streams() {
    let (sim, phone) = start().await;
    let p = sim.port();
    // A slow screencap is in flight when the device goes away.
    phone.set_faults(Faults {
        screencap_delay_ms: 5_000,
        ..Default::default()
    });
    let pending = tokio::spawn(async move { raw_service(p, SERIAL, "exec:screencap -p").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(0),
        ..Default::default()
    });
    let out = pending.await.unwrap().unwrap();
    assert!(out.is_empty(), "stream closed without a frame");
    assert!(t.elapsed() < Duration::from_secs(3));
    // Without reconnect_after_ms it stays away until faults are set again.
    assert_eq!(host_query(p, "host:devices").await.unwrap(), "");
    phone.set_faults(Faults::default());
    assert_eq!(
        host_query(p, "host:devices").await.unwrap(),
        "virtual-phone-1\tdevice\n"
    );
}

#[tokio::test]
async fn inject_events_denied_and_dropped_input() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        inject_events_denied: true,
        ..Default::default()
    });
    let (x, y) = phone
        .ground_truth()
        .element("home.app.shop")
        .unwrap()
        .center();
    let r = shell_v2(p, SERIAL, &format!("input tap {x} {y}"))
        .await
        .unwrap();
    assert_eq!(r.code, Some(1));
    assert!(
        r.err().contains("java.lang.SecurityException: Injecting to another application requires INJECT_EVENTS permission"),
        "{}",
        r.err()
    );
    // Shell v1 has no separate stderr: the exception is in the stream.
    let v1 = raw_service(p, SERIAL, &format!("shell:input tap {x} {y}"))
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&v1).contains("INJECT_EVENTS"));
    let gt = phone.ground_truth();
    assert_eq!(
        (
            gt.current_screen.as_str(),
            gt.rejected_inputs,
            gt.commands_received
        ),
        ("home", 2, 2)
    );

    phone.set_faults(Faults {
        drop_input: true,
        ..Default::default()
    });
    let r = shell_v2(p, SERIAL, &format!("input tap {x} {y}"))
        .await
        .unwrap();
    assert_eq!(r.code, Some(0));
    let gt = phone.ground_truth();
    assert_eq!((gt.current_screen.as_str(), gt.dropped_inputs), ("home", 1));
    assert!(gt.touches.is_empty());
}

#[tokio::test]
async fn rotation_to_landscape() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        rotation: 1,
        ..Default::default()
    });
    let img = decode_png(&raw_service(p, SERIAL, "exec:screencap -p").await.unwrap());
    assert_eq!(img.dimensions(), (2400, 1080));
    assert_eq!(sh(p, "wm size").await, "Physical size: 1080x2400\n");
    let dump = sh(p, "dumpsys input").await;
    assert!(
        dump.lines().any(|l| l == "      SurfaceOrientation: 1"),
        "{dump}"
    );
    let gt = phone.ground_truth();
    assert_eq!((gt.width, gt.height, gt.rotation), (2400, 1080, 1));
    // Elements are in landscape coordinates and taps use them.
    let el = gt.element("home.app.mail").unwrap();
    assert!(el.bounds[2] <= 2400 && el.bounds[3] <= 1080);
    let gt = tap(p, &phone, "home.app.mail").await;
    assert_eq!(gt.current_screen, "mail_inbox");
    for e in &gt.elements {
        assert!(e.bounds[2] <= 2400 && e.bounds[3] <= 1080, "{e:?}");
    }
}
