//! Contract tests: the device layer against the virtual phone, through the ADB protocol.
//!
//! Size: one contract suite over one fixture (the virtual phone on loopback), read top to bottom
//! as the device layer's contract.

use crate::{eventually, fast_opts, one_phone, start};
use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, Device, DeviceError, DeviceState, KeyCode, ScreenshotMode,
    ShellProtocol, Transport,
};
use phoneagent_protocol::{DevicePoint, ErrorCode, Rotation};
use phoneagent_sim::{Faults, LATIN_IME, SimConfig, SimDeviceConfig, SimDeviceState};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn pt(x: u32, y: u32) -> DevicePoint {
    DevicePoint { x, y }
}

const ADB_IME: &str = "com.android.adbkeyboard/.AdbIME";

#[tokio::test]
async fn devices_list_states_models_and_fixes() {
    let mut cfg = SimConfig::with_devices(3);
    cfg.devices[1].state = SimDeviceState::Unauthorized;
    cfg.devices[2].state = SimDeviceState::Offline;
    let (_sim, server) = start(cfg).await;
    assert_eq!(server.version().await.unwrap(), 41);
    let list = server.devices().await.unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].serial, "virtual-phone-1");
    assert_eq!(list[0].state, DeviceState::Device);
    assert_eq!(list[0].model.as_deref(), Some("PhoneAgent_Virtual"));
    assert_eq!(list[0].transport, Transport::Tcp);
    assert_eq!(list[0].fix, None);
    assert_eq!(list[1].state, DeviceState::Unauthorized);
    assert!(
        list[1]
            .fix
            .as_deref()
            .unwrap()
            .contains("Allow USB debugging")
    );
    assert_eq!(list[2].state, DeviceState::Offline);
    assert!(list[2].fix.as_deref().unwrap().contains("replug"));
}

#[tokio::test]
async fn several_devices_and_none_chosen_is_refused() {
    let (_sim, server) = start(SimConfig::with_devices(2)).await;
    let e = AdbDevice::select(server.clone(), None, fast_opts())
        .await
        .unwrap_err();
    match &e {
        DeviceError::MultipleDevices { serials } => {
            assert_eq!(serials.len(), 2);
            assert!(serials[0].starts_with("virtual-phone-1"));
            assert!(serials[1].starts_with("virtual-phone-2"));
        }
        other => panic!("expected MultipleDevices, got {other}"),
    }
    assert_eq!(e.code(), ErrorCode::MultipleDevices);
    assert!(e.to_string().contains("--serial"));
    // Choosing one works, and its commands reach only that device.
    let d2 = AdbDevice::select(server, Some("virtual-phone-2"), fast_opts())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    d2.tap(pt(100, 200), &cancel).await.unwrap();
    let gt1 = phoneagent_sim::client::fetch_state(_sim.port(), Some("virtual-phone-1"))
        .await
        .unwrap();
    let gt2 = _sim.phone("virtual-phone-2").unwrap().ground_truth();
    assert!(gt1.touches.is_empty());
    assert_eq!(gt2.touches.len(), 1);
    assert_eq!((gt2.touches[0].x, gt2.touches[0].y), (100, 200));
}

#[tokio::test]
async fn unauthorized_and_offline_are_skipped_with_their_fix() {
    let mut cfg = SimConfig::with_devices(3);
    cfg.devices[0].state = SimDeviceState::Unauthorized;
    cfg.devices[2].state = SimDeviceState::Offline;
    let (_sim, server) = start(cfg).await;
    let d = AdbDevice::select(server.clone(), None, fast_opts())
        .await
        .unwrap();
    assert_eq!(d.serial(), "virtual-phone-2");

    let mut cfg = SimConfig::with_devices(1);
    cfg.devices[0].state = SimDeviceState::Unauthorized;
    let (_sim2, server2) = start(cfg).await;
    let e = AdbDevice::select(server2.clone(), None, fast_opts())
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::Unauthorized { .. }), "{e}");
    assert!(e.to_string().contains("accept"));
    // The server refuses a transport to it too, and that is typed.
    let e = server2
        .shell("virtual-phone-1", "echo hi", ShellProtocol::V2)
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::Unauthorized { .. }), "{e}");
    let e = AdbDevice::open(server, "virtual-phone-3", fast_opts())
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::Offline { .. }), "{e}");
    let e = AdbDevice::open(server2, "nope", fast_opts())
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::SerialNotFound { .. }), "{e}");
}

#[tokio::test]
async fn shell_v2_exit_codes_and_stderr_and_v1_fallback() {
    let (_sim, dev) = one_phone().await;
    assert_eq!(dev.shell_protocol(), ShellProtocol::V2);
    let cancel = CancellationToken::new();
    let ok = dev.shell("echo hello", &cancel).await.unwrap();
    assert_eq!(ok.stdout_str(), "hello\n");
    assert_eq!(ok.exit_code, Some(0));
    let bad = dev.shell("frobnicate --now", &cancel).await.unwrap();
    assert_eq!(bad.exit_code, Some(127));
    assert!(bad.stderr_str().contains("inaccessible or not found"));
    assert!(bad.stdout.is_empty());
    // Shell v1: merged output, no exit status.
    let v1 = dev
        .server()
        .expect("reached through the adb server")
        .shell("virtual-phone-1", "frobnicate", ShellProtocol::V1)
        .await
        .unwrap();
    assert_eq!(v1.exit_code, None);
    assert!(v1.stdout_str().contains("inaccessible or not found"));
}

#[tokio::test]
async fn gestures_reach_the_phone_as_sent() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let c = CancellationToken::new();
    dev.tap(pt(10, 20), &c).await.unwrap();
    dev.double_tap(pt(30, 40), &c).await.unwrap();
    dev.long_press(pt(50, 60), 700, &c).await.unwrap();
    dev.swipe(pt(500, 1800), pt(500, 600), 250, &c)
        .await
        .unwrap();
    dev.key(KeyCode::Back, &c).await.unwrap();
    dev.key(KeyCode::Home, &c).await.unwrap();
    let gt = phone.ground_truth();
    type Row = (String, i32, i32, Option<i32>, Option<i32>, Option<u64>);
    let t: Vec<Row> = gt
        .touches
        .iter()
        .map(|t| (t.kind.clone(), t.x, t.y, t.x2, t.y2, t.duration_ms))
        .collect();
    assert_eq!(t.len(), 5, "{t:?}");
    assert_eq!((t[0].1, t[0].2), (10, 20));
    assert_eq!((t[1].1, t[1].2), (30, 40));
    assert_eq!((t[2].1, t[2].2), (30, 40));
    assert_eq!((t[3].1, t[3].2, t[3].5), (50, 60, Some(700)));
    assert_eq!(
        (t[4].1, t[4].2, t[4].3, t[4].4, t[4].5),
        (500, 1800, Some(500), Some(600), Some(250))
    );
    assert!(
        gt.keys.ends_with(&["BACK".to_string(), "HOME".to_string()]),
        "{:?}",
        gt.keys
    );
}

#[tokio::test]
async fn screenshot_is_the_phones_png_binary_clean() {
    let (sim, dev) = one_phone().await;
    let c = CancellationToken::new();
    let shot = dev.screenshot(&c).await.unwrap();
    assert_eq!(shot.image.dimensions(), (1080, 2400));
    assert!(!shot.blocked);
    let truth = sim
        .phone("virtual-phone-1")
        .unwrap()
        .screenshot_png()
        .unwrap();
    assert_eq!(&shot.png[..], &truth[..], "exec: is binary clean");
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!((g.width_px, g.height_px), (1080, 2400));
    assert_eq!(g.density_dpi, Some(420));
    assert_eq!(g.rotation, Rotation::R0);
}

#[tokio::test]
async fn raw_screenshot_path_gives_the_same_pixels() {
    let (_sim, server) = start(SimConfig::default()).await;
    let c = CancellationToken::new();
    let png = AdbDevice::open(server.clone(), "virtual-phone-1", fast_opts())
        .await
        .unwrap()
        .screenshot(&c)
        .await
        .unwrap();
    let raw_dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        AdbDeviceOptions {
            screenshot_mode: ScreenshotMode::Raw,
            ..fast_opts()
        },
    )
    .await
    .unwrap();
    let raw = raw_dev.screenshot(&c).await.unwrap();
    assert_eq!(raw.image.dimensions(), png.image.dimensions());
    assert!(
        *raw.image == *png.image,
        "raw and PNG paths decode to the same frame"
    );
    assert!(!raw.blocked);
    let reencoded = image::load_from_memory(&raw.png).unwrap().into_rgba8();
    assert!(reencoded == *raw.image, "host-encoded PNG is lossless");
}

/// An unchanged screen gives byte-identical `screencap` output: the device hands out the same
/// decoded frame (no second decode), and a changed screen is decoded anew and matches the phone.
#[tokio::test]
async fn identical_screencaps_share_one_decoded_frame_and_changes_decode_anew() {
    let (sim, server) = start(SimConfig::default()).await;
    let c = CancellationToken::new();
    for mode in [ScreenshotMode::Png, ScreenshotMode::Raw] {
        let dev = AdbDevice::open(
            server.clone(),
            "virtual-phone-1",
            AdbDeviceOptions {
                screenshot_mode: mode,
                ..fast_opts()
            },
        )
        .await
        .unwrap();
        let a = dev.screenshot(&c).await.unwrap();
        let b = dev.screenshot(&c).await.unwrap();
        assert!(
            std::sync::Arc::ptr_eq(&a.image, &b.image),
            "{mode:?}: the same bytes reuse the decoded frame"
        );
        assert_eq!(a.png, b.png, "{mode:?}");
        assert_eq!(a.blocked, b.blocked);
        // Open an app so the screen changes, then compare with a fresh decode.
        let phone = sim.phone("virtual-phone-1").unwrap();
        let (x, y) = phone
            .ground_truth()
            .elements
            .iter()
            .find(|e| e.id == "home.app.shop")
            .map(|e| e.center())
            .unwrap();
        dev.tap(pt(x as u32, y as u32), &c).await.unwrap();
        let changed = dev.screenshot(&c).await.unwrap();
        assert!(
            !std::sync::Arc::ptr_eq(&a.image, &changed.image),
            "{mode:?}: a new screen is decoded anew"
        );
        assert!(
            *changed.image != *a.image,
            "{mode:?}: the new screen differs"
        );
        let truth = image::load_from_memory(&phone.screenshot_png().unwrap())
            .unwrap()
            .into_rgba8();
        assert!(
            *changed.image == truth,
            "{mode:?}: the decoded frame is the phone's current screen"
        );
        dev.key(KeyCode::Back, &c).await.unwrap();
    }
}

#[tokio::test]
async fn black_frame_is_returned_as_blocked_not_replaced() {
    let (sim, dev) = one_phone().await;
    sim.phone("virtual-phone-1").unwrap().set_faults(Faults {
        black_frames: true,
        ..Faults::default()
    });
    let shot = dev.screenshot(&CancellationToken::new()).await.unwrap();
    assert!(shot.blocked);
    assert_eq!(shot.image.dimensions(), (1080, 2400));
    for (x, y) in [(0, 0), (540, 1200), (1079, 2399)] {
        assert_eq!(shot.image.get_pixel(x, y).0[..3], [0, 0, 0]);
    }
    let r = dev.readiness(&CancellationToken::new()).await.unwrap();
    let check = r.checks.iter().find(|c| c.name == "screenshot").unwrap();
    assert!(!check.ok);
    assert!(check.fix.as_deref().unwrap().contains("unlock"));
    assert!(!r.ready());
}

#[tokio::test]
async fn slow_screencap_succeeds_then_times_out_into_screenshot_failed() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        AdbDeviceOptions {
            screenshot_timeout: Duration::from_millis(600),
            screenshot_attempts: 2,
            ..fast_opts()
        },
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    phone.set_faults(Faults {
        screencap_delay_ms: 250,
        ..Faults::default()
    });
    let shot = dev.screenshot(&c).await.unwrap();
    assert!(shot.capture_ms >= 250, "{}", shot.capture_ms);
    assert!(!shot.blocked);
    phone.set_faults(Faults {
        screencap_delay_ms: 3_000,
        ..Faults::default()
    });
    let t0 = Instant::now();
    let e = dev.screenshot(&c).await.unwrap_err();
    match &e {
        DeviceError::ScreenshotFailed { attempts, detail } => {
            assert_eq!(*attempts, 2);
            assert!(detail.contains("600 ms"), "{detail}");
        }
        other => panic!("expected ScreenshotFailed, got {other}"),
    }
    assert_eq!(e.code(), ErrorCode::ScreenshotFailed);
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn cancelling_a_slow_screenshot_returns_promptly() {
    let (sim, dev) = one_phone().await;
    sim.phone("virtual-phone-1").unwrap().set_faults(Faults {
        screencap_delay_ms: 4_000,
        ..Faults::default()
    });
    let c = CancellationToken::new();
    let c2 = c.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let t0 = Instant::now();
    let e = dev.screenshot(&c).await.unwrap_err();
    assert!(matches!(e, DeviceError::Cancelled), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(1));
    // A cancelled token sends nothing at all.
    let before = sim
        .phone("virtual-phone-1")
        .unwrap()
        .ground_truth()
        .shell_commands;
    assert!(matches!(
        dev.tap(pt(1, 1), &c).await.unwrap_err(),
        DeviceError::Cancelled
    ));
    let after = sim
        .phone("virtual-phone-1")
        .unwrap()
        .ground_truth()
        .shell_commands;
    assert_eq!(before, after);
}

#[tokio::test]
async fn rotation_swaps_geometry_and_frame() {
    let (sim, dev) = one_phone().await;
    sim.phone("virtual-phone-1").unwrap().set_faults(Faults {
        rotation: 1,
        ..Faults::default()
    });
    let c = CancellationToken::new();
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!(g.rotation, Rotation::R90);
    assert_eq!((g.width_px, g.height_px), (2400, 1080));
    let shot = dev.screenshot(&c).await.unwrap();
    assert_eq!(shot.image.dimensions(), (2400, 1080));
    let r = dev.readiness(&c).await.unwrap();
    let rot = r.checks.iter().find(|c| c.name == "rotation").unwrap();
    assert!(rot.ok && rot.detail.contains("90"), "{rot:?}");
}

#[tokio::test]
async fn inject_events_denied_is_typed_with_its_fix() {
    let (sim, dev) = one_phone().await;
    sim.phone("virtual-phone-1").unwrap().set_faults(Faults {
        inject_events_denied: true,
        ..Faults::default()
    });
    let c = CancellationToken::new();
    for r in [
        dev.tap(pt(5, 5), &c).await,
        dev.swipe(pt(5, 5), pt(5, 500), 100, &c).await,
        dev.key(KeyCode::Home, &c).await,
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, DeviceError::InjectEventsDenied), "{e}");
        assert_eq!(e.code(), ErrorCode::InjectEventsDenied);
        assert!(e.to_string().contains("USB debugging (Security settings)"));
    }
    let r = dev.readiness(&c).await.unwrap();
    let input = r.checks.iter().find(|c| c.name == "input").unwrap();
    assert!(!input.ok);
    assert!(input.fix.as_deref().unwrap().contains("Developer options"));
    assert!(!r.ready());
}

#[tokio::test]
async fn disconnect_is_device_lost_then_the_same_serial_comes_back() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let c = CancellationToken::new();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(1),
        reconnect_after_ms: Some(400),
        ..Faults::default()
    });
    dev.tap(pt(1, 2), &c).await.unwrap(); // the phone vanishes after this one
    let e = dev.tap(pt(3, 4), &c).await.unwrap_err();
    assert!(e.is_device_lost(), "{e}");
    assert_eq!(e.code(), ErrorCode::DeviceLost);
    match &e {
        DeviceError::DeviceLost {
            serial, command, ..
        } => {
            assert_eq!(serial, "virtual-phone-1");
            assert_eq!(command, "input tap 3 4");
        }
        other => panic!("{other}"),
    }
    let e = dev.screenshot(&c).await.unwrap_err();
    assert!(
        e.is_device_lost(),
        "screenshot does not retry a lost device: {e}"
    );
    dev.wait_until_back(Duration::from_secs(5), &c)
        .await
        .unwrap();
    dev.tap(pt(5, 6), &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.disconnects, 1);
    let pts: Vec<(i32, i32)> = gt.touches.iter().map(|t| (t.x, t.y)).collect();
    assert_eq!(
        pts,
        vec![(1, 2), (5, 6)],
        "the interrupted tap was not replayed"
    );
}

#[tokio::test]
async fn wait_for_device_is_bounded() {
    let (sim, dev) = one_phone().await;
    sim.phone("virtual-phone-1").unwrap().set_faults(Faults {
        disconnect_after_commands: Some(0),
        ..Faults::default()
    });
    let c = CancellationToken::new();
    let t0 = Instant::now();
    let e = dev
        .wait_until_back(Duration::from_millis(500), &c)
        .await
        .unwrap_err();
    assert!(e.is_device_lost(), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    c.cancel();
    assert!(matches!(
        dev.wait_until_back(Duration::from_secs(30), &c)
            .await
            .unwrap_err(),
        DeviceError::Cancelled
    ));
}

/// Reset to the compose screen and focus the body field.
async fn focus_mail_body(sim: &phoneagent_sim::SimServer, dev: &AdbDevice) {
    let phone = sim.phone(dev.serial()).unwrap();
    phone.reset("mail_compose").unwrap();
    let gt = phone.ground_truth();
    let body = gt
        .elements
        .iter()
        .find(|e| e.id.contains("body"))
        .unwrap_or_else(|| panic!("no body field in {:?}", gt.elements));
    let (x, y) = body.center();
    dev.tap(pt(x as u32, y as u32), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        phone.ground_truth().typed_text.focused.as_deref(),
        Some("mail.body")
    );
}

const UNICODE_TEXT: &str = "你好，世界 😀\n\"quoted\" 'single' 100% $HOME `x` a&b|c;d<e>f";

#[tokio::test]
async fn unicode_text_via_adb_keyboard_and_ime_restored_on_success() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    assert_eq!(phone.ground_truth().ime, LATIN_IME);
    let c = CancellationToken::new();
    dev.type_text(UNICODE_TEXT, &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(
        gt.typed_text.fields.get("mail.body").map(String::as_str),
        Some(UNICODE_TEXT)
    );
    assert_eq!(gt.ime, ADB_IME, "ADB Keyboard is on for the task");
    dev.type_text(" more", &c).await.unwrap();
    dev.restore_ime().await.unwrap();
    assert_eq!(phone.ground_truth().ime, LATIN_IME);
    dev.restore_ime().await.unwrap(); // idempotent
    assert_eq!(
        phone.ground_truth().typed_text.fields["mail.body"],
        format!("{UNICODE_TEXT} more")
    );
}

#[tokio::test]
async fn ime_restored_when_the_task_errors_and_drops_the_device() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    let c = CancellationToken::new();
    dev.type_text("hello", &c).await.unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    phone.set_faults(Faults {
        inject_events_denied: true,
        ..Faults::default()
    });
    // The task fails here and unwinds without calling restore_ime().
    let task = {
        let dev = dev.clone();
        async move {
            dev.tap(pt(1, 1), &CancellationToken::new()).await?;
            Ok::<(), DeviceError>(())
        }
    };
    assert!(matches!(task.await, Err(DeviceError::InjectEventsDenied)));
    drop(dev);
    assert!(phoneagent_device::wait_for_ime_restores(Duration::from_secs(5)).await);
    assert!(eventually(|| phone.ground_truth().ime == LATIN_IME).await);
}

#[tokio::test]
async fn ime_restored_on_cancel() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    let c = CancellationToken::new();
    dev.type_text("abc", &c).await.unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    phone.set_faults(Faults {
        screencap_delay_ms: 3_000,
        ..Faults::default()
    });
    let c2 = c.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let e = dev.screenshot(&c).await.unwrap_err();
    assert!(matches!(e, DeviceError::Cancelled));
    // Restored before the cancelled call returned, with the device still alive.
    assert_eq!(phone.ground_truth().ime, LATIN_IME);
}

#[tokio::test]
async fn ime_restored_after_device_loss_and_return() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    let c = CancellationToken::new();
    dev.type_text("abc", &c).await.unwrap();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(0),
        reconnect_after_ms: Some(300),
        ..Faults::default()
    });
    let e = dev.type_text("def", &c).await.unwrap_err();
    assert!(e.is_device_lost(), "{e}");
    // Restoring while the phone is away fails but keeps the guard armed.
    assert!(dev.restore_ime().await.unwrap_err().is_device_lost());
    dev.wait_until_back(Duration::from_secs(5), &c)
        .await
        .unwrap();
    dev.restore_ime().await.unwrap();
    assert_eq!(phone.ground_truth().ime, LATIN_IME);
}

#[tokio::test]
async fn ascii_fallback_escapes_every_shell_special_and_refuses_unicode() {
    let mut cfg = SimConfig::default();
    cfg.devices[0] = SimDeviceConfig {
        adb_keyboard: false,
        ..SimDeviceConfig::default()
    };
    let (sim, server) = start(cfg).await;
    let dev = AdbDevice::open(server, "virtual-phone-1", fast_opts())
        .await
        .unwrap();
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    let c = CancellationToken::new();
    assert!(!dev.adb_keyboard_installed(&c).await.unwrap());
    let text = "it's a \"b\" & c|d;e<f>g(h)$i`j\\k*l~m#n 100%sure 50% off\nline2";
    dev.type_text(text, &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.typed_text.fields["mail.body"], text);
    assert_eq!(
        gt.ime, LATIN_IME,
        "the IME is never touched without ADB Keyboard"
    );
    let e = dev.type_text("你好", &c).await.unwrap_err();
    assert!(matches!(e, DeviceError::AdbKeyboardMissing), "{e}");
    assert_eq!(e.code(), ErrorCode::AdbKeyboardMissing);
    let r = dev.readiness(&c).await.unwrap();
    let kb = r.checks.iter().find(|c| c.name == "adb_keyboard").unwrap();
    assert!(!kb.ok && kb.fix.as_deref().unwrap().contains("ASCII"));
    assert!(r.ready(), "missing ADB Keyboard only limits text");
}

#[tokio::test]
async fn readiness_of_a_healthy_phone() {
    let (_sim, dev) = one_phone().await;
    let r = dev.readiness(&CancellationToken::new()).await.unwrap();
    let names: Vec<&str> = r.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "state",
            "screen_size",
            "density",
            "rotation",
            "adb_keyboard",
            "screenshot",
            "input",
            "capture",
            "input_path"
        ]
    );
    assert!(
        r.checks
            .iter()
            .filter(|c| c.name != "capture" && c.name != "input_path")
            .all(|c| c.ok && c.fix.is_none()),
        "{:?}",
        r.checks
    );
    // The capture/input paths in use, with how to get the faster one (SPEC D8, D9).
    let cap = r.checks.iter().find(|c| c.name == "capture").unwrap();
    assert_eq!(cap.detail, "png");
    assert!(cap.fix.as_deref().unwrap().contains("SCRCPY_SERVER_PATH"));
    let input = r.checks.iter().find(|c| c.name == "input_path").unwrap();
    assert_eq!(input.detail, "shell input");
    assert!(r.ready());
    assert_eq!(r.checks[1].detail, "1080x2400");
    assert_eq!(r.checks[2].detail, "420 dpi");
}

#[tokio::test]
async fn readiness_of_an_unauthorized_phone_names_the_fix() {
    let (sim, server) = start(SimConfig::with_devices(2)).await;
    let dev = AdbDevice::open(server, "virtual-phone-2", fast_opts())
        .await
        .unwrap();
    // The phone drops off the list mid-session.
    sim.phone("virtual-phone-2").unwrap().set_faults(Faults {
        disconnect_after_commands: Some(0),
        ..Faults::default()
    });
    let r = dev.readiness(&CancellationToken::new()).await.unwrap();
    assert_eq!(r.checks.len(), 1);
    assert!(!r.checks[0].ok);
    assert!(r.checks[0].fix.as_deref().unwrap().contains("connect"));
}

/// Issue #12 item 3: geometry is read once (three commands), not before every screenshot;
/// a frame whose size flips (a rotation) makes it read again, so rotation is still seen.
#[tokio::test]
async fn geometry_is_cached_until_the_frame_size_changes() {
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let c = CancellationToken::new();
    let services = || phone.ground_truth().shell_commands;
    dev.screenshot(&c).await.unwrap();
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!(g.rotation, Rotation::R0);
    let before = services();
    for _ in 0..3 {
        dev.screenshot(&c).await.unwrap();
        assert_eq!(dev.geometry(&c).await.unwrap(), g);
    }
    assert_eq!(
        services() - before,
        3,
        "three screenshots and no geometry command"
    );
    phone.set_faults(Faults {
        rotation: 1,
        ..Faults::default()
    });
    let shot = dev.screenshot(&c).await.unwrap();
    assert_eq!(shot.image.dimensions(), (2400, 1080));
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!(g.rotation, Rotation::R90);
    assert_eq!((g.width_px, g.height_px), (2400, 1080));
}

/// The default settle: `Fixed` takes no frame; `UntilStill` on a still screen ends with a
/// frame of the current screen (the verification frame), bounded by `max`.
#[tokio::test]
async fn default_settle_until_still_returns_the_settled_frame() {
    use phoneagent_device::Settle;
    let (sim, dev) = one_phone().await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let c = CancellationToken::new();
    let before = phone.ground_truth().shell_commands;
    let none = dev
        .settle(Settle::Fixed(std::time::Duration::ZERO), &c)
        .await
        .unwrap();
    assert!(none.is_none());
    assert_eq!(phone.ground_truth().shell_commands, before);
    let shot = dev
        .settle(
            Settle::UntilStill {
                quiet: std::time::Duration::from_millis(20),
                max: std::time::Duration::from_secs(5),
                poll: std::time::Duration::from_millis(10),
            },
            &c,
        )
        .await
        .unwrap()
        .expect("a frame");
    assert_eq!(&shot.png[..], &phone.screenshot_png().unwrap()[..]);
    assert!(phone.ground_truth().shell_commands - before >= 2);
    c.cancel();
    let e = dev
        .settle(Settle::Fixed(std::time::Duration::from_secs(5)), &c)
        .await
        .unwrap_err();
    assert!(
        matches!(e, phoneagent_device::DeviceError::Cancelled),
        "{e}"
    );
}

/// D4 after SIGKILL: the journal entry a run holds (locked) is left alone by another open of
/// the same phone — a second front end must not pull the keyboard from under a live run — and
/// an entry whose process died (unlocked: the OS drops a dead process's locks; written here as
/// a killed CLI leaves it) is put back on the next open and cleared. The CLI test
/// `keyboard_left_by_a_killed_run_is_put_back_by_the_next_command` does it with a real kill.
#[tokio::test]
async fn ime_journal_leaves_a_live_run_alone_and_puts_back_what_a_dead_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let opts = AdbDeviceOptions {
        ime_journal: Some(dir.path().to_path_buf()),
        ..fast_opts()
    };
    let (sim, server) = start(SimConfig::default()).await;
    let dev = AdbDevice::open(server.clone(), "virtual-phone-1", opts.clone())
        .await
        .unwrap();
    let phone = sim.phone("virtual-phone-1").unwrap();
    focus_mail_body(&sim, &dev).await;
    dev.type_text("abc", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    let entry = phoneagent_device::ImeJournal::new(dir.path(), "virtual-phone-1");
    assert_eq!(entry.read(), Some(Some(LATIN_IME.to_string())));
    // A second open while the run is live (the app's mirror, another CLI).
    let other = AdbDevice::open(server.clone(), "virtual-phone-1", opts.clone())
        .await
        .unwrap();
    assert_eq!(
        phone.ground_truth().ime,
        ADB_IME,
        "a live run keeps its keyboard"
    );
    drop(other);
    // The run ends normally: the entry goes with the restore.
    dev.restore_ime().await.unwrap();
    assert_eq!(entry.read(), None);
    assert_eq!(phone.ground_truth().ime, LATIN_IME);
    // A dead run's entry: ADB Keyboard on, the journal unlocked.
    dev.type_text("d", &CancellationToken::new()).await.unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    drop(dev);
    assert!(phoneagent_device::wait_for_ime_restores(Duration::from_secs(5)).await);
    assert_eq!(entry.read(), None, "the drop restore clears it too");
    server
        .shell(
            "virtual-phone-1",
            &format!("ime set {ADB_IME}"),
            ShellProtocol::V2,
        )
        .await
        .unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    std::fs::write(entry.path(), format!("{LATIN_IME}\n")).unwrap();
    let _again = AdbDevice::open(server, "virtual-phone-1", opts)
        .await
        .unwrap();
    assert_eq!(phone.ground_truth().ime, LATIN_IME, "put back on open");
    assert_eq!(entry.read(), None, "the entry is cleared");
}
