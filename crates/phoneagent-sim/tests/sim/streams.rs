//! The streaming services (SPEC V7): `sync:` with Debian's stock adb (push/pull, screencap
//! FILE), scrcpy's wire protocol (video decoded with OpenH264, control changing ground truth,
//! version mismatch), screenrecord's H.264 stream and its time limit.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use phoneagent_sim::{Faults, SCRCPY_SERVER_VERSION};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

const ADB: &str = "/usr/bin/adb";
const JAR: &str = "/data/local/tmp/scrcpy-server.jar";

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_adb_pushes_and_pulls_and_screencap_writes_a_file() {
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
    // 200 KiB of non-trivial bytes: several DATA chunks.
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
    let local = home.path().join("scrcpy-server");
    std::fs::write(&local, &payload).unwrap();
    let l = local.to_string_lossy().into_owned();
    let o = run(s(&["-s", SERIAL, "push", &l, JAR])).await.unwrap();
    assert!(
        o.status.success(),
        "push: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let back = home.path().join("back.jar");
    let b = back.to_string_lossy().into_owned();
    let o = run(s(&["-s", SERIAL, "pull", JAR, &b])).await.unwrap();
    assert!(
        o.status.success(),
        "pull: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read(&back).unwrap(),
        payload,
        "pull returns what push sent"
    );

    // screencap FILE, then pull: the PNG of the current screen.
    let o = run(s(&[
        "-s",
        SERIAL,
        "shell",
        "screencap",
        "-p",
        "/sdcard/s.png",
    ]))
    .await
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = home.path().join("s.png");
    let p = png.to_string_lossy().into_owned();
    let o = run(s(&["-s", SERIAL, "pull", "/sdcard/s.png", &p]))
        .await
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pulled = std::fs::read(&png).unwrap();
    assert_eq!(pulled, phone.screenshot_png().unwrap());

    // A missing file is an error naming it; rm removes a pushed file.
    let o = run(s(&["-s", SERIAL, "pull", "/sdcard/nope.png", &p]))
        .await
        .unwrap();
    assert!(!o.status.success());
    let e = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(e.contains("nope.png"), "{e}");
    let o = run(s(&["-s", SERIAL, "shell", "rm", JAR])).await.unwrap();
    assert!(o.status.success());
    let o = run(s(&["-s", SERIAL, "pull", JAR, &b])).await.unwrap();
    assert!(!o.status.success(), "the jar is gone after rm");
}

/// Push `bytes` to `path` with a raw `sync:` SEND.
async fn push(port: u16, path: &str, bytes: &[u8]) {
    let mut s = open_service(port, SERIAL, "sync:").await.unwrap();
    let spec = format!("{path},420");
    let mut m = b"SEND".to_vec();
    m.extend_from_slice(&(spec.len() as u32).to_le_bytes());
    m.extend_from_slice(spec.as_bytes());
    m.extend_from_slice(b"DATA");
    m.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    m.extend_from_slice(bytes);
    m.extend_from_slice(b"DONE");
    m.extend_from_slice(&0u32.to_le_bytes());
    s.write_all(&m).await.unwrap();
    let mut r = [0u8; 8];
    s.read_exact(&mut r).await.unwrap();
    assert_eq!(&r[..4], b"OKAY");
}

/// Start the scrcpy server on `shell,v2`; the returned stream carries its logs.
async fn start_server(port: u16, version: &str, scid: &str) -> TcpStream {
    let cmd = format!(
        "CLASSPATH={JAR} app_process / com.genymobile.scrcpy.Server {version} scid={scid} log_level=info audio=false tunnel_forward=true control=true video_codec=h264 max_size=0"
    );
    open_service(port, SERIAL, &format!("shell,v2,raw:{cmd}"))
        .await
        .unwrap()
}

/// Read shell-protocol packets until exit: (stderr, exit code).
async fn drain_v2(mut s: TcpStream) -> (String, Option<u8>) {
    let mut err = Vec::new();
    loop {
        let mut head = [0u8; 5];
        if s.read_exact(&mut head).await.is_err() {
            return (String::from_utf8_lossy(&err).into_owned(), None);
        }
        let n = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut d = vec![0u8; n];
        s.read_exact(&mut d).await.unwrap();
        match head[0] {
            2 => err.extend_from_slice(&d),
            3 => {
                return (
                    String::from_utf8_lossy(&err).into_owned(),
                    d.first().copied(),
                );
            }
            _ => {}
        }
    }
}

async fn connect_abstract(port: u16, name: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match open_service(port, SERIAL, &format!("localabstract:{name}")).await {
            Ok(s) => return s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("localabstract:{name}: {e}"),
        }
    }
}

/// Read one scrcpy packet: (pts_and_flags, data).
async fn packet(s: &mut TcpStream) -> (u64, Vec<u8>) {
    let mut h = [0u8; 12];
    s.read_exact(&mut h).await.unwrap();
    let flags = u64::from_be_bytes(h[..8].try_into().unwrap());
    let n = u32::from_be_bytes(h[8..].try_into().unwrap()) as usize;
    let mut d = vec![0u8; n];
    s.read_exact(&mut d).await.unwrap();
    (flags, d)
}

fn touch(action: u8, x: i32, y: i32, w: u16, h: u16) -> Vec<u8> {
    let mut m = vec![2, action];
    m.extend_from_slice(&u64::MAX.to_be_bytes()); // POINTER_ID_MOUSE (-1)
    m.extend_from_slice(&x.to_be_bytes());
    m.extend_from_slice(&y.to_be_bytes());
    m.extend_from_slice(&w.to_be_bytes());
    m.extend_from_slice(&h.to_be_bytes());
    m.extend_from_slice(&0xffffu16.to_be_bytes());
    m.extend_from_slice(&1u32.to_be_bytes());
    m.extend_from_slice(&1u32.to_be_bytes());
    m
}

fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
    let sum: u64 = a
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| i % 4 != 3)
        .map(|(_, (x, y))| u64::from(x.abs_diff(*y)))
        .sum();
    sum as f64 / (a.len() as f64 * 0.75)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrcpy_protocol_video_and_control_act_on_the_phone() {
    let (sim, phone) = start().await;
    let port = sim.port();
    push(port, JAR, b"PK\x03\x04 stand-in for scrcpy-server").await;
    let logs = start_server(port, SCRCPY_SERVER_VERSION, "0000002a").await;
    let logs = tokio::spawn(drain_v2(logs));
    let mut video = connect_abstract(port, "scrcpy_0000002a").await;
    let mut dummy = [9u8; 1];
    video.read_exact(&mut dummy).await.unwrap();
    assert_eq!(dummy, [0]);
    let mut control = connect_abstract(port, "scrcpy_0000002a").await;
    let mut meta = [0u8; 64];
    video.read_exact(&mut meta).await.unwrap();
    assert!(meta.starts_with(b"PhoneAgent_Virtual\0"));
    let mut codec = [0u8; 12];
    video.read_exact(&mut codec).await.unwrap();
    assert_eq!(&codec[..4], b"h264");
    assert_eq!(u32::from_be_bytes(codec[4..8].try_into().unwrap()), 1080);
    assert_eq!(u32::from_be_bytes(codec[8..].try_into().unwrap()), 2400);

    // Config packet, then a key frame that decodes to the rendered screen.
    let (flags, config) = packet(&mut video).await;
    assert_eq!(flags, 1 << 63, "config packet first");
    let (flags, frame) = packet(&mut video).await;
    assert!(flags & (1 << 62) != 0, "then a key frame");
    let mut dec = openh264::decoder::Decoder::new().unwrap();
    let mut au = config.clone();
    au.extend_from_slice(&frame);
    let yuv = dec.decode(&au).unwrap().expect("a picture");
    let mut rgba = vec![0u8; 1080 * 2400 * 4];
    yuv.write_rgba8(&mut rgba);
    let shot = decode_png(&phone.screenshot_png().unwrap());
    let diff = mean_abs_diff(&rgba, shot.as_raw());
    assert!(
        diff < 6.0,
        "decoded frame differs from the screen by {diff:.2} per channel"
    );

    // A tap through the control socket opens the shop, as `input tap` does.
    let (x, y) = phone
        .ground_truth()
        .element("home.app.shop")
        .unwrap()
        .center();
    control
        .write_all(&touch(0, x, y, 1080, 2400))
        .await
        .unwrap();
    control
        .write_all(&touch(1, x, y, 1080, 2400))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while phone.ground_truth().current_screen != "shop" {
        assert!(Instant::now() < deadline, "the tap did not land");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(phone.ground_truth().touches.last().unwrap().kind, "tap");
    // A touch made for another screen size is ignored (as scrcpy's server does).
    let before = phone.ground_truth().touches.len();
    control
        .write_all(&touch(0, 10, 10, 720, 1600))
        .await
        .unwrap();
    control
        .write_all(&touch(1, 10, 10, 720, 1600))
        .await
        .unwrap();

    // BACK, then clipboard paste of CJK + emoji into a focused field, acknowledged.
    phone.reset("search").unwrap();
    let (x, y) = phone
        .ground_truth()
        .element("search.query")
        .unwrap()
        .center();
    control
        .write_all(&touch(0, x, y, 1080, 2400))
        .await
        .unwrap();
    control
        .write_all(&touch(1, x, y, 1080, 2400))
        .await
        .unwrap();
    let text = "蓝牙耳机 🎧";
    let mut m = vec![9u8];
    m.extend_from_slice(&7u64.to_be_bytes());
    m.push(1);
    m.extend_from_slice(&(text.len() as u32).to_be_bytes());
    m.extend_from_slice(text.as_bytes());
    control.write_all(&m).await.unwrap();
    let mut ack = [0u8; 9];
    control.read_exact(&mut ack).await.unwrap();
    assert_eq!(ack[0], 1, "ACK_CLIPBOARD");
    assert_eq!(u64::from_be_bytes(ack[1..].try_into().unwrap()), 7);
    let gt = phone.ground_truth();
    assert_eq!(gt.typed_text.fields["search.query"], text);
    assert_eq!(
        gt.touches.len(),
        1,
        "only the search tap after the reset; the 720x1600 touch was ignored ({before} before)"
    );
    // A key event: ENTER submits the search.
    for action in [0u8, 1] {
        let mut k = vec![0u8, action];
        k.extend_from_slice(&66u32.to_be_bytes());
        k.extend_from_slice(&0u32.to_be_bytes());
        k.extend_from_slice(&0u32.to_be_bytes());
        control.write_all(&k).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while phone.ground_truth().search.submitted_query.as_deref() != Some(text) {
        assert!(Instant::now() < deadline, "ENTER did not submit");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A rotation: a new config packet and a key frame of the landscape size.
    phone.set_faults(Faults {
        rotation: 1,
        ..Faults::default()
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut au = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "no landscape frame");
        let (flags, d) = packet(&mut video).await;
        au.extend_from_slice(&d);
        if flags & (1 << 63) != 0 {
            continue;
        }
        if let Some(y) = dec.decode(&au).unwrap() {
            use openh264::formats::YUVSource;
            if y.dimensions() == (2400, 1080) {
                break;
            }
        }
        au.clear();
    }

    // Closing the sockets ends the server with status 0.
    drop(video);
    drop(control);
    let (err, code) = tokio::time::timeout(Duration::from_secs(10), logs)
        .await
        .unwrap()
        .unwrap();
    assert!(err.contains("Device: [PhoneAgent]"), "{err}");
    assert_eq!(code, Some(0), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrcpy_version_mismatch_and_missing_jar_fail_like_the_real_server() {
    let (sim, _phone) = start().await;
    let port = sim.port();
    let (err, code) = drain_v2(start_server(port, SCRCPY_SERVER_VERSION, "1").await).await;
    assert_eq!(code, Some(1));
    assert!(err.contains("ClassNotFoundException"), "{err}");
    push(port, JAR, b"jar").await;
    let (err, code) = drain_v2(start_server(port, "2.7", "1").await).await;
    assert_eq!(code, Some(1));
    assert!(
        err.contains(&format!(
            "The server version ({SCRCPY_SERVER_VERSION}) does not match the client (2.7)"
        )),
        "{err}"
    );
    // Nothing listens after a failed start.
    assert!(
        open_service(port, SERIAL, "localabstract:scrcpy_00000001")
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenrecord_streams_h264_until_its_time_limit() {
    let (sim, phone) = start().await;
    let port = sim.port();
    let t0 = Instant::now();
    let mut s = open_service(
        port,
        SERIAL,
        "exec:screenrecord --output-format=h264 --time-limit 1 -",
    )
    .await
    .unwrap();
    // Change the screen while it records.
    let (x, y) = phone
        .ground_truth()
        .element("home.app.shop")
        .unwrap()
        .center();
    tokio::time::sleep(Duration::from_millis(200)).await;
    sh(port, &format!("input tap {x} {y}")).await;
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut all))
        .await
        .unwrap()
        .unwrap();
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "stopped early: {took:?}"
    );
    let mut dec = openh264::decoder::Decoder::new().unwrap();
    let mut pictures = 0;
    for nal in openh264::nal_units(&all) {
        if let Ok(Some(_)) = dec.decode(nal) {
            pictures += 1;
        }
    }
    assert!(
        pictures >= 2,
        "the first screen and the shop: {pictures} pictures"
    );
    let o = shell_v2(
        port,
        SERIAL,
        "screenrecord --time-limit 900 --output-format=h264 -",
    )
    .await
    .unwrap();
    assert_eq!(o.code, Some(1));
    assert!(o.err().contains("out of range"), "{}", o.err());
}
