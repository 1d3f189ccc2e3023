//! The client against Debian's real adb server (`/usr/bin/adb`), with no phone attached.

use phoneagent_device::{AdbServer, AdbServerAddr};
use std::process::Command;

/// A real adb server on a free port with a throw-away HOME; killed on drop.
pub struct RealAdb {
    pub port: u16,
    home: tempfile::TempDir,
}

impl RealAdb {
    /// `None` when `adb` is not installed (the CI script installs it).
    pub fn start() -> Option<Self> {
        if Command::new("adb").arg("version").output().is_err() {
            eprintln!("skipping: no `adb` binary");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let home = tempfile::tempdir().unwrap();
        let out = Command::new("adb")
            .args(["-P", &port.to_string(), "start-server"])
            .env("HOME", home.path())
            .env_remove("ADB_SERVER_SOCKET")
            .env_remove("ANDROID_ADB_SERVER_PORT")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "adb start-server failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Self { port, home })
    }
}

impl Drop for RealAdb {
    fn drop(&mut self) {
        let _ = Command::new("adb")
            .args(["-P", &self.port.to_string(), "kill-server"])
            .env("HOME", self.home.path())
            .output();
    }
}

#[tokio::test]
async fn real_adb_server_with_no_phone_lists_nothing() {
    let Some(adb) = RealAdb::start() else { return };
    let server =
        AdbServer::new(AdbServerAddr::parse(&format!("tcp:127.0.0.1:{}", adb.port)).unwrap());
    assert_eq!(server.version().await.unwrap(), 41);
    let list = server.devices().await.unwrap();
    assert!(list.is_empty(), "no phone on this machine: {list:?}");
    let e = phoneagent_device::select_device(&server, None)
        .await
        .unwrap_err();
    assert!(matches!(e, phoneagent_device::DeviceError::NoDevice), "{e}");
    let e = server.features("nope").await.unwrap_err();
    assert!(
        matches!(e, phoneagent_device::DeviceError::SerialNotFound { .. }),
        "the real server's FAIL is typed: {e}"
    );
}

/// The virtual phone's adbd face against Debian's real adb (`adb connect`): the stock host
/// implementation authenticates (its own key, accepted at the prompt), lists the phone and
/// runs shell/exec services on it. Then our direct client reuses that same `~/.android/adbkey`
/// and the phone lets it in without a second prompt (same key format as adb's).
/// (Multi-threaded: the blocking `adb` calls must not stall the virtual phone's runtime.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_adb_connects_to_the_sims_adbd_and_our_client_reuses_its_key() {
    use phoneagent_device::direct::key::{AdbKey, KeySource};
    use phoneagent_device::{AdbDevice, Device, DeviceState, DirectLink, DirectTarget};
    use phoneagent_sim::{AdbdConfig, SimConfig, SimServer};
    let Some(adb) = RealAdb::start() else { return };
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let adbd = sim.start_adbd(AdbdConfig::default(), 0).await.unwrap();
    let target = format!("127.0.0.1:{}", adbd.port());
    let adb_cmd = |args: &[&str]| {
        let mut full = vec!["-P".to_string(), adb.port.to_string()];
        full.extend(args.iter().map(|s| s.to_string()));
        Command::new("adb")
            .args(&full)
            .env("HOME", adb.home.path())
            .env_remove("ADB_SERVER_SOCKET")
            .env_remove("ANDROID_ADB_SERVER_PORT")
            .env_remove("ANDROID_SERIAL")
            .output()
            .unwrap()
    };
    let out = adb_cmd(&["connect", &target]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    // A phone that does not know the key: adb says "failed to authenticate" while the prompt
    // is up (as with a real phone), then the transport comes online once it is accepted.
    assert!(
        said.contains("connected to") || said.contains("failed to authenticate"),
        "adb connect: {said} {out:?}"
    );
    let server =
        AdbServer::new(AdbServerAddr::parse(&format!("tcp:127.0.0.1:{}", adb.port)).unwrap());
    // The server authenticates in the background: wait for state `device`.
    let mut state = None;
    for _ in 0..100 {
        state = server.state_of(&target).await.unwrap();
        if state == Some(DeviceState::Device) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(state, Some(DeviceState::Device));
    assert_eq!(
        adbd.prompts_shown(),
        1,
        "adb's key was offered and accepted"
    );
    // Stock `adb shell` (shell v2 with exit status) and `exec-out` through the adbd face.
    let out = adb_cmd(&["-s", &target, "shell", "echo", "via-adbd"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "via-adbd");
    let out = adb_cmd(&["-s", &target, "shell", "frobnicate"]);
    assert_eq!(out.status.code(), Some(127));
    let out = adb_cmd(&["-s", &target, "exec-out", "screencap", "-p"]);
    let phone = sim.phone("virtual-phone-1").unwrap();
    assert_eq!(
        out.stdout,
        phone.screenshot_png().unwrap(),
        "binary-clean exec"
    );
    // Our client through the real server to the adbd face.
    let dev = AdbDevice::open(server, &target, crate::fast_opts())
        .await
        .unwrap();
    dev.tap(
        phoneagent_protocol::DevicePoint { x: 7, y: 8 },
        &tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        phone.ground_truth().touches.last().map(|t| (t.x, t.y)),
        Some((7, 8))
    );
    drop(dev);
    let _ = adb_cmd(&["disconnect", &target]);

    // Our direct client with adb's own key file: no new prompt.
    let adbkey = adb.home.path().join(".android").join("adbkey");
    let ours = adb.home.path().join("cfg").join("adbkey");
    let key = AdbKey::load_or_create(&ours, Some(&adbkey)).unwrap();
    assert_eq!(key.source(), KeySource::AndroidAdbKey);
    let link = DirectLink::new(
        DirectTarget::parse_tcp(&target).unwrap(),
        key,
        phoneagent_device::DirectOptions {
            auth_timeout: std::time::Duration::from_millis(300),
            ..Default::default()
        },
    );
    let dev = AdbDevice::open_direct(link, crate::fast_opts())
        .await
        .unwrap();
    let out = dev
        .shell("echo direct", &tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.stdout_str(), "direct\n");
    assert_eq!(
        adbd.prompts_shown(),
        1,
        "the key adb made is already trusted"
    );
}

/// Issue #12 item 6: the adbd face serves several streams at once. Debian's adb server
/// multiplexes every client command over its one connection to the phone, so ten parallel
/// `adb exec-out screencap -p` are ten concurrent streams (before the fix: one PNG and nine
/// timeouts). Each must come back as the phone's exact PNG; an `adb shell` beside them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_parallel_exec_out_screencaps_through_real_adb_all_succeed() {
    use phoneagent_sim::{AdbdConfig, SimConfig, SimServer};
    let Some(adb) = RealAdb::start() else { return };
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let adbd = sim
        .start_adbd(
            AdbdConfig {
                // Small WRTEs: each PNG takes many flow-control round trips, so the streams
                // really interleave.
                max_payload: 16 * 1024,
                ..AdbdConfig::default()
            },
            0,
        )
        .await
        .unwrap();
    let target = format!("127.0.0.1:{}", adbd.port());
    let (port, home) = (adb.port, adb.home.path().to_owned());
    let adb_cmd = move |args: Vec<String>| {
        let (home, mut full) = (home.clone(), vec!["-P".to_string(), port.to_string()]);
        full.extend(args);
        tokio::task::spawn_blocking(move || {
            Command::new("timeout")
                .arg("30")
                .arg("adb")
                .args(&full)
                .env("HOME", &home)
                .env_remove("ADB_SERVER_SOCKET")
                .env_remove("ANDROID_ADB_SERVER_PORT")
                .env_remove("ANDROID_SERIAL")
                .output()
                .unwrap()
        })
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    adb_cmd(s(&["connect", &target])).await.unwrap();
    let server =
        AdbServer::new(AdbServerAddr::parse(&format!("tcp:127.0.0.1:{}", adb.port)).unwrap());
    for _ in 0..100 {
        if server.state_of(&target).await.unwrap() == Some(phoneagent_device::DeviceState::Device) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let want = sim
        .phone("virtual-phone-1")
        .unwrap()
        .screenshot_png()
        .unwrap();
    let mut jobs = Vec::new();
    for _ in 0..10 {
        jobs.push(adb_cmd(s(&["-s", &target, "exec-out", "screencap", "-p"])));
    }
    jobs.push(adb_cmd(s(&["-s", &target, "shell", "echo", "beside"])));
    let mut outs = Vec::new();
    for j in jobs {
        outs.push(j.await.unwrap());
    }
    let echo = outs.pop().unwrap();
    assert_eq!(String::from_utf8_lossy(&echo.stdout).trim(), "beside");
    let good = outs
        .iter()
        .filter(|o| o.status.success() && o.stdout == want)
        .count();
    assert_eq!(
        good,
        10,
        "parallel screencaps that came back whole: {:?}",
        outs.iter()
            .map(|o| (o.status.code(), o.stdout.len()))
            .collect::<Vec<_>>()
    );
    let _ = adb_cmd(s(&["disconnect", &target])).await;
}
