//! Direct mode (no adb server, SPEC D1): `AdbDevice` over the device-side ADB protocol to the
//! virtual phone's adbd face on loopback TCP — the same message layer a phone speaks over USB.
//! The sim verifies the AUTH signature against the keys it trusts.

use crate::{eventually, fast_opts};
use phoneagent_device::direct::key::{AdbKey, KeySource};
use phoneagent_device::{
    AdbDevice, ConnectPlan, Device, DeviceError, DeviceState, DirectLink, DirectOptions,
    DirectTarget, KeyCode, Route, ShellProtocol, Transport,
};
use phoneagent_protocol::{DevicePoint, ErrorCode};
use phoneagent_sim::{AdbdConfig, AdbdHandle, Faults, KeyPrompt, LATIN_IME, SimConfig, SimServer};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const ADB_IME: &str = "com.android.adbkeyboard/.AdbIME";

fn pt(x: u32, y: u32) -> DevicePoint {
    DevicePoint { x, y }
}

/// A fresh host key in its own temp dir (kept alive by the returned guard).
fn new_key() -> (tempfile::TempDir, AdbKey) {
    let dir = tempfile::tempdir().unwrap();
    let k = AdbKey::load_or_create(&dir.path().join("phoneagent").join("adbkey"), None).unwrap();
    assert_eq!(k.source(), KeySource::Created);
    (dir, k)
}

fn opts_fast() -> DirectOptions {
    DirectOptions {
        connect_timeout: Duration::from_secs(3),
        auth_timeout: Duration::from_millis(400),
    }
}

async fn sim_with_adbd(cfg: AdbdConfig) -> (SimServer, AdbdHandle) {
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let adbd = sim.start_adbd(cfg, 0).await.unwrap();
    (sim, adbd)
}

fn link_to(adbd: &AdbdHandle, key: &AdbKey) -> DirectLink {
    DirectLink::new(
        DirectTarget::Tcp {
            host: "127.0.0.1".into(),
            port: adbd.port(),
        },
        key.clone(),
        opts_fast(),
    )
}

#[tokio::test]
async fn direct_tcp_drives_the_phone_screenshot_gestures_text_and_ime_restore() {
    // A small max payload: every PNG crosses in many WRTE messages with flow control.
    let (sim, adbd) = sim_with_adbd(AdbdConfig {
        max_payload: 16 * 1024,
        ..AdbdConfig::default()
    })
    .await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, key) = new_key();
    let dev = AdbDevice::open_direct(link_to(&adbd, &key), fast_opts())
        .await
        .unwrap();
    // First connection: the phone showed the prompt once and now trusts our key.
    assert_eq!(adbd.prompts_shown(), 1);
    assert_eq!(adbd.trusted_keys(), vec![key.android_public_key()]);
    assert_eq!(dev.serial(), format!("127.0.0.1:{}", adbd.port()));
    assert_eq!(dev.shell_protocol(), ShellProtocol::V2);
    assert!(dev.server().is_none());
    assert!(dev.link().is_direct());
    assert_eq!(
        dev.link().describe(),
        format!("direct TCP 127.0.0.1:{}", adbd.port())
    );
    let c = CancellationToken::new();

    // Screenshot: the phone's own PNG, byte for byte, through ~dozens of WRTE messages.
    let shot = dev.screenshot(&c).await.unwrap();
    assert_eq!(shot.image.dimensions(), (1080, 2400));
    assert!(!shot.blocked);
    assert_eq!(
        shot.png.as_ref(),
        phone.screenshot_png().unwrap().as_slice()
    );
    assert!(
        shot.png.len() > 16 * 1024,
        "several WRTE chunks were needed"
    );

    // Shell v2: stdout, stderr and exit status.
    let out = dev.shell("frobnicate", &c).await.unwrap();
    assert_eq!(out.exit_code, Some(127));
    assert!(out.stderr_str().contains("inaccessible or not found"));

    // Gestures and keys.
    dev.tap(pt(10, 20), &c).await.unwrap();
    dev.swipe(pt(500, 1800), pt(500, 600), 250, &c)
        .await
        .unwrap();
    dev.key(KeyCode::Back, &c).await.unwrap();
    let gt = phone.ground_truth();
    let touches: Vec<(i32, i32)> = gt.touches.iter().map(|t| (t.x, t.y)).collect();
    assert_eq!(touches, vec![(10, 20), (500, 1800)]);
    assert_eq!(gt.keys.last().map(String::as_str), Some("BACK"));

    // Geometry.
    let g = dev.geometry(&c).await.unwrap();
    assert_eq!(
        (g.width_px, g.height_px, g.density_dpi),
        (1080, 2400, Some(420))
    );

    // Text: ADB Keyboard broadcast (Unicode), then the user's IME comes back.
    phone.reset("mail_compose").unwrap();
    let body = phone
        .ground_truth()
        .elements
        .into_iter()
        .find(|e| e.id == "mail.body")
        .unwrap();
    let (x, y) = body.center();
    dev.tap(pt(x as u32, y as u32), &c).await.unwrap();
    let text = "你好 direct 😀 100% \"q\"";
    dev.type_text(text, &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.typed_text.fields["mail.body"], text);
    assert_eq!(gt.ime, ADB_IME);
    dev.restore_ime().await.unwrap();
    assert_eq!(phone.ground_truth().ime, LATIN_IME);

    // Readiness names the transport.
    let r = dev.readiness(&c).await.unwrap();
    assert!(r.ready(), "{:?}", r.checks);
    assert!(
        r.checks[0].detail.contains("direct TCP"),
        "{:?}",
        r.checks[0]
    );
    // One connection served every command (no reconnect per command); readiness's state check
    // is a fresh handshake on purpose (an idle connection cannot tell the phone is gone).
    assert_eq!(adbd.authorized_connections(), 2);
}

#[tokio::test]
async fn known_key_connects_silently_unknown_key_waits_for_the_prompt_and_is_unauthorized() {
    let (_d1, key1) = new_key();
    let (_d2, key2) = new_key();
    let (_sim, adbd) = sim_with_adbd(AdbdConfig {
        trusted_keys: vec![key1.android_public_key()],
        on_unknown_key: KeyPrompt::Refuse,
        ..AdbdConfig::default()
    })
    .await;
    // A key the phone trusts: the signature is verified, no prompt.
    let dev = AdbDevice::open_direct(link_to(&adbd, &key1), fast_opts())
        .await
        .unwrap();
    dev.shell("echo ok", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(adbd.prompts_shown(), 0);

    // An unknown key: its signature is rejected, the public key is offered, the user does not
    // allow it within the auth timeout → Unauthorized with the fix.
    let e = AdbDevice::open_direct(link_to(&adbd, &key2), fast_opts())
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::Unauthorized { .. }), "{e}");
    assert_eq!(e.code(), ErrorCode::DeviceUnauthorized);
    assert!(e.to_string().contains("Allow USB debugging"), "{e}");
    assert_eq!(adbd.prompts_shown(), 1);
    let info = link_to(&adbd, &key2).device_info().await.unwrap();
    assert_eq!(info.state, DeviceState::Unauthorized);
    assert!(info.fix.unwrap().contains("Allow USB debugging"));

    // The user taps Allow on the next prompt.
    adbd.set_prompt(KeyPrompt::Accept);
    let info = link_to(&adbd, &key2).device_info().await.unwrap();
    assert_eq!(info.state, DeviceState::Device);
    assert_eq!(info.model.as_deref(), Some("PhoneAgent_Virtual"));
    assert_eq!(info.transport, Transport::Tcp);
    assert_eq!(adbd.trusted_keys().len(), 2);

    // Authorizations revoked: key1's valid signature no longer opens the phone.
    adbd.revoke_all();
    adbd.set_prompt(KeyPrompt::Refuse);
    let e = link_to(&adbd, &key1).device_info().await.unwrap();
    assert_eq!(e.state, DeviceState::Unauthorized);
}

#[tokio::test]
async fn phone_vanishing_mid_task_is_device_lost_then_it_comes_back() {
    let (sim, adbd) = sim_with_adbd(AdbdConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, key) = new_key();
    let dev = AdbDevice::open_direct(link_to(&adbd, &key), fast_opts())
        .await
        .unwrap();
    let c = CancellationToken::new();
    phone.set_faults(Faults {
        disconnect_after_commands: Some(1),
        reconnect_after_ms: Some(400),
        ..Faults::default()
    });
    dev.tap(pt(1, 2), &c).await.unwrap(); // the phone vanishes after this one
    let e = dev.tap(pt(3, 4), &c).await.unwrap_err();
    assert!(e.is_device_lost(), "{e}");
    match &e {
        DeviceError::DeviceLost {
            serial, command, ..
        } => {
            assert_eq!(serial, dev.serial());
            assert_eq!(command, "input tap 3 4");
        }
        other => panic!("{other}"),
    }
    let e = dev.screenshot(&c).await.unwrap_err();
    assert!(e.is_device_lost(), "{e}");
    dev.wait_until_back(Duration::from_secs(5), &c)
        .await
        .unwrap();
    dev.tap(pt(5, 6), &c).await.unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.disconnects, 1);
    let pts: Vec<(i32, i32)> = gt.touches.iter().map(|t| (t.x, t.y)).collect();
    assert_eq!(pts, vec![(1, 2), (5, 6)]);
    // Bounded wait when it does not come back.
    phone.set_faults(Faults {
        disconnect_after_commands: Some(0),
        ..Faults::default()
    });
    let e = dev
        .wait_until_back(Duration::from_millis(300), &c)
        .await
        .unwrap_err();
    assert!(e.is_device_lost(), "{e}");
}

#[tokio::test]
async fn dropped_device_restores_the_ime_over_its_own_connection() {
    let (sim, adbd) = sim_with_adbd(AdbdConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    phone.reset("search").unwrap();
    let (_d, key) = new_key();
    let dev = AdbDevice::open_direct(link_to(&adbd, &key), fast_opts())
        .await
        .unwrap();
    let c = CancellationToken::new();
    dev.type_text("搜索", &c).await.unwrap();
    assert_eq!(phone.ground_truth().ime, ADB_IME);
    drop(dev); // the guard restores on its own thread and runtime, with a fresh connection
    assert!(phoneagent_device::wait_for_ime_restores(Duration::from_secs(10)).await);
    assert!(eventually(|| phone.ground_truth().ime == LATIN_IME).await);
    assert_eq!(adbd.authorized_connections(), 2);
}

#[tokio::test]
async fn refused_service_and_unreachable_phone_are_typed() {
    let (_sim, adbd) = sim_with_adbd(AdbdConfig::default()).await;
    let (_d, key) = new_key();
    let link = link_to(&adbd, &key);
    // adbd closes an OPEN it does not serve (interactive shell): a command error, and the
    // connection stays usable.
    let e = link.shell("", ShellProtocol::V2).await.unwrap_err();
    assert!(matches!(e, DeviceError::CommandFailed { .. }), "{e}");
    assert_eq!(
        link.shell("echo again", ShellProtocol::V2)
            .await
            .unwrap()
            .stdout_str(),
        "again\n"
    );
    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = DirectTarget::parse_tcp(&format!("127.0.0.1:{port}")).unwrap();
    let e = AdbDevice::open_direct(DirectLink::new(target, key, opts_fast()), fast_opts())
        .await
        .unwrap_err();
    assert!(matches!(e, DeviceError::DirectUnreachable { .. }), "{e}");
    assert_eq!(e.code(), ErrorCode::NoDevice);
    assert!(e.to_string().contains("adb tcpip 5555"), "{e}");
}

#[tokio::test]
async fn connect_plan_picks_direct_server_or_usb() {
    let (sim, adbd) = sim_with_adbd(AdbdConfig::default()).await;
    // --direct wins.
    let plan = ConnectPlan {
        direct_tcp: Some(format!("127.0.0.1:{}", adbd.port())),
        ..ConnectPlan::default()
    };
    match plan.resolve().await.unwrap() {
        Route::Direct(t) => assert_eq!(t.serial(), format!("127.0.0.1:{}", adbd.port())),
        r => panic!("{r:?}"),
    }
    // An adb server that answers is used.
    let plan = ConnectPlan {
        adb: Some(format!("127.0.0.1:{}", sim.port())),
        ..ConnectPlan::default()
    };
    assert!(matches!(plan.resolve().await.unwrap(), Route::Server(_)));
    let dev = AdbDevice::connect(&plan, None, fast_opts()).await.unwrap();
    assert_eq!(dev.serial(), "virtual-phone-1");
    assert!(!dev.link().is_direct());
    // No adb server: USB directly (this machine has no phone on USB → NoDevice with its fix).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let plan = ConnectPlan {
        adb: Some(format!("127.0.0.1:{closed}")),
        usb_fallback: true,
        ..ConnectPlan::default()
    };
    if phoneagent_device::direct::USB_SUPPORTED {
        assert!(matches!(plan.resolve().await.unwrap(), Route::Usb(_)));
        if phoneagent_device::direct::usb_devices()
            .await
            .unwrap()
            .is_empty()
        {
            let e = AdbDevice::connect(&plan, None, fast_opts())
                .await
                .unwrap_err();
            assert!(matches!(e, DeviceError::NoDevice), "{e}");
            assert!(e.to_string().contains("USB debugging"), "{e}");
        }
    }
    // Without the fallback, the server's own error (with the --direct hint).
    let plan = ConnectPlan {
        usb_fallback: false,
        ..plan
    };
    let e = plan.resolve().await.unwrap_err();
    assert!(matches!(e, DeviceError::AdbServerUnreachable { .. }), "{e}");
    assert!(e.to_string().contains("--direct"), "{e}");
}

#[tokio::test]
async fn a_cancelled_command_poisons_only_its_connection() {
    let (sim, adbd) = sim_with_adbd(AdbdConfig::default()).await;
    let phone = sim.phone("virtual-phone-1").unwrap();
    let (_d, key) = new_key();
    let dev = AdbDevice::open_direct(link_to(&adbd, &key), fast_opts())
        .await
        .unwrap();
    phone.set_faults(Faults {
        screencap_delay_ms: 3000,
        ..Faults::default()
    });
    let c = CancellationToken::new();
    let c2 = c.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        c2.cancel();
    });
    let t0 = std::time::Instant::now();
    let e = dev.screenshot(&c).await.unwrap_err();
    assert!(matches!(e, DeviceError::Cancelled), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    phone.set_faults(Faults::default());
    // The half-read stream is not reused: the next command runs on a new connection.
    let before = adbd.authorized_connections();
    let out = dev
        .shell("echo fresh", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.stdout_str(), "fresh\n");
    assert_eq!(adbd.authorized_connections(), before + 1);
}
