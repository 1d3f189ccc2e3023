//! Contract tests of the live stream and fast input (SPEC D8, D9) against the virtual phone,
//! which runs scrcpy's server protocol and `screenrecord` for real (H.264 from OpenH264).
//! `scrcpy-server` here is a stand-in file: the virtual phone emulates the server for
//! whatever jar is pushed, at version `phoneagent_sim::SCRCPY_SERVER_VERSION`.

use crate::{eventually, fast_opts, start};
use phoneagent_device::stream::{CapturePath, InputPath};
use phoneagent_device::{AdbDevice, AdbDeviceOptions, Device, KeyCode, ScreenshotMode};
use phoneagent_protocol::DevicePoint;
use phoneagent_sim::{Faults, LATIN_IME, SCRCPY_SERVER_VERSION, SimConfig, SimPhoneHandle};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn jar() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("scrcpy-server");
    std::fs::write(
        &p,
        b"PK\x03\x04 stand-in scrcpy-server for the virtual phone",
    )
    .unwrap();
    (d, p)
}

fn opts(mode: ScreenshotMode, jar: Option<&std::path::Path>) -> AdbDeviceOptions {
    AdbDeviceOptions {
        screenshot_mode: mode,
        scrcpy_server: jar.map(std::path::Path::to_path_buf),
        ..fast_opts()
    }
}

/// Mean absolute difference per colour channel between a stream frame and the phone's PNG.
fn diff_to_screen(img: &image::RgbaImage, phone: &SimPhoneHandle) -> f64 {
    let shot = image::load_from_memory(&phone.screenshot_png().unwrap())
        .unwrap()
        .into_rgba8();
    assert_eq!(img.dimensions(), shot.dimensions());
    let (a, b) = (img.as_raw(), shot.as_raw());
    let sum: u64 = a
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| i % 4 != 3)
        .map(|(_, (x, y))| u64::from(x.abs_diff(*y)))
        .sum();
    sum as f64 / (a.len() as f64 * 0.75)
}

fn center(phone: &SimPhoneHandle, id: &str) -> DevicePoint {
    let (x, y) = phone.ground_truth().element(id).unwrap().center();
    DevicePoint {
        x: x as u32,
        y: y as u32,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrcpy_stream_frames_match_the_screen_and_control_input_changes_ground_truth() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, jar) = jar();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        opts(ScreenshotMode::Scrcpy, Some(&jar)),
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    let shot = dev.screenshot(&c).await.unwrap();
    assert_eq!(shot.image.dimensions(), (1080, 2400));
    let d = diff_to_screen(&shot.image, &phone);
    assert!(d < 6.0, "stream frame differs from screencap by {d:.2}");
    let (capture, input, _) = dev.stream_paths().await;
    assert_eq!(capture, CapturePath::Scrcpy(SCRCPY_SERVER_VERSION.into()));
    assert_eq!(input, InputPath::ScrcpyControl);

    // Tap → the shop opens; the next screenshot is newer than the tap and shows it.
    dev.tap(center(&phone, "home.app.shop"), &c).await.unwrap();
    assert!(eventually(|| phone.ground_truth().current_screen == "shop").await);
    assert_eq!(phone.ground_truth().touches.last().unwrap().kind, "tap");
    let shot = dev.screenshot(&c).await.unwrap();
    let d = diff_to_screen(&shot.image, &phone);
    assert!(d < 6.0, "the frame after the tap is the shop ({d:.2})");

    // Text by clipboard paste: CJK + emoji, no IME switch, no shell command.
    phone.reset("search").unwrap();
    dev.tap(center(&phone, "search.query"), &c).await.unwrap();
    let text = "蓝牙耳机 🎧";
    dev.type_text(text, &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.typed_text.fields["search.query"], text);
    assert_eq!(gt.ime, LATIN_IME, "the IME was never switched");
    dev.key(KeyCode::Enter, &c).await.unwrap();
    assert!(
        eventually(|| phone.ground_truth().search.submitted_query.as_deref() == Some(text)).await
    );
    assert_eq!(
        phone.ground_truth().shell_commands,
        0,
        "tap, paste and key since the reset started no shell command"
    );

    // Swipe and long press arrive as such.
    phone.reset("home").unwrap();
    dev.swipe(
        DevicePoint { x: 540, y: 1800 },
        DevicePoint { x: 540, y: 600 },
        120,
        &c,
    )
    .await
    .unwrap();
    assert!(
        eventually(|| phone
            .ground_truth()
            .touches
            .last()
            .is_some_and(|t| t.kind == "swipe"))
        .await
    );
    dev.long_press(DevicePoint { x: 300, y: 300 }, 600, &c)
        .await
        .unwrap();
    assert!(
        eventually(|| phone
            .ground_truth()
            .touches
            .last()
            .is_some_and(|t| t.kind == "long_press"))
        .await
    );
    assert_eq!(
        phone.ground_truth().shell_commands,
        0,
        "no `input` process was started for the swipe and long press"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_mid_stream_gives_frames_of_the_new_size() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, jar) = jar();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        opts(ScreenshotMode::Scrcpy, Some(&jar)),
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    assert_eq!(
        dev.screenshot(&c).await.unwrap().image.dimensions(),
        (1080, 2400)
    );
    phone.set_faults(Faults {
        rotation: 1,
        ..Faults::default()
    });
    // With no action in between, a screenshot is the newest decoded frame (no waiting): poll.
    let mut size = (0, 0);
    for _ in 0..50 {
        size = dev.screenshot(&c).await.unwrap().image.dimensions();
        if size == (2400, 1080) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The geometry follows the new frame size (read again when it changes).
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!((g.width_px, g.height_px), (2400, 1080), "{g:?}");
    assert_eq!(size, (2400, 1080));
    assert!(dev.stream().await.is_some(), "the same stream goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_version_mismatch_is_named_and_capture_falls_back_to_raw() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, jar) = jar();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        AdbDeviceOptions {
            scrcpy_version: Some("2.7".into()),
            ..opts(ScreenshotMode::Scrcpy, Some(&jar))
        },
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    let shot = dev.screenshot(&c).await.unwrap();
    assert!(
        diff_to_screen(&shot.image, &phone) < 0.01,
        "raw screencap is exact"
    );
    let (capture, input, note) = dev.stream_paths().await;
    assert_eq!(capture, CapturePath::Raw);
    assert_eq!(input, InputPath::ShellInput);
    let note = note.unwrap();
    assert!(
        note.contains(&format!("version {SCRCPY_SERVER_VERSION}")) && note.contains("2.7"),
        "{note}"
    );
    // Input goes through `input` and still works.
    dev.tap(center(&phone, "home.app.shop"), &c).await.unwrap();
    assert_eq!(phone.ground_truth().current_screen, "shop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_loss_mid_stream_is_reported_and_the_run_goes_on_with_raw() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, jar) = jar();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        opts(ScreenshotMode::Scrcpy, Some(&jar)),
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    dev.screenshot(&c).await.unwrap();
    let session = dev.stream().await.unwrap();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(0),
        reconnect_after_ms: Some(400),
        ..Faults::default()
    });
    // The stream dies with the device.
    assert!(
        eventually(|| !session.is_alive()).await,
        "the stream noticed"
    );
    // An input while the device is away is lost (never replayed on another path).
    let r = dev.tap(DevicePoint { x: 10, y: 10 }, &c).await;
    assert!(r.as_ref().is_err_and(|e| e.is_device_lost()), "{r:?}");
    dev.wait_until_back(Duration::from_secs(5), &c)
        .await
        .unwrap();
    // Back: screenshots go on through raw screencap, and taps through `input`.
    let shot = dev.screenshot(&c).await.unwrap();
    assert!(diff_to_screen(&shot.image, &phone) < 0.01);
    let (capture, _, note) = dev.stream_paths().await;
    assert_eq!(capture, CapturePath::Raw);
    assert!(note.unwrap().contains("died"));
    dev.tap(center(&phone, "home.app.shop"), &c).await.unwrap();
    assert_eq!(phone.ground_truth().current_screen, "shop");
    assert_eq!(
        phone.ground_truth().touches.len(),
        1,
        "the tap during the outage was not replayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenrecord_stream_restarts_after_its_time_limit() {
    let (sim, server) = start(SimConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let dev = AdbDevice::open(
        server,
        "virtual-phone-1",
        AdbDeviceOptions {
            screenrecord_time_limit: Duration::from_secs(1),
            ..opts(ScreenshotMode::Screenrecord, None)
        },
    )
    .await
    .unwrap();
    let c = CancellationToken::new();
    let shot = dev.screenshot(&c).await.unwrap();
    assert!(diff_to_screen(&shot.image, &phone) < 6.0);
    let session = dev.stream().await.unwrap();
    assert_eq!(session.capture_path(), CapturePath::Screenrecord);
    // Past two time limits: the recording has been restarted.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(session.is_alive(), "{:?}", session.dead_reason());
    dev.tap(center(&phone, "home.app.shop"), &c).await.unwrap();
    assert_eq!(phone.ground_truth().current_screen, "shop");
    let mut d = f64::MAX;
    for _ in 0..20 {
        let shot = dev.screenshot(&c).await.unwrap();
        d = diff_to_screen(&shot.image, &phone);
        if d < 6.0 {
            break;
        }
    }
    assert!(d < 6.0, "the restarted recording shows the shop ({d:.2})");
    let (capture, input, _) = dev.stream_paths().await;
    assert_eq!(capture, CapturePath::Screenrecord);
    assert_eq!(input, InputPath::ShellInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_without_scrcpy_server_uses_screenrecord_and_says_how_to_get_scrcpy() {
    if std::env::var_os("SCRCPY_SERVER_PATH").is_some()
        || phoneagent_device::stream::locate::find_scrcpy_server(None).is_some()
    {
        eprintln!("SKIPPED: a scrcpy-server is installed on this machine");
        return;
    }
    let (_sim, server) = start(SimConfig::default()).await;
    let dev = AdbDevice::open(server, "virtual-phone-1", opts(ScreenshotMode::Auto, None))
        .await
        .unwrap();
    let c = CancellationToken::new();
    let r = dev.readiness(&c).await.unwrap();
    let capture = r.checks.iter().find(|c| c.name == "capture").unwrap();
    assert_eq!(capture.detail, "screenrecord");
    assert!(
        capture
            .fix
            .as_deref()
            .unwrap()
            .contains("SCRCPY_SERVER_PATH"),
        "{capture:?}"
    );
    let input = r.checks.iter().find(|c| c.name == "input_path").unwrap();
    assert_eq!(input.detail, "shell input");
}
