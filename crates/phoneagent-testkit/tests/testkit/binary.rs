//! The `scripted-model` binary: starts, prints its URL, answers from the script file, records to
//! a file, refuses bad arguments with a clear message.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::body;

const BIN: &str = env!("CARGO_BIN_EXE_scripted-model");

/// Kills the child on drop so a failing test leaves no process behind.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_serves_a_script_file_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.jsonl");
    let record = dir.path().join("r.jsonl");
    let mut f = std::fs::File::create(&script).unwrap();
    writeln!(f, "# demo").unwrap();
    writeln!(f, "{{\"content\": \"do(action=\\\"Home\\\")\"}}").unwrap();
    writeln!(f, "{{\"queue\": \"verifier\", \"content\": \"yes\"}}").unwrap();
    drop(f);
    let mut child = Child(
        Command::new(BIN)
            .args(["--port", "0", "--script"])
            .arg(&script)
            .arg("--record")
            .arg(&record)
            .args(["--on-exhausted", "repeat_last", "--model", "demo-model"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .trim()
        .strip_prefix("scripted model listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"),
        "{base}"
    );
    let http = reqwest::Client::new();
    for want in ["do(action=\"Home\")", "do(action=\"Home\")"] {
        let v: Value = http
            .post(format!("{base}/chat/completions"))
            .json(&body("s", "u"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], want);
    }
    let v: Value = http
        .get(format!("{base}/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["data"][0]["id"], "demo-model");
    // Recorded to the file as each request completes.
    let text = std::fs::read_to_string(&record).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    drop(child);
}

/// Start the binary with `args`, return the child and its base URL.
async fn spawn(args: &[&str]) -> (Child, String) {
    let mut child = Child(
        Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .trim()
        .strip_prefix("scripted model listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, base)
}

#[tokio::test]
async fn binary_oracle_mode_with_deliberate_error() {
    let (child, base) = spawn(&[
        "--oracle",
        "--space",
        "image_pixels",
        "--oracle-error-px",
        "10",
    ])
    .await;
    let img = image::RgbaImage::from_fn(300, 600, |x, y| {
        if (f64::from(x) - 100.0).hypot(f64::from(y) - 400.0) <= 15.0 {
            image::Rgba([230, 20, 20, 255])
        } else {
            image::Rgba([240, 240, 240, 255])
        }
    });
    let req = crate::body_with_image("s", "tap the disc", &crate::png_data_url(&img));
    let v: Value = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&req)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "do(action=\"Tap\", element=[110,400])"
    );
    drop(child);
}

#[test]
fn binary_refuses_bad_arguments_with_a_reason() {
    let out = Command::new(BIN).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--script") && err.contains("--oracle-sim-port"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["--oracle", "--space", "display_pixels"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("relative_0_999"));
    let out = Command::new(BIN)
        .args(["--script", "/nonexistent/script.jsonl"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/script.jsonl"));
}
