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
