//! `phoneagent demo --mode approve-for-me` then `phoneagent approvals RUN` on the same store:
//! the virtual phone and the scripted model (also acting as the auto-reviewer), real SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn phoneagent(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phoneagent"));
    c.env("PHONEAGENT_HOME", home)
        .env("HOME", home)
        .env_remove("PHONE_AGENT_SAFETY_MODE")
        .env_remove("PHONE_AGENT_LANG");
    c
}

#[test]
fn demo_in_approve_for_me_mode_then_the_approvals_ledger() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("approval-policy.toml"),
        "max_auto_allow_risk = \"high\"\n[circuit_breaker]\nconsecutive_denials = 2\n",
    )
    .unwrap();
    let report = home.path().join("r.html");
    let out = phoneagent(home.path())
        .args([
            "demo",
            "--scenario",
            "buy",
            "--mode",
            "approve-for-me",
            "--report",
        ])
        .arg(&report)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("approve-for-me: policy from"), "{stderr}");
    assert!(stdout.contains("orders placed 1"), "{stdout}");
    assert!(
        stdout.contains("approve-for-me: tap allowed by AutoReviewer"),
        "{stdout}"
    );
    let run = stdout
        .lines()
        .find_map(|l| l.strip_prefix("approvals: `phoneagent approvals "))
        .map(|r| r.trim_end_matches('`').to_string())
        .unwrap();

    let out = phoneagent(home.path())
        .args(["approvals", &run, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<phoneagent_protocol::ApprovalReview> =
        serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2, "提交订单 and 确认支付");
    assert!(
        rows.iter()
            .all(|r| r.outcome == phoneagent_protocol::ApprovalOutcome::Allowed)
    );
    assert_eq!(
        rows.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(),
        ["提交订单", "确认支付"]
    );
    assert_eq!(rows[1].reviews_left, 18);

    let out = phoneagent(home.path())
        .args(["approvals", &run, "--lang", "zh"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("理由") && table.contains("提交订单"),
        "{table}"
    );

    let out = phoneagent(home.path())
        .args(["approvals", "ffffffff"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run matches"));
}

/// `phoneagent demo --json`: stdout is JSON lines only (the demo's banner and summary go to
/// stderr); before, 8 lines of prose were mixed in.
#[test]
fn demo_json_stdout_is_only_json_lines() {
    let home = tempfile::tempdir().unwrap();
    let out = phoneagent(home.path())
        .args(["demo", "--json", "--report"])
        .arg(home.path().join("r.html"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() > 20, "{stdout}");
    for l in &lines {
        serde_json::from_str::<serde_json::Value>(l)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"));
    }
    assert!(stderr.contains("report:"), "{stderr}");
}
