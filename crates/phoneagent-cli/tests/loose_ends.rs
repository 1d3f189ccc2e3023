//! Loose ends of issue #11 item 8 through the `phoneagent` binary: an oversized task is refused
//! before anything touches the phone or the model. The virtual phone (`phoneagent sim serve`) and the
//! scripted model (`phoneagent sim model`) are separate processes on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn phoneagent() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phoneagent"));
    for var in [
        "ANDROID_SERIAL",
        "ADB_SERVER_SOCKET",
        "ANDROID_ADB_SERVER_PORT",
        "PHONE_AGENT_BASE_URL",
        "PHONE_AGENT_MODEL",
        "PHONE_AGENT_API_KEY",
        "PHONE_AGENT_SAFETY_MODE",
        "PHONE_AGENT_FINISH_VERIFY",
        "PHONE_AGENT_VERIFIER_MODEL",
        "PHONE_AGENT_SAFETY_REVIEWER_MODEL",
        "PHONE_AGENT_AUTO_REVIEWER_MODEL",
        "MODEL_COORDINATE_SPACE",
        "PHONEAGENT_HOME",
        "RUST_LOG",
    ] {
        c.env_remove(var);
    }
    c
}

/// A child process killed (SIGKILL) and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `phoneagent ARGS…` and wait (20 s) for the stdout line containing `marker`.
fn spawn_until_line(args: &[&str], marker: &str) -> (Proc, String) {
    let mut child = phoneagent()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc = Proc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(marker) => return (proc, l),
            Ok(_) => {}
            Err(e) => panic!(
                "`phoneagent {}` never printed {marker:?}: {e}",
                args.join(" ")
            ),
        }
    }
}

/// The phone, the model and a data dir for the CLI under test.
struct Setup {
    _phone: Proc,
    _model: Proc,
    sim_port: u16,
    base_url: String,
    home: tempfile::TempDir,
}

impl Setup {
    fn start(scenario: &str, script: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let (phone, line) = spawn_until_line(
            &["sim", "serve", "--port", "0", "--scenario", scenario],
            "listening on",
        );
        let sim_port: u16 = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let script_file = home.path().join("script.jsonl");
        std::fs::write(&script_file, script).unwrap();
        let port = sim_port.to_string();
        let (model, line) = spawn_until_line(
            &[
                "sim",
                "model",
                "--script",
                script_file.to_str().unwrap(),
                "--sim-port",
                &port,
                "--sim-serial",
                "virtual-phone-1",
            ],
            "scripted model listening on",
        );
        let base_url = line.rsplit(' ').next().unwrap().to_string();
        Self {
            _phone: phone,
            _model: model,
            sim_port,
            base_url,
            home,
        }
    }

    /// `phoneagent run TASK --json` against this setup (finish verifier off).
    fn run_cmd(&self, task: &str) -> Command {
        let mut c = phoneagent();
        c.env("PHONEAGENT_HOME", self.home.path())
            .args(["--adb", &format!("127.0.0.1:{}", self.sim_port)])
            .args([
                "run",
                "--serial",
                "virtual-phone-1",
                "--base-url",
                &self.base_url,
                "--model",
                "scripted-model",
                "--coord-space",
                "relative_0_999",
                "--finish-verify",
                "off",
                "--json",
            ])
            .arg(task)
            .stdin(Stdio::null());
        c
    }

    fn truth(&self) -> Value {
        let out = phoneagent()
            .args(["sim", "state", "--port", &self.sim_port.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn runs(&self) -> Vec<Value> {
        let out = phoneagent()
            .env("PHONEAGENT_HOME", self.home.path())
            .args(["runs", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

#[test]
fn a_task_over_the_size_limit_is_refused_before_the_phone_or_the_model() {
    let script = r#"
{"content": "do(action=\"Tap\", element=[500, 500], reason=\"should never be asked\")"}
"#;
    let s = Setup::start("home", script);
    let commands_before = s.truth()["shell_commands"].as_u64().unwrap();
    let task = "Buy a cable. ".repeat(400); // 5,200 characters
    let out = s.run_cmd(&task).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("5200 characters") && stderr.contains("4000"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "no run events: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        s.truth()["shell_commands"].as_u64().unwrap(),
        commands_before
    );
    assert!(s.runs().is_empty());
    // Checked first of all: with no phone reachable the error is still about the task.
    let out = phoneagent()
        .env("PHONEAGENT_HOME", s.home.path())
        .args(["--adb", "127.0.0.1:1", "run", "--base-url", &s.base_url])
        .arg(&task)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("5200 characters"), "{stderr}");
}
