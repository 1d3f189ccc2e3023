//! `phoneagent mcp` driven by a real MCP client (SPEC C4, issue #13 item 4): the official Python
//! SDK (`pip install mcp`, scripts/install-deps.sh) runs `tests/mcp/mcp_client.py`, which spawns
//! `phoneagent mcp` over stdio against the virtual phone (ADB on loopback) and the scripted model
//! (HTTP on loopback), both in this process. Each phase checks the phone's ground truth here.
//!
//! Without an importable `mcp` module the test is skipped with a message, unless
//! `PHONEAGENT_REQUIRE_MCP_CLIENT` is set (scripts/test.sh sets it): then it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use phoneagent_sim::{SimConfig, SimServer};
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};
use serde_json::Value;

const BUY: &str = include_str!("../../phoneagent-testkit/demo/buy.jsonl");

/// Tap 提交订单 on the checkout screen, then the two-stage finish.
const SUBMIT: &str = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}
{"content": "finish(message=\"Submitted the order.\")"}
{"content": "finish(message=\"Submitted the order.\", confirm=True)"}
{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"ok\"}"}
"#;

fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/mcp_client.py")
}

/// True when `python3 -c "import mcp"` works; else skip (or fail when required).
fn python_mcp_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var_os("PHONEAGENT_REQUIRE_MCP_CLIENT").is_some() {
            panic!(
                "PHONEAGENT_REQUIRE_MCP_CLIENT is set but python3 cannot import `mcp`: run scripts/install-deps.sh (pip install mcp)"
            );
        }
        eprintln!(
            "SKIPPED: python3 cannot import the MCP client SDK `mcp` (pip install mcp, or scripts/install-deps.sh); set PHONEAGENT_REQUIRE_MCP_CLIENT=1 to make this a failure"
        );
    }
    ok
}

struct Rig {
    sim: SimServer,
    model: ScriptedModel,
    home: tempfile::TempDir,
}

impl Rig {
    /// Run one client phase against `phoneagent mcp --mode MODE --on-approval WHO`.
    async fn phase(&self, phase: &str, mode: &str, who: &str) -> Value {
        let adb = format!("127.0.0.1:{}", self.sim.port());
        let base_url = self.model.base_url();
        let mut c = Command::new("python3");
        c.arg(client_script())
            .arg(phase)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_phoneagent"))
            .args([
                "--adb",
                &adb,
                "mcp",
                "--serial",
                "virtual-phone-1",
                "--base-url",
                &base_url,
                "--model",
                "scripted-model",
                "--coord-space",
                "relative_0_999",
                "--capture",
                "png",
                "--mode",
                mode,
                "--on-approval",
                who,
            ])
            .env("PHONEAGENT_HOME", self.home.path());
        for var in [
            "ANDROID_SERIAL",
            "PHONE_AGENT_API_KEY",
            "PHONE_AGENT_SAFETY_MODE",
            "PHONE_AGENT_VERIFIER_MODEL",
            "PHONE_AGENT_SAFETY_REVIEWER_MODEL",
            "PHONE_AGENT_AUTO_REVIEWER_MODEL",
            "PHONEAGENT_CAPTURE",
            "RUST_LOG",
        ] {
            c.env_remove(var);
        }
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(180),
            tokio::task::spawn_blocking(move || c.output().unwrap()),
        )
        .await
        .expect("the MCP client finished in time")
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "phase {phase} failed:\n{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("phase {phase}: no JSON result ({e}):\n{stdout}\n{stderr}"))
    }

    fn restart(&self, screen: &str, script: &str) {
        self.sim
            .phone("virtual-phone-1")
            .unwrap()
            .reset(screen)
            .unwrap();
        self.model
            .replace_script(Script::parse_jsonl(script).unwrap())
            .unwrap();
    }

    fn truth(&self) -> phoneagent_sim::GroundTruth {
        self.sim.phone("virtual-phone-1").unwrap().ground_truth()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_client_lists_tools_runs_a_task_and_cannot_approve_its_own_order() {
    if !python_mcp_available() {
        return;
    }
    let sim = SimServer::start(SimConfig::default(), 0).await.unwrap();
    let model = ScriptedModel::start(ScriptedModelConfig {
        script: Script::parse_jsonl(BUY).unwrap(),
        sim: Some(SimTarget {
            port: sim.port(),
            serial: Some("virtual-phone-1".into()),
        }),
        ..ScriptedModelConfig::default()
    })
    .await
    .unwrap();
    let rig = Rig {
        sim,
        model,
        home: tempfile::tempdir().unwrap(),
    };

    // Tools, devices, a screenshot as image content.
    let t = rig.phase("tools", "wary", "wait").await;
    assert_eq!(t["server"], "phoneagent");
    assert_eq!(t["serials"], serde_json::json!(["virtual-phone-1"]), "{t}");
    assert!(t["screenshot"]["width"].as_u64().unwrap() > 0, "{t}");
    assert!(
        t["instructions"].as_str().unwrap().contains("`wary` mode"),
        "{t}"
    );

    // The demo's task in wary mode: the gate warns, the model confirms, one order is paid.
    let b = rig.phase("buy", "wary", "wait").await;
    assert_eq!(b["status"], "succeeded", "{b}");
    assert_eq!(b["busy"], "busy", "{b}");
    assert_eq!(b["trajectory_schema"], "1.3", "{b}");
    assert!(b["trajectory_events"].as_u64().unwrap() > 10, "{b}");
    let kinds: Vec<&str> = b["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    let t = rig.truth();
    assert_eq!((t.orders_placed, t.payments_confirmed), (1, 1), "{t:?}");

    // Hard mode: the approval is the person's. The client's own approval is refused, the
    // request stays pending, the client cancels: no order.
    rig.restart("checkout", SUBMIT);
    let r = rig.phase("refuse", "hard", "wait").await;
    assert_eq!(r["mode"], "hard");
    assert_eq!(r["pending_kind"], "approval", "{r}");
    assert_eq!(r["answered_by"], "the person only", "{r}");
    assert_eq!(r["self_approval"]["error"], "not_delegated", "{r}");
    assert!(
        r["self_approval"]["message"]
            .as_str()
            .unwrap()
            .contains("only the person"),
        "{r}"
    );
    assert_eq!(r["still_pending"], 1, "{r}");
    assert_eq!(r["status"], "cancelled", "{r}");
    let t = rig.truth();
    assert_eq!(
        t.orders_placed, 0,
        "the self-approval placed no order: {t:?}"
    );
    assert!(t.touches.is_empty(), "no tap reached the phone: {t:?}");

    // The person's standing answer (`--on-approval approve`) approves: one order.
    rig.restart("checkout", SUBMIT);
    let p = rig.phase("person", "hard", "approve").await;
    assert_eq!(p["status"], "succeeded", "{p}");
    assert!(
        p["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "human_resolved"),
        "{p}"
    );
    assert_eq!(rig.truth().orders_placed, 1);
}
