//! `phoneagent run` end to end as a user runs it (SPEC C1, R1-R7, T1, D6; issue 4 "Done when"):
//! the virtual phone (`phoneagent sim serve`) and the scripted model (`phoneagent sim model`, the
//! same server as the testkit's `scripted-model` binary) run as separate processes on loopback
//! ports; `phoneagent run` is a third process speaking ADB and OpenAI-compatible HTTP to them,
//! with its store in a throw-away `PHONEAGENT_HOME`. The phone's ground truth is read back with
//! `phoneagent sim state`, the history with `phoneagent runs` / `phoneagent export`.
//!
//! Size: one suite of CLI-process end-to-end tests sharing one process rig (virtual phone,
//! scripted model, throw-away home).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A multi-step task: home → shop → product (a coupon dialog pops up and is closed) → add to
/// cart, then the two-stage finish (the verifier queue answers if `auto` calls it).
const TO_CHECKOUT: &str = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", screen_description=\"Home screen.\", reason=\"Open the shop app.\")"}
{"content": "do(action=\"Tap\", element={{center:shop.product.0}}, target_description=\"无线蓝牙耳机\", screen_description=\"Shop product list.\", reason=\"Open the first product.\")"}
{"content": "do(action=\"Tap\", element={{center:关闭}}, target_description=\"关闭\", screen_description=\"Coupon dialog.\", reason=\"Close the coupon dialog.\")"}
{"content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", screen_description=\"Product page.\", reason=\"Add it to the cart.\")"}
{"content": "finish(message=\"The first product is in the cart.\")"}
{"content": "finish(message=\"The first product is in the cart.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"the cart badge shows 1\"}"}
"#;

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

/// Start `phoneagent ARGS…` and wait for the first stdout line containing `marker`; returns the
/// process and that line.
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
        let mut lines = BufReader::new(stdout).lines();
        while let Some(Ok(l)) = lines.next() {
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

/// The three-process setup: phone, model, and a data dir for the CLI under test.
struct Setup {
    phone: Option<Proc>,
    _model: Proc,
    sim_port: u16,
    base_url: String,
    home: tempfile::TempDir,
}

impl Setup {
    /// `scenario`: the phone's starting screen; `script`: the model's JSONL answers.
    fn start(scenario: &str, script: &str) -> Self {
        Self::start_with(scenario, script, &[])
    }

    /// Like [`Setup::start`], with extra `sim serve` arguments (e.g. `--adbd-port N`).
    fn start_with(scenario: &str, script: &str, phone_args: &[&str]) -> Self {
        let home = tempfile::tempdir().unwrap();
        let mut args = vec!["sim", "serve", "--port", "0", "--scenario", scenario];
        args.extend_from_slice(phone_args);
        let (phone, line) = spawn_until_line(&args, "listening on");
        // "virtual phone virtual-phone-1 listening on 127.0.0.1:PORT (adb -P PORT devices)"
        let sim_port: u16 = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let script_file = home.path().join("script.jsonl");
        std::fs::write(&script_file, script).unwrap();
        let (model, line) = spawn_until_line(
            &[
                "sim",
                "model",
                "--script",
                script_file.to_str().unwrap(),
                "--sim-port",
                &sim_port.to_string(),
                "--sim-serial",
                "virtual-phone-1",
            ],
            "scripted model listening on",
        );
        let base_url = line.rsplit(' ').next().unwrap().to_string();
        assert!(base_url.starts_with("http://127.0.0.1:"), "{line}");
        Self {
            phone: Some(phone),
            _model: model,
            sim_port,
            base_url,
            home,
        }
    }

    fn adb(&self) -> String {
        format!("127.0.0.1:{}", self.sim_port)
    }

    /// `phoneagent` with this setup's data dir and adb server.
    fn cli(&self) -> Command {
        let mut c = phoneagent();
        c.env("PHONEAGENT_HOME", self.home.path())
            .args(["--adb", &self.adb()]);
        c
    }

    /// Interactive `phoneagent run …EXTRA` (no task: it reads tasks from stdin) against this
    /// setup's phone and model.
    fn interactive_cmd(&self, extra: &[&str]) -> Command {
        let mut c = self.cli();
        c.args([
            "run",
            "--serial",
            "virtual-phone-1",
            "--base-url",
            &self.base_url,
            "--model",
            "scripted-model",
            "--coord-space",
            "relative_0_999",
        ])
        .args(extra);
        c
    }

    /// `phoneagent run TASK --json …EXTRA` against this setup's phone and model.
    fn run_cmd(&self, task: &str, extra: &[&str]) -> Command {
        let mut c = self.interactive_cmd(&["--json"]);
        c.arg(task).args(extra).stdin(Stdio::null());
        c
    }

    /// Ground truth through `phoneagent sim state`.
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

    /// `phoneagent runs --json`.
    fn runs(&self) -> Vec<Value> {
        let out = self.cli().args(["runs", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    }

    /// `phoneagent export ID --format json -o FILE`, parsed.
    fn export(&self, run_id: &str) -> Value {
        let file = self.home.path().join(format!("{run_id}.json"));
        let out = self
            .cli()
            .args(["export", &run_id[..8], "--format", "json", "-o"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
    }

    /// `phoneagent sim fault --port P JSON`.
    fn fault(&self, json: &str) {
        let out = phoneagent()
            .args(["sim", "fault", "--port", &self.sim_port.to_string(), json])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A finished `phoneagent run --json`: exit code, events (JSON lines), stderr.
struct Finished {
    code: Option<i32>,
    events: Vec<Value>,
    stderr: String,
}

impl Finished {
    fn of(out: std::process::Output) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let events = stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("not a JSON event line ({e}): {l:?}"))
            })
            .collect();
        Self {
            code: out.status.code(),
            events,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn kinds(&self) -> Vec<&str> {
        self.events
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect()
    }

    fn last(&self) -> &Value {
        let last = self.events.last().expect("no events");
        assert_eq!(last["kind"], "run_finished", "{last}");
        last
    }

    fn run_id(&self) -> String {
        self.events[0]["run_id"].as_str().unwrap().to_string()
    }

    fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["kind"] == kind).collect()
    }
}

fn run_to_end(mut cmd: Command) -> Finished {
    // Every run below takes a few seconds; a hung CLI fails the test instead of hanging CI.
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(90)) {
        Ok(out) => Finished::of(out.unwrap()),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("phoneagent run did not finish in 90 s");
        }
    }
}

#[test]
fn multi_step_task_completes_and_the_phone_and_history_agree() {
    let s = Setup::start("home", TO_CHECKOUT);
    let f = run_to_end(s.run_cmd("Put the first product of the shop in the cart", &[]));
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    let end = f.last();
    assert_eq!(end["status"], "succeeded", "{end}");
    assert_eq!(end["termination_code"], "finish_accepted");
    assert_eq!(f.of_kind("action_dispatched").len(), 4);
    assert_eq!(f.of_kind("finish_review").len(), 1, "two-stage finish");

    // Ground truth from the phone process: the product is in the cart, nothing was ordered.
    let t = s.truth();
    assert_eq!(t["cart"].as_array().unwrap().len(), 1, "{t}");
    assert_eq!(t["orders_placed"], 0, "{t}");

    // History: `runs` lists it succeeded with every event; `export` has all of them, in order.
    let run_id = f.run_id();
    let runs = s.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["event_count"], f.events.len() as u64);
    let export = s.export(&run_id);
    assert_eq!(export["schema_version"], "1.3");
    assert_eq!(export["policy"]["policy_observation"], "screenshot_only");
    let seqs: Vec<u64> = export["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..f.events.len() as u64).collect::<Vec<_>>());
}

/// `phoneagent run --direct HOST:PORT`: the task runs over PhoneAgent's own adbd transport
/// (no adb server involved: `--adb` points at a closed port), SPEC D1.
#[test]
fn run_over_the_direct_adbd_transport_completes_the_task() {
    let adbd = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = Setup::start_with("home", TO_CHECKOUT, &["--adbd-port", &adbd.to_string()]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let no_server = format!("127.0.0.1:{}", closed.local_addr().unwrap().port());
    drop(closed);
    let mut cmd = phoneagent();
    cmd.env("PHONEAGENT_HOME", s.home.path())
        .args([
            "--adb",
            &no_server,
            "--direct",
            &format!("127.0.0.1:{adbd}"),
        ])
        .args([
            "run",
            "Put the first product of the shop in the cart",
            "--base-url",
            &s.base_url,
            "--model",
            "scripted-model",
            "--coord-space",
            "relative_0_999",
            "--json",
        ])
        .stdin(Stdio::null());
    let f = run_to_end(cmd);
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    assert_eq!(f.last()["status"], "succeeded");
    assert_eq!(s.truth()["cart"].as_array().unwrap().len(), 1);
}

#[test]
fn hard_mode_with_approvals_rejected_places_no_order() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}
{"content": "finish(message=\"The user declined to submit the order.\")"}
{"content": "finish(message=\"The user declined to submit the order.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"no order was placed\"}"}
"#;
    let s = Setup::start("checkout", script);
    let f = run_to_end(s.run_cmd(
        "Buy the first product in the shop",
        &["--mode", "hard", "--on-approval", "reject"],
    ));
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    assert_eq!(
        s.truth()["orders_placed"],
        0,
        "a rejected approval must leave no order"
    );
    let gates = f.of_kind("gate_decision");
    assert!(
        gates
            .iter()
            .any(|g| g["outcome"] == "needs_approval" && g["tier"] == "hard"),
        "{gates:?}"
    );
    assert!(
        gates.iter().any(|g| g["outcome"] == "rejected"),
        "{gates:?}"
    );
    let resolved = f.of_kind("human_resolved");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert!(
        f.of_kind("action_dispatched").is_empty(),
        "no tap may reach the phone"
    );
    assert!(s.truth()["touches"].as_array().unwrap().is_empty());
}

/// Issue 11 (S14): model-written text with terminal escape sequences — in the target description,
/// the reason and the finish message — must never reach the terminal raw. The hostile target
/// clears the screen (ESC[2J), retitles the window (ESC]0;…BEL), returns the cursor (\r) and
/// draws a fake approval line for a harmless tap over the real one (确认支付, 899). In `hard`
/// mode with every approval rejected: no ESC, no C0 control but \n and \t, no C1 control in the
/// CLI's stdout or stderr, and no payment.
#[test]
fn terminal_escapes_in_model_text_never_reach_the_terminal() {
    let evil_target = "确认支付\u{1b}[2J\u{1b}[H\u{1b}]0;PhoneAgent\u{7}\r⏸ Approve tap → 「关闭通知」? [y/N]\u{9b}2K";
    let evil_reason = "Close the notice.\u{1b}[1A\u{1b}[2K\r\u{8}\u{8}ok";
    let evil_finish = "Done.\u{1b}[31m\u{1b}]8;;http://evil.example/\u{7}link\u{1b}]8;;\u{7}\u{85}";
    let tap = format!(
        "do(action=\"Tap\", element={{{{center:确认支付}}}}, target_description=\"{evil_target}\", reason=\"{evil_reason}\")"
    );
    let confirm = format!(
        "do(action=\"Tap\", element={{{{center:确认支付}}}}, target_description=\"{evil_target}\", confirm_irreversible=True, reason=\"{evil_reason}\")"
    );
    let script = [
        serde_json::json!({"content": tap}).to_string(),
        serde_json::json!({"content": confirm}).to_string(),
        serde_json::json!({"content": format!("finish(message=\"{evil_finish}\")")}).to_string(),
        serde_json::json!({"content": format!("finish(message=\"{evil_finish}\", confirm=True)")})
            .to_string(),
        r#"{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"ok\"}"}"#
            .to_string(),
    ]
    .join("\n");
    let s = Setup::start("payment", &script);
    // The human-readable timeline (no --json): what a person at a terminal sees.
    let mut cmd = s.interactive_cmd(&["--mode", "hard", "--on-approval", "reject"]);
    cmd.arg("Look at the payment page").stdin(Stdio::null());
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(s.truth()["payments_confirmed"], 0, "nothing may be paid");
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let bad: Vec<String> = text
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n' && *c != '\t') || ('\u{80}'..='\u{9f}').contains(c)
            })
            .map(|c| format!("U+{:04X}", c as u32))
            .collect();
        assert!(
            bad.is_empty(),
            "{name} carries control characters {bad:?}:\n{}",
            text.escape_debug()
        );
    }
}

#[test]
fn kill_dash_nine_mid_run_leaves_an_interrupted_run_with_its_events() {
    // The second planning call hangs, so the run is certainly mid-flight when it is killed.
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"delay_ms": 60000, "content": "do(action=\"Back\", reason=\"never answered\")"}
"#;
    let s = Setup::start("home", script);
    let mut child = s
        .run_cmd("Open the first product in the shop", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Proc(child);
    let mut seen = Vec::new();
    let mut lines = BufReader::new(stdout).lines();
    // Read events until the second planning phase starts (the slow call is in flight).
    loop {
        let l = lines
            .next()
            .expect("the run ended before the second planning call")
            .unwrap();
        let v: Value = serde_json::from_str(&l).unwrap();
        let second_plan = v["kind"] == "phase" && v["phase"] == "planning" && v["step"] == 2;
        seen.push(v);
        if second_plan {
            break;
        }
    }
    child.0.kill().unwrap(); // SIGKILL: no destructor, no handler runs in the CLI.
    child.0.wait().unwrap();
    let run_id = seen[0]["run_id"].as_str().unwrap().to_string();

    let runs = s.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "interrupted", "{:#}", runs[0]);
    // Every event the CLI had printed was committed before it was printed, and survived.
    let export = s.export(&run_id);
    let stored = export["events"].as_array().unwrap();
    assert!(
        stored.len() >= seen.len(),
        "{} < {}",
        stored.len(),
        seen.len()
    );
    for (printed, stored) in seen.iter().zip(stored) {
        assert_eq!(printed["seq"], stored["seq"]);
        assert_eq!(printed["kind"], stored["kind"]);
    }
    assert!(
        stored.iter().any(|e| e["kind"] == "action_dispatched"),
        "the dispatched tap of step 1 is in the history"
    );
    // The tap of step 1 really happened on the phone, and nothing after it.
    assert_eq!(s.truth()["current_screen"], "shop");
}

#[test]
fn device_unplugged_and_back_mid_run_is_reobserved_not_replayed() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Tap\", element={{center:shop.product.0}}, target_description=\"first product\", reason=\"Open it.\")"}
{"content": "finish(message=\"Product page open.\")"}
{"content": "finish(message=\"Product page open.\", confirm=True)"}
"#;
    let s = Setup::start("home", script);
    s.fault(r#"{"dialog_disabled":true}"#);
    let mut child = s
        .run_cmd(
            "Open the first product in the shop",
            &["--finish-verify", "off"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Proc(child);
    let mut events = Vec::new();
    let mut unplugged = false;
    for l in BufReader::new(stdout).lines() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        if !unplugged && v["kind"] == "action_dispatched" {
            // Unplug right after the first command; the phone comes back after 1 s.
            s.fault(r#"{"dialog_disabled":true,"disconnect_after_commands":0,"reconnect_after_ms":1000}"#);
            unplugged = true;
        }
        events.push(v);
    }
    let status = child.0.wait().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(status.code(), Some(0), "{kinds:?}");
    assert!(kinds.contains(&"device_lost"), "{kinds:?}");
    assert!(kinds.contains(&"device_restored"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "action_dispatched").count(),
        2,
        "the interrupted step is re-observed, not replayed: {kinds:?}"
    );
    assert_eq!(s.truth()["current_screen"], "product");
}

#[test]
fn device_gone_for_good_ends_the_run_with_a_clear_error_and_exit_1() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Back\", reason=\"never reached\")"}
"#;
    let s = Setup::start("home", script);
    let mut child = s
        .run_cmd("Open the shop", &["--device-wait", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Proc(child);
    let mut events = Vec::new();
    let mut unplugged = false;
    let t0 = Instant::now();
    for l in BufReader::new(stdout).lines() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        if !unplugged && v["kind"] == "action_dispatched" {
            s.fault(r#"{"disconnect_after_commands":0}"#); // never comes back
            unplugged = true;
        }
        events.push(v);
    }
    let status = child.0.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert_eq!(status.code(), Some(1));
    let end = events.last().unwrap();
    assert_eq!(end["kind"], "run_finished", "{end}");
    assert_eq!(end["status"], "failed");
    assert_eq!(end["termination_code"], "device_lost");
    let msg = end["message"].as_str().unwrap();
    assert!(
        msg.contains("virtual-phone-1")
            && msg.contains("did not come back within 2 s")
            && msg.contains("reconnect"),
        "{msg}"
    );
    assert_eq!(s.runs()[0]["status"], "failed");
}

#[test]
fn adb_server_gone_mid_run_is_waited_for_then_named_in_the_error() {
    // D6 counts an adb server restart as device loss: the run waits (here 2 s), then fails with
    // the last error, which names the server address and how to start it.
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "do(action=\"Back\", reason=\"never reached\")"}
"#;
    let mut s = Setup::start("home", script);
    let mut child = s
        .run_cmd("Open the shop", &["--device-wait", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Proc(child);
    let mut events = Vec::new();
    for l in BufReader::new(stdout).lines() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        if s.phone.is_some() && v["kind"] == "action_dispatched" {
            drop(s.phone.take()); // the whole virtual phone (its adb server) is killed
        }
        events.push(v);
    }
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    let end = events.last().unwrap();
    assert_eq!(end["status"], "failed", "{end}");
    assert_eq!(end["termination_code"], "device_lost", "{end}");
    let msg = end["message"].as_str().unwrap();
    assert!(
        msg.contains(&s.adb()) && msg.contains("adb start-server"),
        "{msg}"
    );
}

/// Count of dispatched device commands in a run's events.
fn dispatched(f: &Finished) -> usize {
    f.of_kind("action_dispatched").len()
}

const OPEN_SHOP: &str = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"content": "finish(message=\"The shop is open.\")"}
{"content": "finish(message=\"The shop is open.\", confirm=True)"}
"#;

#[test]
fn rate_limited_then_success_honours_retry_after() {
    let script = format!("{}\n{OPEN_SHOP}", r#"{"status": 429, "retry_after": 1}"#);
    let s = Setup::start("home", &script);
    let t0 = Instant::now();
    let f = run_to_end(s.run_cmd("Open the shop", &["--finish-verify", "off"]));
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
    assert_eq!(s.truth()["current_screen"], "shop");
    assert_eq!(dispatched(&f), 1);
}

#[test]
fn malformed_answer_then_valid_one_touches_nothing_in_between() {
    let script = format!(
        "{}\n{OPEN_SHOP}",
        r#"{"content": "Sure! ```do(action=\"Tap\", element=[500, 500])```"}"#
    );
    let s = Setup::start("home", &script);
    let f = run_to_end(s.run_cmd("Open the shop", &["--finish-verify", "off"]));
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    let rejected = f.of_kind("protocol_rejected");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(dispatched(&f), 1, "only the valid tap reached the phone");
    assert_eq!(s.truth()["touches"].as_array().unwrap().len(), 1);
}

#[test]
fn dialog_between_planning_and_dispatch_cancels_the_stale_tap_with_zero_touches() {
    // The coupon dialog appears 1.2 s after the product page opens; the first answer takes
    // 1.5 s, so its tap was planned on a screen without the dialog.
    let script = r#"
{"delay_ms": 1500, "content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", reason=\"Add to cart.\")"}
{"content": "do(action=\"Tap\", element={{center:关闭}}, target_description=\"关闭\", reason=\"Close the dialog.\")"}
{"content": "do(action=\"Tap\", element={{center:加入购物车}}, target_description=\"加入购物车\", reason=\"Add to cart.\")"}
{"content": "finish(message=\"Added.\")"}
{"content": "finish(message=\"Added.\", confirm=True)"}
"#;
    let s = Setup::start("product", script);
    s.fault(r#"{"dialog_delay_ms":1200}"#);
    let f = run_to_end(s.run_cmd("Add the product to the cart", &["--finish-verify", "off"]));
    assert_eq!(f.code, Some(0), "{}\n{:?}", f.stderr, f.kinds());
    assert!(
        f.of_kind("freshness")
            .iter()
            .any(|e| e["outcome"] == "stale"),
        "{:?}",
        f.kinds()
    );
    assert_eq!(
        dispatched(&f),
        2,
        "close + add; the stale tap never touched"
    );
    assert_eq!(s.truth()["cart"].as_array().unwrap().len(), 1);
}

#[test]
fn black_screen_sends_no_tap_and_asks_a_human() {
    let s = Setup::start("home", OPEN_SHOP);
    s.fault(r#"{"black_frames":true}"#);
    let f = run_to_end(s.run_cmd("Open the shop", &[]));
    assert_eq!(f.code, Some(1));
    assert_eq!(f.last()["termination_code"], "screenshot_blocked");
    let asked = f.of_kind("human_requested");
    assert!(
        asked.iter().any(|e| e["request"]["type"] == "take_over"),
        "{asked:?}"
    );
    assert!(s.truth()["touches"].as_array().unwrap().is_empty());
    assert!(
        f.of_kind("model_call").is_empty(),
        "no planning on a black frame"
    );
}

#[test]
fn loop_detector_replans_then_asks_for_a_takeover() {
    let tap = r#"{"content": "do(action=\"Tap\", element=[500, 5], target_description=\"status bar\", reason=\"Try again.\")"}"#;
    let script = std::iter::repeat_n(tap, 8).collect::<Vec<_>>().join("\n");
    let s = Setup::start("home", &script);
    let f = run_to_end(s.run_cmd("Open the shop", &["--max-steps", "12"]));
    assert_eq!(f.code, Some(1));
    assert_eq!(f.last()["termination_code"], "loop_detected");
    assert!(
        f.of_kind("recovery")
            .iter()
            .any(|e| e["detail"].as_str().unwrap().contains("repeated")),
        "{:?}",
        f.kinds()
    );
    assert!(
        f.of_kind("human_requested")
            .iter()
            .any(|e| e["request"]["type"] == "take_over")
    );
}

#[test]
fn ctrl_c_mid_model_call_cancels_within_a_second() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"delay_ms": 60000, "content": "do(action=\"Back\", reason=\"never answered\")"}
"#;
    let s = Setup::start("home", script);
    let mut child = s
        .run_cmd("Open the first product in the shop", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Proc(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut events = Vec::new();
    loop {
        let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let second_plan = v["kind"] == "phase" && v["phase"] == "planning" && v["step"] == 2;
        events.push(v);
        if second_plan {
            break;
        }
    }
    let t0 = Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    for l in lines {
        events.push(serde_json::from_str(&l.unwrap()).unwrap());
    }
    let status = child.0.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(status.code(), Some(1));
    let end = events.last().unwrap();
    assert_eq!(end["kind"], "run_finished", "{end}");
    assert_eq!(end["status"], "cancelled");
    assert_eq!(s.truth()["touches"].as_array().unwrap().len(), 1);
    assert_eq!(s.runs()[0]["status"], "cancelled");
}

/// `phoneagent run … | head -1`: the reader goes away mid-run. Before, the next `println!`
/// panicked (exit 101) and the run was left behind without the normal cancel path; now the
/// closed stdout cancels the run the normal way (recorded `cancelled`, no panic).
#[test]
fn closed_stdout_mid_run_cancels_the_run_instead_of_panicking() {
    let script = r#"
{"delay_ms": 1500, "content": "do(action=\"Tap\", element={{center:home.app.shop}}, target_description=\"商城\", reason=\"Open the shop.\")"}
{"delay_ms": 60000, "content": "do(action=\"Back\", reason=\"never answered\")"}
"#;
    let s = Setup::start("home", script);
    let mut child = s
        .run_cmd("Open the shop", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut child = Proc(child);
    let mut lines = BufReader::new(stdout).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["kind"], "run_started");
    drop(lines); // like `head -1`: the pipe's read end is closed
    let t0 = Instant::now();
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(status.code(), Some(101), "{err}");
    assert!(err.contains("stdout was closed"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(s.runs()[0]["status"], "cancelled", "{err}");
}

/// Output that cannot be written for another reason than a reader leaving (here a full disk)
/// is an error, not a silently truncated success.
#[test]
fn a_full_disk_on_stdout_is_an_error_not_a_silent_success() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = phoneagent()
        .args(["demo", "--list"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write the output"), "{err}");
}

/// Interactive `phoneagent run`: after a task, Ctrl-C at the `task>` prompt quits at once.
/// Before, the finished task's Ctrl-C listener took it ("cancelling…") and the prompt stayed.
#[test]
fn ctrl_c_at_the_interactive_prompt_after_a_task_quits() {
    let s = Setup::start("home", OPEN_SHOP);
    let mut child = s
        .interactive_cmd(&["--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut child = Proc(child);
    std::io::Write::write_all(&mut stdin, "Open the shop\n".as_bytes()).unwrap();
    // Wait for the second prompt: the task is over.
    let mut err = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&err).matches("task> ").count() < 2 {
        let n = std::io::Read::read(&mut stderr, &mut buf).unwrap();
        assert!(n > 0, "the CLI ended: {}", String::from_utf8_lossy(&err));
        err.extend_from_slice(&buf[..n]);
    }
    let t0 = Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            assert_eq!(status.code(), Some(130));
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "Ctrl-C at the prompt did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    assert_eq!(s.runs()[0]["status"], "succeeded");
}

/// At the interactive prompt, "help" explains and "exit" quits; neither becomes a task on the
/// phone (before, both started a run).
#[test]
fn help_and_exit_at_the_interactive_prompt_are_not_tasks() {
    let s = Setup::start("home", OPEN_SHOP);
    let mut child = s
        .interactive_cmd(&[])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, "help\nexit\n".as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Type what the phone should do"), "{err}");
    assert!(s.runs().is_empty(), "no run was started");
}

/// Start `phoneagent run` on the compose screen with a script that types into the body and
/// then hangs; returns once the typing was dispatched (ADB Keyboard is on), with the events.
fn run_until_typed(
    s: &Setup,
) -> (
    Proc,
    Vec<Value>,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut child = s
        .run_cmd("Write hello in the mail body", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Proc(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    loop {
        let l = lines.next().expect("the run ended before typing").unwrap();
        let v: Value = serde_json::from_str(&l).unwrap();
        let typed = v["kind"] == "action_dispatched" && v["action_type"] == "type_text";
        seen.push(v);
        if typed {
            break;
        }
    }
    assert_eq!(
        s.truth()["ime"],
        "com.android.adbkeyboard/.AdbIME",
        "ADB Keyboard is on while the run types"
    );
    (child, seen, lines)
}

const TYPE_THEN_HANG: &str = r#"
{"content": "do(action=\"Tap\", element={{center:mail.body}}, target_description=\"正文\", reason=\"Focus the body.\")"}
{"content": "do(action=\"Type\", text=\"hello\", reason=\"Write hello.\")"}
{"delay_ms": 60000, "content": "do(action=\"Back\", reason=\"never answered\")"}
"#;

/// D4 on SIGTERM and SIGHUP: the run is cancelled the normal way and the phone's keyboard is
/// put back before the process exits.
#[test]
fn sigterm_and_sighup_cancel_the_run_and_restore_the_keyboard() {
    for sig in ["-TERM", "-HUP"] {
        let s = Setup::start("mail_compose", TYPE_THEN_HANG);
        let (mut child, mut events, lines) = run_until_typed(&s);
        let sent = Command::new("kill")
            .args([sig, &child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        for l in lines {
            events.push(serde_json::from_str(&l.unwrap()).unwrap());
        }
        let status = child.0.wait().unwrap();
        assert_eq!(status.code(), Some(1), "{sig}");
        let end = events.last().unwrap();
        assert_eq!(end["kind"], "run_finished", "{sig}: {end}");
        assert_eq!(end["status"], "cancelled", "{sig}");
        let t = s.truth();
        assert_eq!(
            t["ime"], "com.android.inputmethod.latin/.LatinIME",
            "{sig}: {t}"
        );
        assert_eq!(t["typed_text"]["fields"]["mail.body"], "hello");
    }
}

/// D4 after SIGKILL (nothing in the process runs): the next command that opens the phone
/// (`phoneagent screenshot` here) puts the user's keyboard back from the journal.
#[test]
fn keyboard_left_by_a_killed_run_is_put_back_by_the_next_command() {
    let s = Setup::start("mail_compose", TYPE_THEN_HANG);
    let (mut child, _, _lines) = run_until_typed(&s);
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert_eq!(
        s.truth()["ime"],
        "com.android.adbkeyboard/.AdbIME",
        "left switched"
    );
    let shot = s.home.path().join("shot.png");
    let out = s
        .cli()
        .args(["screenshot", "--serial", "virtual-phone-1", "-o"])
        .arg(&shot)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.truth()["ime"],
        "com.android.inputmethod.latin/.LatinIME",
        "put back by the next command"
    );
    assert!(
        !s.home
            .path()
            .join("ime-journal")
            .join("virtual-phone-1.ime")
            .exists(),
        "the journal entry is cleared"
    );
}
