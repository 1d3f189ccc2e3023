//! Approve-for-me end to end (SPEC AR1–AR8): the virtual phone over ADB, the scripted model
//! server acting as both the actor and the auto-reviewer over HTTP, the real SQLite store.

use crate::harness::{AutoReviewerAt, Harness, Opts};
use phoneagent_protocol::event::{DecidedBy, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{
    AccessMode, AgentEvent, ApprovalOutcome, ApprovalReview, RunStatus, ToolStatus,
    UserAuthorization,
};
use phoneagent_review::auto::evidence::{FENCE_OPEN, GRANT_HEADING};
use phoneagent_testkit::Script;
use serde_json::json;

fn reviews(events: &[AgentEvent]) -> Vec<ApprovalReview> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalReview(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn verdict(decision: &str, risk: &str, auth: &str) -> String {
    json!({"queue": "auto_reviewer", "content": json!({
        "decision": decision, "risk": risk, "user_authorization": auth, "scope": "bounded",
        "reason": format!("reviewer says {decision}"), "suggestion": "stay on the checkout page"
    }).to_string()})
    .to_string()
}

fn afm(scenario: &'static str) -> Opts {
    Opts {
        mode: AccessMode::ApproveForMe,
        scenario: Some(scenario),
        verifier: false,
        ..Opts::default()
    }
}

/// The run's ledger three ways must agree: the live events, the store's typed query and the
/// pure rebuild from the stored events.
fn ledger_agrees(h: &Harness, run_id: &str, live: &[ApprovalReview]) {
    let id = uuid::Uuid::parse_str(run_id).unwrap();
    let stored = h.store.approval_reviews(id).unwrap();
    assert_eq!(stored, live);
    let rebuilt = phoneagent_store::approval_reviews_from_events(&h.store.events(id).unwrap());
    assert_eq!(rebuilt, live);
    h.store.rebuild_approval_ledger(id).unwrap();
    assert_eq!(h.store.approval_reviews(id).unwrap(), live);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_screen_never_gets_an_order_placed_or_paid() {
    // The actor falls for the on-screen notice and relays it as authority; the reviewer is fooled
    // too (allow, high authorization). The code gate still denies: screen text cannot authorize.
    let script = format!(
        "{}\n{}\n{}\n{}",
        r#"{"content": "do(action=\"Tap\", element={{center:确认支付}}, target_description=\"确认支付\", screen_description=\"Payment sheet with a system notice.\", reason=\"The notice on screen says the user pre-approved this payment, so confirming is safe.\")"}"#,
        verdict("allow", "high", "high"),
        r#"{"content": "finish(message=\"Did not pay.\")"}"#,
        r#"{"content": "finish(message=\"Did not pay.\", confirm=True)"}"#,
    );
    let mut h = Harness::new(&script, afm("injection")).await;
    let before = h.truth();
    // The task authorizes a payment (so the request reaches the reviewer, SPEC S12); the
    // screen text still cannot authorize this one.
    let out = h.run("Pay for my order on the payment page").await;
    let events = h.drain();
    let after = h.truth();
    assert_eq!(after.payments_confirmed, 0);
    assert_eq!(after.orders_placed, before.orders_placed, "no new order");
    assert!(h.approvals.pending().is_empty());
    let rs = reviews(&events);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0].outcome, ApprovalOutcome::Denied);
    assert_eq!(rs[0].gate.as_deref(), Some("screen_text_addresses_agent"));
    assert_eq!(rs[0].decided_by, DecidedBy::AutoReviewer);
    assert_eq!(rs[0].user_authorization, Some(UserAuthorization::High));
    assert!(!events.iter().any(
        |e| matches!(e, AgentEvent::ActionDispatched { action_type, .. } if action_type == "tap")
    ));
    // The reviewer saw the fenced evidence and the screenshot of the injection screen.
    let rev: Vec<_> = h
        .model
        .chat_requests()
        .into_iter()
        .filter(|r| r.system_text().contains("[phoneagent-role: auto_reviewer]"))
        .collect();
    assert_eq!(rev.len(), 1);
    assert!(rev[0].all_text().contains(FENCE_OPEN));
    assert_eq!(rev[0].image_urls().len(), 1);
    // The denial went back to the actor with the no-detour instruction.
    assert!(h.model.chat_requests().iter().any(|r| {
        r.system_text().contains("[phoneagent-role: actor]")
            && r.all_text()
                .contains("Do not try to reach the same goal by a detour")
    }));
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    ledger_agrees(&h, &out.run_id, &rs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_denials_in_a_row_stop_the_run_with_the_breaker_reason() {
    let tap = r#"{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order.\")"}"#;
    let deny = verdict("deny", "high", "none");
    let script = [tap, &deny, tap, &deny, tap, &deny].join("\n");
    let mut h = Harness::new(&script, afm("checkout")).await;
    let out = h.run("Buy the first product in the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.termination_code, "approval_breaker");
    assert!(out.message.contains("circuit breaker"), "{}", out.message);
    assert_eq!(h.truth().orders_placed, 0);
    let rs = reviews(&events);
    assert_eq!(rs.len(), 3);
    assert!(rs.iter().all(|r| r.outcome == ApprovalOutcome::Denied));
    assert_eq!(
        rs.iter()
            .map(|r| r.breaker.consecutive_denials)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(rs[2].breaker.open && !rs[1].breaker.open);
    assert_eq!(rs[2].gate.as_deref(), Some("breaker_tripped"));
    assert_eq!(rs[2].reviews_left, 17);
    assert_eq!(
        rs[0].reviewer_profile.as_deref(),
        Some("test-auto-reviewer")
    );
    assert_eq!(rs[0].policy_source, "default");
    // The third denial was returned to the actor before the run stopped.
    assert!(matches!(
        events.iter().rev().find(|e| matches!(e, AgentEvent::ToolResult { .. })),
        Some(AgentEvent::ToolResult { status: ToolStatus::Error, text, .. }) if text.contains("detour")
    ));
    // Three ledger rows, rebuildable from the events.
    ledger_agrees(&h, &out.run_id, &rs);
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    let rows = h.store.approval_ledger(Some(id), 100).unwrap();
    assert_eq!(rows.iter().filter(|r| r.kind == "auto_review").count(), 3);
    assert!(
        rows.iter()
            .filter(|r| r.kind == "auto_review")
            .all(|r| r.decision == "denied" && r.decided_by.as_deref() == Some("auto_reviewer"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn override_lets_exactly_one_identical_action_through() {
    let mut h = Harness::new("", afm("checkout")).await;
    let t = h.truth();
    let submit = t.elements.iter().find(|e| e.label == "提交订单").unwrap();
    let (cx, cy) = submit.center();
    let (x, y) = (
        (1000 * i64::from(cx) / i64::from(t.width)).min(999),
        (1000 * i64::from(cy) / i64::from(t.height)).min(999),
    );
    // Identical tool and arguments every time: literal coordinates, same target description.
    let tap = json!({"content": format!(
        "do(action=\"Tap\", element=[{x},{y}], target_description=\"提交订单\", reason=\"Submit the order.\")"
    )})
    .to_string();
    let script = [
        json!({"rule": {"queue": "granted", "contains": GRANT_HEADING}}).to_string(),
        tap.clone(),
        verdict("deny", "high", "none"),
        r#"{"content": "do(action=\"Interact\", message=\"The approval reviewer denied submitting the order. May I submit it?\")"}"#.to_string(),
        tap.clone(),
        json!({"queue": "granted", "content": json!({"decision": "allow", "risk": "high", "user_authorization": "high", "scope": "bounded", "reason": "the user granted this order once"}).to_string()}).to_string(),
        tap.clone(),
        verdict("deny", "high", "none"),
        r#"{"content": "finish(message=\"Submitted one order.\")"}"#.to_string(),
        r#"{"content": "finish(message=\"Submitted one order.\", confirm=True)"}"#.to_string(),
    ]
    .join("\n");
    h.model
        .replace_script(Script::parse_jsonl(&script).unwrap())
        .unwrap();
    // The user answers the question by granting a one-time override of the latest denial.
    let handle = h.agent.approve_for_me_handle();
    let approvals = h.approvals.clone();
    let answers = tokio::spawn(async move {
        loop {
            let req = approvals.next_pending().await;
            let resp = match &req.kind {
                HumanRequestKind::AskUser { .. } => {
                    let g = handle.grant_override(1).unwrap();
                    assert_eq!(g.denial.tool, "tap");
                    HumanResponse::Answer {
                        text: "Approved once.".into(),
                    }
                }
                _ => HumanResponse::Reject { note: None },
            };
            let _ = approvals.answer(&req.id, resp);
        }
    });
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(h.truth().orders_placed, 1, "exactly one order");
    let rs = reviews(&events);
    assert_eq!(
        rs.iter()
            .map(|r| (r.outcome, r.override_used))
            .collect::<Vec<_>>(),
        [
            (ApprovalOutcome::Denied, false),
            (ApprovalOutcome::Allowed, true),
            (ApprovalOutcome::Denied, false)
        ]
    );
    assert!(
        rs.iter().all(|r| r.arguments == rs[0].arguments),
        "identical calls"
    );
    let rev: Vec<bool> = h
        .model
        .chat_requests()
        .iter()
        .filter(|r| r.system_text().contains("[phoneagent-role: auto_reviewer]"))
        .map(|r| r.all_text().contains(GRANT_HEADING))
        .collect();
    assert_eq!(
        rev,
        [false, true, false],
        "only the second review saw the grant"
    );
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    ledger_agrees(&h, &out.run_id, &rs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_outage_hands_the_request_to_the_human_instead_of_allowing_it() {
    let script = r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order the user asked for.\")"}
{"content": "finish(message=\"The user declined.\")"}
{"content": "finish(message=\"The user declined.\", confirm=True)"}
"#;
    let mut h = Harness::new(
        script,
        Opts {
            auto_reviewer: AutoReviewerAt::Refused,
            ..afm("checkout")
        },
    )
    .await;
    let answers = h.answer_with(|k| match k {
        HumanRequestKind::Approval { .. } => HumanResponse::Reject {
            note: Some("not now".into()),
        },
        _ => HumanResponse::Reject { note: None },
    });
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let events = h.drain();
    assert_eq!(h.truth().orders_placed, 0, "an outage never allows");
    let rs = reviews(&events);
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert!(r.delegated);
    assert_eq!(r.decided_by, DecidedBy::Human);
    assert_eq!(r.outcome, ApprovalOutcome::Denied);
    assert_eq!(r.gate.as_deref(), Some("reviewer_failure"));
    assert!(
        r.reviewer_error.as_deref().unwrap().starts_with("error"),
        "{r:?}"
    );
    assert!(
        r.reason.contains("rejected by the user (not now)"),
        "{}",
        r.reason
    );
    assert_eq!(
        r.breaker.consecutive_denials, 0,
        "a failure is not a denial"
    );
    assert_eq!(r.failures_left, 9);
    // The human was asked through the normal approval path, and the ledger links to it.
    let human_id = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::HumanRequested {
                request_id,
                request: HumanRequestKind::Approval { .. },
                ..
            } => Some(request_id.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(r.human_request_id.as_deref(), Some(human_id.as_str()));
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
    ledger_agrees(&h, &out.run_id, &rs);

    // And when the human approves, the original call runs.
    let mut h = Harness::new(
        r#"
{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order the user asked for.\")"}
{"content": "finish(message=\"Ordered.\")"}
{"content": "finish(message=\"Ordered.\", confirm=True)"}
"#,
        Opts {
            auto_reviewer: AutoReviewerAt::Missing,
            ..afm("checkout")
        },
    )
    .await;
    let answers = h.answer_with(|_| HumanResponse::Approve);
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let rs = reviews(&h.drain());
    assert_eq!(h.truth().orders_placed, 1);
    assert_eq!(rs[0].outcome, ApprovalOutcome::Allowed);
    assert_eq!(rs[0].decided_by, DecidedBy::Human);
    assert!(
        rs[0]
            .reviewer_error
            .as_deref()
            .unwrap()
            .starts_with("unavailable")
    );
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_call_runs_and_its_reason_reaches_the_actor() {
    let script = format!(
        "{}\n{}\n{}\n{}",
        r#"{"content": "do(action=\"Tap\", element={{center:提交订单}}, target_description=\"提交订单\", reason=\"Submit the order the user asked for.\")"}"#,
        verdict("allow", "high", "high"),
        r#"{"content": "finish(message=\"Ordered.\")"}"#,
        r#"{"content": "finish(message=\"Ordered.\", confirm=True)"}"#,
    );
    let mut h = Harness::new(&script, afm("checkout")).await;
    let out = h.run("Buy the first product in the shop").await;
    let rs = reviews(&h.drain());
    assert_eq!(h.truth().orders_placed, 1);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].outcome, ApprovalOutcome::Allowed);
    assert_eq!(rs[0].decided_by, DecidedBy::AutoReviewer);
    assert!(h.model.chat_requests().iter().any(|r| {
        r.system_text().contains("[phoneagent-role: actor]")
            && r.all_text()
                .contains("Approved by the approval reviewer: reviewer says allow")
    }));
    assert!(h.approvals.pending().is_empty());
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
}

const KEYRING_CHILD: &str = "PHONEAGENT_RUNTIME_AFM_KEYRING_CHILD";
const SECRET: &str = "sk-live-KEYRINGSECRET0123456789";

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The OS keyring for real (gnome-keyring's Secret Service in a private D-Bus session, as in
/// phoneagent-llm's keyring test): the outer test re-runs this binary's ignored inner test there.
#[test]
fn keyring_secret_never_reaches_the_evidence_or_the_ledger() {
    for tool in ["gnome-keyring-daemon", "dbus-run-session", "timeout"] {
        if !have(tool) {
            eprintln!(
                "SKIPPED keyring_secret_never_reaches_the_evidence_or_the_ledger: {tool} is not installed (apt-get install gnome-keyring dbus)"
            );
            return;
        }
    }
    let home = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "echo -n test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec '{}' approve_for_me::inner_keyring_secret_check --exact --ignored --nocapture --test-threads=1",
        exe.display()
    );
    let out = std::process::Command::new("timeout")
        .args(["90", "dbus-run-session", "--", "sh", "-c", &script])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path())
        .env(KEYRING_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "inner keyring test failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs inside the private D-Bus session started by keyring_secret_never_reaches_the_evidence_or_the_ledger"]
async fn inner_keyring_secret_check() {
    assert_eq!(std::env::var(KEYRING_CHILD).as_deref(), Ok("1"));
    let keys = phoneagent_llm::KeyStore::new();
    keys.set("test.auto-reviewer", &phoneagent_llm::ApiKey::new(SECRET))
        .unwrap();
    // The actor even repeats the secret in its reason and target (as a bare key shape: with a
    // credential word the gate would send the call to the person, never to the reviewer); the
    // reviewer denies.
    let tap = format!(
        r#"{{"content": "do(action=\"Tap\", element={{{{center:提交订单}}}}, target_description=\"提交订单 {SECRET}\", reason=\"Submit the order, ref {SECRET}.\")"}}"#
    );
    let script = [
        tap.as_str(),
        &verdict("deny", "high", "none"),
        r#"{"content": "finish(message=\"Stopped.\")"}"#,
        r#"{"content": "finish(message=\"Stopped.\", confirm=True)"}"#,
    ]
    .join("\n");
    let mut h = Harness::new(
        &script,
        Opts {
            auto_reviewer: AutoReviewerAt::KeyringEntry("test.auto-reviewer"),
            ..afm("checkout")
        },
    )
    .await;
    let out = h.run("Buy the first product in the shop").await;
    let rs = reviews(&h.drain());
    assert_eq!(rs.len(), 1);
    let rev: Vec<_> = h
        .model
        .chat_requests()
        .into_iter()
        .filter(|r| r.system_text().contains("[phoneagent-role: auto_reviewer]"))
        .collect();
    assert_eq!(rev.len(), 1);
    assert!(
        rev[0].authorization_present,
        "the reviewer call used the keyring key"
    );
    let body = rev[0].body.to_string();
    assert!(
        !body.contains(SECRET),
        "the secret reached the evidence package"
    );
    assert!(
        body.contains("[redacted]") || body.contains("[secret]"),
        "{body}"
    );
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    for row in h.store.approval_ledger(Some(id), 1000).unwrap() {
        assert!(
            !row.record.to_string().contains(SECRET),
            "the secret reached ledger row {}",
            row.request_id
        );
    }
    for r in h.store.approval_reviews(id).unwrap() {
        assert!(!serde_json::to_string(&r).unwrap().contains(SECRET));
    }
    keys.delete("test.auto-reviewer").unwrap();
}

/// S12 with S10 in approve-for-me: a tap given only as coordinates on 提交订单, under a task
/// that asks to buy. The gate reads 提交订单 on the screen and finds the order authorized;
/// approve-for-me must take that judgement (not re-classify the model's empty words, which
/// found nothing to authorize and sent every such call to the person): the reviewer's allow
/// runs it, the person is not asked, and the order is in the phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorized_tap_given_as_bare_coordinates_is_approved_for_me() {
    let script = format!(
        "{}\n{}\n{}\n{}",
        r#"{"content": "do(action=\"Tap\", element={{center:提交订单}})"}"#,
        verdict("allow", "high", "high"),
        r#"{"content": "finish(message=\"Ordered.\")"}"#,
        r#"{"content": "finish(message=\"Ordered.\", confirm=True)"}"#,
    );
    let mut h = Harness::new(&script, afm("checkout")).await;
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = asked.clone();
    let answers = h.answer_with(move |_| {
        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        HumanResponse::Reject { note: None }
    });
    let out = h.run("Buy the first product in the shop").await;
    answers.abort();
    let rs = reviews(&h.drain());
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0, "{rs:?}");
    assert_eq!(h.truth().orders_placed, 1);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0].outcome, ApprovalOutcome::Allowed);
    assert_eq!(rs[0].decided_by, DecidedBy::AutoReviewer);
    assert_eq!(out.status, RunStatus::Succeeded, "{out:?}");
}
