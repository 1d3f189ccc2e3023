//! The ADB server protocol over raw TCP.

use phoneagent_sim::{SimConfig, SimDeviceConfig, SimDeviceState};
use tokio::io::AsyncReadExt;

use crate::common::*;

#[tokio::test]
async fn host_services_answer_like_an_adb_server() {
    let (sim, _) = start().await;
    let p = sim.port();
    assert_eq!(host_query(p, "host:version").await.unwrap(), "0029");
    assert_eq!(
        host_query(p, "host:devices").await.unwrap(),
        "virtual-phone-1\tdevice\n"
    );
    let long = host_query(p, "host:devices-l").await.unwrap();
    assert!(long.starts_with("virtual-phone-1 "), "{long}");
    assert!(
        long.contains(" device product:sim model:PhoneAgent_Virtual device:sim transport_id:1"),
        "{long}"
    );
    let feats = host_query(p, "host-serial:virtual-phone-1:features")
        .await
        .unwrap();
    assert!(feats.split(',').any(|f| f == "shell_v2"), "{feats}");
    assert_eq!(host_query(p, "host:features").await.unwrap(), feats);
    assert_eq!(
        host_query(p, "host-serial:virtual-phone-1:get-state")
            .await
            .unwrap(),
        "device"
    );
    assert_eq!(
        host_query(p, "host:get-serialno").await.unwrap(),
        "virtual-phone-1"
    );
    let err = host_query(p, "host:frobnicate").await.unwrap_err();
    assert!(err.contains("frobnicate"), "{err}");
    let err = host_query(p, "host-serial:nope:features")
        .await
        .unwrap_err();
    assert_eq!(err, "device 'nope' not found");
    // host:kill is acknowledged but ignored unless allowed.
    let mut s = connect(p).await;
    send(&mut s, "host:kill").await;
    status(&mut s).await.unwrap();
    assert_eq!(host_query(p, "host:version").await.unwrap(), "0029");
}

#[tokio::test]
async fn tport_returns_the_transport_id_and_shell_v2_reports_exit_codes() {
    let (sim, _) = start().await;
    let p = sim.port();
    let mut s = connect(p).await;
    send(&mut s, "host:tport:serial:virtual-phone-1").await;
    status(&mut s).await.unwrap();
    let mut id = [0u8; 8];
    s.read_exact(&mut id).await.unwrap();
    assert_eq!(u64::from_le_bytes(id), 1);
    send(&mut s, "shell,v2,raw:echo 'hello world'").await;
    status(&mut s).await.unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    // stdout packet, exit packet.
    assert_eq!(all[0], 1);
    let n = u32::from_le_bytes(all[1..5].try_into().unwrap()) as usize;
    assert_eq!(&all[5..5 + n], b"hello world\n");
    assert_eq!(&all[5 + n..], &[3, 1, 0, 0, 0, 0]);

    let r = shell_v2(p, SERIAL, "definitely-not-a-command --x")
        .await
        .unwrap();
    assert_eq!(r.code, Some(127));
    assert!(
        r.err()
            .contains("definitely-not-a-command: inaccessible or not found"),
        "{}",
        r.err()
    );
    let r = shell_v2(p, SERIAL, "false || echo fallback && echo chained")
        .await
        .unwrap();
    assert_eq!(r.out(), "fallback\nchained\n");
}

#[tokio::test]
async fn shell_v1_and_exec_stream_raw_bytes() {
    let (sim, _) = start().await;
    let p = sim.port();
    let out = raw_service(p, SERIAL, "shell:getprop ro.product.model")
        .await
        .unwrap();
    assert_eq!(out, b"PhoneAgent_Virtual\n");
    let png = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    let img = decode_png(&png);
    assert_eq!(img.dimensions(), (1080, 2400));
    let raw = raw_service(p, SERIAL, "exec:screencap").await.unwrap();
    let w = u32::from_le_bytes(raw[0..4].try_into().unwrap());
    let h = u32::from_le_bytes(raw[4..8].try_into().unwrap());
    let fmt = u32::from_le_bytes(raw[8..12].try_into().unwrap());
    assert_eq!((w, h, fmt), (1080, 2400, 1));
    assert_eq!(raw.len(), 16 + 1080 * 2400 * 4);
    // The raw pixels are the PNG's pixels.
    assert_eq!(&raw[16..], img.as_raw().as_slice());
}

#[tokio::test]
async fn device_queries_the_device_layer_uses() {
    let (sim, _) = start().await;
    let p = sim.port();
    assert_eq!(sh(p, "wm size").await, "Physical size: 1080x2400\n");
    assert_eq!(sh(p, "wm density").await, "Physical density: 420\n");
    sh(p, "wm size 720x1600").await;
    assert_eq!(
        sh(p, "wm size").await,
        "Physical size: 1080x2400\nOverride size: 720x1600\n"
    );
    let png = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    assert_eq!(
        decode_png(&png).dimensions(),
        (720, 1600),
        "frames follow the override size"
    );
    sh(p, "wm size reset").await;
    let dump = sh(p, "dumpsys input").await;
    assert!(
        dump.lines().any(|l| l == "      SurfaceOrientation: 0"),
        "{dump}"
    );
    assert_eq!(sh(p, "getprop ro.build.version.sdk").await, "34\n");
    assert_eq!(sh(p, "echo ping").await, "ping\n");
}

#[tokio::test]
async fn ime_switching_and_adb_keyboard_broadcast() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let latin = phoneagent_sim::LATIN_IME;
    let adbk = phoneagent_sim::ADB_IME;
    assert_eq!(sh(p, "ime list -s").await, format!("{latin}\n"));
    assert_eq!(sh(p, "ime list -a -s").await, format!("{latin}\n{adbk}\n"));
    assert_eq!(
        sh(p, "settings get secure default_input_method").await,
        format!("{latin}\n")
    );
    // Not enabled yet: `ime set` fails like on Android.
    let r = shell_v2(p, SERIAL, &format!("ime set {adbk}"))
        .await
        .unwrap();
    assert_ne!(r.code, Some(0));
    assert!(r.err().contains("cannot be selected"), "{}", r.err());
    phone.reset("mail_compose").unwrap();
    tap(p, &phone, "mail.body").await;
    // Broadcast before switching: nothing typed (no receiver).
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode("x");
    let out = sh(p, &format!("am broadcast -a ADB_INPUT_B64 --es msg {b64}")).await;
    assert_eq!(
        out,
        "Broadcasting: Intent { act=ADB_INPUT_B64 flg=0x400000 (has extras) }\nBroadcast completed: result=0\n"
    );
    assert_eq!(
        phone.ground_truth().typed_text.focused_text.as_deref(),
        Some("")
    );
    let text = "你好，世界 😀 \"quotes\" 100% 'x'\nline2";
    type_b64(p, text).await;
    assert_eq!(
        sh(p, "settings get secure default_input_method").await,
        format!("{adbk}\n")
    );
    let gt = phone.ground_truth();
    assert_eq!(gt.ime, adbk);
    assert_eq!(gt.typed_text.focused.as_deref(), Some("mail.body"));
    assert_eq!(gt.typed_text.focused_text.as_deref(), Some(text));
    sh(p, "am broadcast -a ADB_CLEAR_TEXT").await;
    assert_eq!(phone.ground_truth().typed_text.fields["mail.body"], "");
    sh(p, &format!("ime set {latin}")).await;
    assert_eq!(phone.ground_truth().ime, latin);
    // `input text`: ASCII with %s for spaces.
    sh(p, "input text hello%sworld").await;
    assert_eq!(
        phone.ground_truth().typed_text.fields["mail.body"],
        "hello world"
    );
}

#[tokio::test]
async fn input_errors_and_no_adb_keyboard() {
    let mut dev = SimDeviceConfig::new("kb-less");
    dev.adb_keyboard = false;
    let (sim, _) = start_with(SimConfig {
        devices: vec![dev],
        allow_kill: false,
    })
    .await;
    let p = sim.port();
    let r = shell_v2(p, "kb-less", "ime list -a -s").await.unwrap();
    assert_eq!(r.out(), format!("{}\n", phoneagent_sim::LATIN_IME));
    let r = shell_v2(
        p,
        "kb-less",
        &format!("ime enable {}", phoneagent_sim::ADB_IME),
    )
    .await
    .unwrap();
    assert_eq!(r.code, Some(255));
    let r = shell_v2(p, "kb-less", "input tap x 5").await.unwrap();
    assert_eq!(r.code, Some(1));
    assert!(
        r.err().contains("Invalid arguments for command: tap"),
        "{}",
        r.err()
    );
    let r = shell_v2(p, "kb-less", "input keyevent KEYCODE_BOGUS")
        .await
        .unwrap();
    assert_eq!(r.code, Some(1));
}

#[tokio::test]
async fn several_devices_and_their_states() {
    let mut cfg = SimConfig::with_devices(2);
    let mut un = SimDeviceConfig::new("unauth-1");
    un.state = SimDeviceState::Unauthorized;
    let mut off = SimDeviceConfig::new("offline-1");
    off.state = SimDeviceState::Offline;
    cfg.devices.push(un);
    cfg.devices.push(off);
    let (sim, _) = start_with(cfg).await;
    let p = sim.port();
    assert_eq!(
        host_query(p, "host:devices").await.unwrap(),
        "virtual-phone-1\tdevice\nvirtual-phone-2\tdevice\nunauth-1\tunauthorized\noffline-1\toffline\n"
    );
    let mut s = connect(p).await;
    send(&mut s, "host:transport-any").await;
    assert_eq!(
        status(&mut s).await.unwrap_err(),
        "more than one device/emulator"
    );
    let mut s = connect(p).await;
    send(&mut s, "host:transport:unauth-1").await;
    assert!(
        status(&mut s)
            .await
            .unwrap_err()
            .starts_with("device unauthorized.")
    );
    let mut s = connect(p).await;
    send(&mut s, "host:transport:offline-1").await;
    assert_eq!(status(&mut s).await.unwrap_err(), "device offline");
    assert_eq!(
        host_query(p, "host-serial:unauth-1:get-state")
            .await
            .unwrap(),
        "unauthorized"
    );
    // Each device is its own phone.
    let r = shell_v2(p, "virtual-phone-2", "input keyevent 4")
        .await
        .unwrap();
    assert_eq!(r.code, Some(0));
    assert_eq!(
        sim.phone("virtual-phone-2").unwrap().ground_truth().keys,
        vec!["BACK"]
    );
    assert!(
        sim.phone("virtual-phone-1")
            .unwrap()
            .ground_truth()
            .keys
            .is_empty()
    );
    // Sim services need the serial when there are several devices.
    let err = phoneagent_sim::client::fetch_state(p, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("virtual-phone-2"), "{err}");
    let gt = phoneagent_sim::client::fetch_state(p, Some("virtual-phone-2"))
        .await
        .unwrap();
    assert_eq!(gt.serial, "virtual-phone-2");
}

#[tokio::test]
async fn sim_services_over_tcp() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let gt = phoneagent_sim::client::fetch_state(p, None).await.unwrap();
    assert_eq!(gt.current_screen, "home");
    assert_eq!(gt.width, 1080);
    assert!(gt.element("home.app.shop").is_some());
    phoneagent_sim::client::reset(p, Some(SERIAL), "settings")
        .await
        .unwrap();
    assert_eq!(phone.ground_truth().current_screen, "settings");
    let err = phoneagent_sim::client::reset(p, None, "nowhere")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown scenario `nowhere`"),
        "{err}"
    );
    let f = phoneagent_sim::Faults {
        rotation: 1,
        ..Default::default()
    };
    phoneagent_sim::client::set_faults(p, None, &f)
        .await
        .unwrap();
    assert_eq!(phone.ground_truth().faults.rotation, 1);
    let mut s = connect(p).await;
    send(&mut s, "host:sim-fault:{not json").await;
    assert!(
        status(&mut s)
            .await
            .unwrap_err()
            .contains("bad faults JSON")
    );
}

#[tokio::test]
async fn track_devices_reports_changes() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let mut s = connect(p).await;
    send(&mut s, "host:track-devices").await;
    status(&mut s).await.unwrap();
    assert_eq!(read_hex_string(&mut s).await, "virtual-phone-1\tdevice\n");
    phone.set_faults(phoneagent_sim::Faults {
        disconnect_after_commands: Some(0),
        reconnect_after_ms: Some(100),
        ..Default::default()
    });
    assert_eq!(read_hex_string(&mut s).await, "");
    let back = tokio::time::timeout(std::time::Duration::from_secs(5), read_hex_string(&mut s))
        .await
        .expect("reconnect reported");
    assert_eq!(back, "virtual-phone-1\tdevice\n");
}
