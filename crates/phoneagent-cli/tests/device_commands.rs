//! `phoneagent devices` / `doctor` / `screenshot` as a user runs them (SPEC C1, D1-D3, M1-M2):
//! against Debian's real adb server with no phone, against the virtual phone, and (doctor's
//! model checks) against the scripted model server as a process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn phoneagent() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phoneagent"));
    c.env_remove("ANDROID_SERIAL")
        .env_remove("ADB_SERVER_SOCKET")
        .env_remove("ANDROID_ADB_SERVER_PORT");
    c
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Debian's adb server on a free port with a throw-away HOME; killed on drop.
struct RealAdb {
    port: u16,
    home: tempfile::TempDir,
}

impl RealAdb {
    fn start() -> Option<Self> {
        if Command::new("adb").arg("version").output().is_err() {
            eprintln!("skipping: no `adb` binary (the CI script installs it)");
            return None;
        }
        let port = free_port();
        let home = tempfile::tempdir().unwrap();
        let out = Command::new("adb")
            .args(["-P", &port.to_string(), "start-server"])
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
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

#[test]
fn devices_against_real_adb_with_no_phone_is_an_empty_list_and_a_hint() {
    let Some(adb) = RealAdb::start() else { return };
    let addr = format!("127.0.0.1:{}", adb.port);
    let out = phoneagent()
        .args(["--adb", &addr, "devices"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}: {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("No devices"), "{stdout}");
    assert!(
        stdout.contains("hint:") && stdout.contains("USB debugging"),
        "{stdout}"
    );

    // Same through ADB_SERVER_SOCKET, as JSON.
    let out = phoneagent()
        .env("ADB_SERVER_SOCKET", format!("tcp:{addr}"))
        .args(["devices", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["devices"], serde_json::json!([]));
    assert_eq!(v["adb_server"], addr);
    assert!(v["hint"].as_str().unwrap().contains("virtual phone"));
}

#[test]
fn devices_without_a_server_names_the_fix() {
    let port = free_port();
    let out = phoneagent()
        .env("ANDROID_ADB_SERVER_PORT", port.to_string())
        .arg("devices")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("adb_server_unreachable"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("adb start-server"), "{err}");
}

/// `phoneagent sim serve` on a free port, killed on drop.
struct Sim(std::process::Child, u16);

impl Sim {
    fn start() -> Self {
        let port = free_port();
        let sim = Self(
            phoneagent()
                .args(["sim", "serve", "--port", &port.to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
            port,
        );
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return sim;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        drop(sim); // kills and waits
        panic!("the virtual phone did not start on port {port}");
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn devices_doctor_and_screenshot_on_the_virtual_phone() {
    let sim = Sim::start();
    let addr = format!("127.0.0.1:{}", sim.1);

    let out = phoneagent()
        .args(["--adb", &addr, "devices"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("SERIAL") && lines[0].contains("FIX"),
        "{table}"
    );
    assert!(
        lines[1].contains("virtual-phone-1")
            && lines[1].contains("device")
            && lines[1].contains("PhoneAgent_Virtual")
    );

    // No model configured (empty PHONEAGENT_HOME, no environment): the phone is ready, the
    // run is not — the actor check says how to configure one.
    let home = tempfile::tempdir().unwrap();
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home.path())
        .env_remove("PHONE_AGENT_BASE_URL")
        .env_remove("PHONE_AGENT_MODEL")
        .args(["--adb", &addr, "doctor", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(
        v["device"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true),
        "{v:#}"
    );
    let actor = &v["model"][0];
    assert_eq!(actor["name"], "actor", "{v:#}");
    if actor["ok"] == false {
        assert_eq!(out.status.code(), Some(1), "{v:#}");
        assert_eq!(v["ready"], false);
        assert!(
            actor["fix"]
                .as_str()
                .unwrap()
                .contains("PHONE_AGENT_BASE_URL"),
            "{v:#}"
        );
    }
    assert_eq!(v["serial"], "virtual-phone-1");
    let names: Vec<&str> = v["device"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "state",
            "screen_size",
            "density",
            "rotation",
            "adb_keyboard",
            "screenshot",
            "input",
            // capture/input paths in use (SPEC D8, D9; stream helper)
            "capture",
            "input_path"
        ]
    );
    // The safety gate's own section (screen reading, SPEC S10) is still reported beside them.
    let safety: Vec<&str> = v["safety"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(safety, ["screen_reading"], "{v:#}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shot.png");
    let out = phoneagent()
        .args(["--adb", &addr, "screenshot", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let (w, h) = png_size(&bytes);
    assert_eq!((w, h), (1080, 2400));

    // An unknown serial is refused with the connected ones listed.
    let out = phoneagent()
        .args(["--adb", &addr, "screenshot", "--serial", "nope", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope") && err.contains("virtual-phone-1"),
        "{err}"
    );
}

/// Width and height from a PNG's IHDR.
fn png_size(b: &[u8]) -> (u32, u32) {
    let w = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
    let h = u32::from_be_bytes([b[20], b[21], b[22], b[23]]);
    (w, h)
}

/// Direct mode (no adb server): `sim serve --adbd-port` answers as the phone's adbd, and
/// `--direct HOST:PORT` drives it with PhoneAgent's own key (created 0600 in PHONEAGENT_HOME).
#[test]
fn devices_doctor_and_screenshot_in_direct_mode() {
    let port = free_port();
    let adbd = free_port();
    let home = tempfile::tempdir().unwrap();
    let sim = Sim(
        phoneagent()
            .args(["sim", "serve", "--port", &port.to_string()])
            .args(["--adbd-port", &adbd.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
        port,
    );
    let mut up = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", adbd)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(up, "the adbd face did not start on {adbd}");
    let target = format!("127.0.0.1:{adbd}");
    let run = |args: &[&str]| {
        phoneagent()
            .env("PHONEAGENT_HOME", home.path())
            .env_remove("PHONEAGENT_ADB_DIRECT")
            .args(["--direct", &target])
            .args(args)
            .output()
            .unwrap()
    };

    let out = run(&["devices"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Direct mode (direct TCP 127.0.0.1:"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with(&target))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("device") && row.contains("PhoneAgent_Virtual") && row.contains("tcp"),
        "{row}"
    );
    let key = home.path().join("adbkey");
    let pem = std::fs::read_to_string(&key).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    let out = run(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    // The phone side is ready (no model is configured here, so `ready` covers the model too).
    assert!(
        v["device"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true),
        "{v:#}"
    );
    assert_eq!(v["direct"], true);
    assert_eq!(v["serial"], target);
    assert_eq!(v["transport"], format!("direct TCP {target}"));
    assert!(
        v["note"].as_str().unwrap().contains("Allow USB debugging"),
        "{v:#}"
    );

    let out = run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("Transport: direct TCP {target}")),
        "{text}"
    );
    assert!(text.contains("direct mode: no adb server"), "{text}");

    let file = home.path().join("shot.png");
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home.path())
        .args(["--direct", &target, "screenshot", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(png_size(&std::fs::read(&file).unwrap()), (1080, 2400));

    // Nothing listening at the --direct address: a typed error with the fix.
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home.path())
        .args(["--direct", &format!("127.0.0.1:{}", free_port()), "devices"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[no_device]") && err.contains("adb tcpip 5555"),
        "{err}"
    );
    drop(sim);
}

/// `phoneagent sim model --script FILE …` (the scripted model as a process), killed on drop.
struct Model {
    child: std::process::Child,
    base_url: String,
}

impl Model {
    fn start(script: &str, dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        use std::io::BufRead;
        let file = dir.join("model-script.jsonl");
        std::fs::write(&file, script).unwrap();
        let mut child = phoneagent()
            .args(["sim", "model", "--script"])
            .arg(&file)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base_url = line.trim().rsplit(' ').next().unwrap().to_string();
        assert!(base_url.starts_with("http://127.0.0.1:"), "{line:?}");
        Self { child, base_url }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `doctor --json` with the model flags; returns (exit code, JSON, stdout+stderr text).
fn doctor_json(
    sim: &Sim,
    home: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, serde_json::Value, String) {
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home)
        .env_remove("PHONE_AGENT_API_KEY")
        .env_remove("PHONE_AGENT_BASE_URL")
        .env_remove("PHONE_AGENT_MODEL")
        .env_remove("MODEL_COORDINATE_SPACE")
        .envs(env.iter().copied())
        .args(["--adb", &format!("127.0.0.1:{}", sim.1), "doctor", "--json"])
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code(), v, text)
}

fn model_check<'a>(v: &'a serde_json::Value, role: &str) -> &'a serde_json::Value {
    v["model"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == role)
        .unwrap_or_else(|| panic!("no {role} check in {v:#}"))
}

#[test]
fn doctor_checks_each_model_role_up_wrong_key_unlisted_and_down() {
    let sim = Sim::start();
    let home = tempfile::tempdir().unwrap();
    const KEY: &str = "sk-doctor-test-right-key-0123456789";
    const WRONG: &str = "sk-doctor-test-wrong-key-9876543210";
    // Answers for the --deep vision probes: the actor's, then the verifier's (which falls back
    // to the actor's endpoint and carries its own role marker).
    let script = "{\"content\": \"white\"}\n{\"queue\": \"verifier\", \"content\": \"white\"}\n";
    let model = Model::start(
        script,
        home.path(),
        &["--require-api-key-env", "DOCTOR_TEST_KEY"],
        &[("DOCTOR_TEST_KEY", KEY)],
    );
    let url = model.base_url.clone();
    let url = url.as_str();
    let flags = ["--base-url", url, "--model", "scripted-model"];

    // Up, right key, deep: ready.
    let mut deep = flags.to_vec();
    deep.push("--deep");
    let (code, v, text) = doctor_json(&sim, home.path(), &deep, &[("PHONE_AGENT_API_KEY", KEY)]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["ready"], true);
    let actor = model_check(&v, "actor");
    assert_eq!(actor["ok"], true, "{actor}");
    let d = actor["detail"].as_str().unwrap();
    assert!(d.contains("model listed") && d.contains(url), "{d}");
    assert!(d.contains("key: PHONE_AGENT_API_KEY"), "{d}");
    assert!(d.contains("vision request answered"), "{d}");
    let verifier = model_check(&v, "verifier");
    assert_eq!(verifier["ok"], true, "{verifier}");
    assert!(
        verifier["detail"]
            .as_str()
            .unwrap()
            .contains("fell back to the actor role's model"),
        "{verifier}"
    );
    // An unconfigured reviewer is reported (it fails closed at run time), not a doctor failure.
    let reviewer = model_check(&v, "safety_reviewer");
    assert_eq!(reviewer["ok"], true);
    assert!(
        reviewer["detail"]
            .as_str()
            .unwrap()
            .starts_with("not configured")
    );
    assert!(!text.contains(KEY), "the key was printed: {text}");

    // Wrong key: refused, the fix names where the key comes from, the key is never printed.
    let (code, v, text) = doctor_json(&sim, home.path(), &flags, &[("PHONE_AGENT_API_KEY", WRONG)]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["ready"], false);
    let actor = model_check(&v, "actor");
    assert_eq!(actor["ok"], false);
    assert!(
        actor["detail"]
            .as_str()
            .unwrap()
            .contains("refused the API key (HTTP 401)"),
        "{actor}"
    );
    assert!(
        actor["fix"]
            .as_str()
            .unwrap()
            .contains("PHONE_AGENT_API_KEY"),
        "{actor}"
    );
    assert!(
        !text.contains(WRONG) && !text.contains(KEY),
        "a key was printed: {text}"
    );

    // A model the endpoint does not serve: the fix lists what it serves.
    let (code, v, _) = doctor_json(
        &sim,
        home.path(),
        &["--base-url", url, "--model", "no-such-model"],
        &[("PHONE_AGENT_API_KEY", KEY)],
    );
    assert_eq!(code, Some(1));
    let actor = model_check(&v, "actor");
    assert!(
        actor["detail"]
            .as_str()
            .unwrap()
            .contains("does not list model no-such-model")
    );
    assert!(
        actor["fix"].as_str().unwrap().contains("scripted-model"),
        "{actor}"
    );

    // Down: unreachable, with the fix.
    drop(model);
    let (code, v, _) = doctor_json(&sim, home.path(), &flags, &[]);
    assert_eq!(code, Some(1));
    let actor = model_check(&v, "actor");
    assert_eq!(actor["ok"], false);
    assert!(
        actor["detail"].as_str().unwrap().ends_with("unreachable"),
        "{actor}"
    );
    assert!(
        actor["fix"]
            .as_str()
            .unwrap()
            .contains("Start the model server"),
        "{actor}"
    );

    // The human-readable form prints one line per role with the fix under it.
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home.path())
        .env_remove("PHONE_AGENT_API_KEY")
        .args(["--adb", &format!("127.0.0.1:{}", sim.1), "doctor"])
        .args(flags)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("Model") && table.contains("[FAIL] actor"),
        "{table}"
    );
    assert!(table.contains("fix: "), "{table}");
}

/// Log lines written to a file or a pipe carry no terminal colour codes (they did).
#[test]
fn warnings_on_a_non_terminal_stderr_have_no_colour_codes() {
    // A direct connection with a fresh home logs the creation of its ADB key (INFO).
    let home = tempfile::tempdir().unwrap();
    let out = phoneagent()
        .env("PHONEAGENT_HOME", home.path())
        .args(["--direct", "127.0.0.1:9", "-vvv", "devices"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        ["TRACE", "DEBUG", "INFO", "WARN"]
            .iter()
            .any(|l| err.contains(l)),
        "no log line to check: {err}"
    );
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn doctor_deep_parses_a_family_answer_and_names_the_fix_when_it_is_not_the_grammar() {
    let sim = Sim::start();
    let home = tempfile::tempdir().unwrap();
    // SPEC M7/M8: the actor's deep check asks for one action in the family's grammar on the
    // synthetic probe image (queue connection_check) after the one-word vision probe.
    let script = concat!(
        "{\"content\": \"white\"}\n",
        "{\"queue\": \"verifier\", \"content\": \"white\"}\n",
        "{\"queue\": \"connection_check\", \"content\": \"Thought: the black half is below.\\nAction: click(point='<point>28 42</point>')\"}\n",
        "{\"content\": \"white\"}\n",
        "{\"queue\": \"verifier\", \"content\": \"white\"}\n",
        "{\"queue\": \"connection_check\", \"content\": \"I would tap the black part.\"}\n",
    );
    let model = Model::start(script, home.path(), &["--model", "UI-TARS-1.5-7B"], &[]);
    let flags = [
        "--base-url",
        model.base_url.as_str(),
        "--model",
        "UI-TARS-1.5-7B",
        "--deep",
    ];
    let (code, v, _) = doctor_json(&sim, home.path(), &flags, &[]);
    assert_eq!(code, Some(0), "{v:#}");
    let actor = model_check(&v, "actor");
    let d = actor["detail"].as_str().unwrap();
    assert!(
        d.contains("family ui_tars (auto from the model name"),
        "{d}"
    );
    assert!(d.contains("grammar parsed a real answer"), "{d}");
    let (code, v, _) = doctor_json(&sim, home.path(), &flags, &[]);
    assert_eq!(code, Some(1), "{v:#}");
    let actor = model_check(&v, "actor");
    let d = actor["detail"].as_str().unwrap();
    assert!(
        d.contains("not in the ui_tars grammar") && d.contains("I would tap the black part"),
        "{d}"
    );
    assert!(actor["fix"].as_str().unwrap().contains("family"), "{actor}");
}
