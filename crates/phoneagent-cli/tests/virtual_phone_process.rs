//! The consoles' virtual phone in its own process (issue #14; `phoneagent_console::
//! virtual_phone`): this crate's `phoneagent` binary is the child (`main` serves the phone when
//! started with `--phoneagent-virtual-phone`). A demo through the console places its order on
//! that phone (ground truth read over the sim's host service), the phone is a separate process,
//! and it ends when the console is dropped or its parent's pipe closes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use phoneagent_console::Console;
use phoneagent_console::virtual_phone::{CHILD_FLAG, VirtualPhoneProcess};
use phoneagent_protocol::RunStatus;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_phoneagent"))
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        // A zombie (exited, not yet reaped) counts as gone.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_runs_on_the_virtual_phone_in_its_own_process_which_ends_with_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::open(
        dir.path().join("phoneagent.sqlite3"),
        dir.path().join("exports"),
    )
    .unwrap();
    console.set_virtual_phone_process(VirtualPhoneProcess { program: exe() });
    let phone = console.start_virtual_phone().await.unwrap();
    let pid = console
        .virtual_phone_pid()
        .await
        .expect("the phone runs in a child process");
    assert_ne!(pid, std::process::id());
    assert!(
        cmdline(pid).iter().any(|a| a == CHILD_FLAG),
        "{:?}",
        cmdline(pid)
    );
    let port: u16 = phone.adb_addr.rsplit(':').next().unwrap().parse().unwrap();

    // The console lists it and a demo places its order on it (the phone's own ground truth).
    let listed = console.list_devices().await;
    assert!(
        listed.devices.iter().any(|d| d.serial == phone.serial),
        "{:?}",
        listed.devices
    );
    let scenario = console.demo_scenarios()[0].name.clone();
    console.start_demo(&scenario, None).await.unwrap();
    let t0 = Instant::now();
    let status = loop {
        let runs = console.list_runs(1).unwrap();
        if let Some(r) = runs.first().filter(|r| r.status != RunStatus::Running) {
            break r.status;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the demo did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, RunStatus::Succeeded);
    let truth = phoneagent_sim::client::fetch_state(port, Some(&phone.serial))
        .await
        .unwrap();
    assert_eq!(truth.orders_placed, 1, "the demo's order is on the phone");

    // Dropping the console ends the phone's process.
    drop(console);
    assert!(
        gone_within(pid, Duration::from_secs(10)),
        "the virtual phone's process outlived the console"
    );
}

#[test]
fn the_child_serves_until_its_stdin_closes_and_says_why_a_bad_port_fails() {
    let mut child = Command::new(exe())
        .args([CHILD_FLAG, "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"phoneagent-virtual-phone"), "{line:?}");
    let port: u16 = words[1].parse().unwrap();
    // Debian's adb client sees the phone at that port (ADB server protocol).
    if Path::new("/usr/bin/adb").exists() {
        let out = Command::new("adb")
            .args(["-P", &port.to_string(), "devices"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(words[2]),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    drop(child.stdin.take());
    let t0 = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the phone did not stop when its stdin closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(code.success(), "{code:?}");

    let out = Command::new(exe())
        .args([CHILD_FLAG, "not-a-port"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a number"));
}
