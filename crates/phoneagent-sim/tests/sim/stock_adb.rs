//! Debian's stock `adb` client (1.0.41) against the virtual phone.

use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;

use crate::common::*;

const ADB: &str = "/usr/bin/adb";

fn adb(port: u16, home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(ADB)
        .arg("-P")
        .arg(port.to_string())
        .args(args)
        .env("HOME", home)
        .env_remove("ANDROID_SERIAL")
        .env_remove("ADB_SERVER_SOCKET")
        .env_remove("ANDROID_ADB_SERVER_PORT")
        .stdin(Stdio::null())
        .output()
        .expect("run adb")
}

fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "adb failed: {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debian_adb_drives_the_virtual_phone() {
    if !Path::new(ADB).exists() {
        eprintln!("SKIPPED: {ADB} is not installed (apt-get install adb); CI installs it");
        return;
    }
    let (sim, phone) = start().await;
    let port = sim.port();
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let run = move |args: Vec<String>| {
        let h = h.clone();
        tokio::task::spawn_blocking(move || {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            adb(port, &h, &a)
        })
    };
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();

    let out = ok(&run(s(&["devices"])).await.unwrap());
    assert!(out.contains("virtual-phone-1\tdevice"), "{out}");

    // Tap the shop icon.
    let (x, y) = phone
        .ground_truth()
        .element("home.app.shop")
        .unwrap()
        .center();
    let (xs, ys) = (x.to_string(), y.to_string());
    ok(&run(s(&["-s", SERIAL, "shell", "input", "tap", &xs, &ys]))
        .await
        .unwrap());
    assert_eq!(phone.ground_truth().current_screen, "shop");

    // Screenshot through exec-out: a PNG of the right size.
    let o = run(s(&["-s", SERIAL, "exec-out", "screencap", "-p"]))
        .await
        .unwrap();
    assert!(o.status.success());
    let f = home.path().join("f.png");
    std::fs::write(&f, &o.stdout).unwrap();
    let img = decode_png(&std::fs::read(&f).unwrap());
    assert_eq!(img.dimensions(), (1080, 2400));

    let out = ok(&run(s(&["-s", SERIAL, "shell", "wm", "size"]))
        .await
        .unwrap());
    assert_eq!(out.trim(), "Physical size: 1080x2400");

    // IME switch and ADB Keyboard text (CJK + emoji).
    let adbk = phoneagent_sim::ADB_IME;
    let out = ok(&run(s(&["-s", SERIAL, "shell", "ime", "list", "-a", "-s"]))
        .await
        .unwrap());
    assert!(out.contains(adbk), "{out}");
    ok(&run(s(&["-s", SERIAL, "shell", "ime", "enable", adbk]))
        .await
        .unwrap());
    let out = ok(&run(s(&["-s", SERIAL, "shell", "ime", "set", adbk]))
        .await
        .unwrap());
    assert!(out.contains("selected"), "{out}");
    let out = ok(&run(s(&[
        "-s",
        SERIAL,
        "shell",
        "settings",
        "get",
        "secure",
        "default_input_method",
    ]))
    .await
    .unwrap());
    assert_eq!(out.trim(), adbk);
    phone.reset("search").unwrap();
    sh(port, &format!("ime enable {adbk}")).await;
    sh(port, &format!("ime set {adbk}")).await;
    tap(port, &phone, "search.query").await;
    let text = "蓝牙 🎧";
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    let out = ok(&run(s(&[
        "-s",
        SERIAL,
        "shell",
        "am",
        "broadcast",
        "-a",
        "ADB_INPUT_B64",
        "--es",
        "msg",
        &b64,
    ]))
    .await
    .unwrap());
    assert!(out.contains("Broadcast completed"), "{out}");
    assert_eq!(phone.ground_truth().typed_text.fields["search.query"], text);

    // Exit codes propagate through shell v2.
    let o = run(s(&["-s", SERIAL, "shell", "no-such-tool"]))
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    // An unknown serial is reported by the client.
    let o = run(s(&["-s", "nope", "shell", "echo", "x"])).await.unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("device 'nope' not found"));
}
