//! Storage behaviour: migrations, WAL, events, screenshots, interrupted runs, concurrency,
//! settings, calibration cache, approval ledger.

use std::sync::Arc;

use phoneagent_store::{EventRecord, NewRun, RunEnd, RunStatus, Store, StoreError, StoreOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::fixture;

fn ev(seq: u64, kind: &str, payload: serde_json::Value) -> EventRecord {
    EventRecord {
        seq,
        ts_ms: 1_000 + i64::try_from(seq).unwrap(),
        kind: kind.into(),
        payload,
    }
}

fn end(status: RunStatus) -> RunEnd {
    RunEnd {
        status,
        ended_ms: 9_999,
        termination_code: Some("finish_accepted".into()),
        summary: json!({"message": "done"}),
        prompt_tokens: 10,
        completion_tokens: 2,
        cost_usd: Some(0.5),
    }
}

#[test]
fn migrates_from_empty_file_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/phoneagent.sqlite3");
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), 1);
    assert_eq!(s.path(), Some(path.as_path()));
    assert!(s.list_runs(10).unwrap().is_empty());
    drop(s);
    // Reopening an up-to-date database is a no-op migration.
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), 1);
}

#[test]
fn refuses_a_database_from_a_newer_version_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Migrate { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("newer PhoneAgent"), "{msg}");
    assert!(msg.contains("PHONEAGENT_HOME"), "{msg}");
}

#[test]
fn not_a_database_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.sqlite3");
    std::fs::write(&path, vec![0x42u8; 4096]).unwrap();
    let msg = Store::open(&path).unwrap_err().to_string();
    assert!(msg.contains("junk.sqlite3"), "{msg}");
}

#[test]
fn wal_mode_is_on_for_file_stores() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let s = Store::open(&path).unwrap();
    assert_eq!(s.journal_mode().unwrap(), "wal");
    let run = NewRun::new("wal");
    s.start_run(&run).unwrap();
    s.append_event(run.id, &ev(0, "phase", json!({"phase": "observing"})))
        .unwrap();
    assert!(dir.path().join("phoneagent.sqlite3-wal").exists());
}

#[test]
fn events_round_trip_in_order_with_unicode_payloads() {
    let s = Store::open_in_memory().unwrap();
    let run = NewRun::new("打开设置 🚀");
    s.start_run(&run).unwrap();
    // Appended out of order on purpose: reads come back ordered by seq.
    for seq in [2u64, 0, 1, 3] {
        s.append_event(
            run.id,
            &ev(seq, "note", json!({"message": format!("第{seq}步 ✓"), "step": seq, "nested": {"a": [1, 2.5, null]}})),
        )
        .unwrap();
    }
    let got = s.events(run.id).unwrap();
    assert_eq!(
        got.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        got[1],
        ev(
            1,
            "note",
            json!({"message": "第1步 ✓", "step": 1, "nested": {"a": [1, 2.5, null]}})
        )
    );
    assert_eq!(s.last_seq(run.id).unwrap(), Some(3));
    let tail = s.events_after(run.id, Some(1)).unwrap();
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3]);
    let rec = s.run(run.id).unwrap().unwrap();
    assert_eq!(rec.event_count, 4);
    assert_eq!(rec.step_count, 3);
    assert_eq!(rec.task, "打开设置 🚀");
}

#[test]
fn envelope_conversion_round_trips_agent_events() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let events = s.events(rec.run_id).unwrap();
    assert_eq!(events.len(), rec.events);
    for e in &events {
        let env = e
            .to_envelope(rec.run_id)
            .unwrap_or_else(|| panic!("event {} ({}) did not decode", e.seq, e.kind));
        assert_eq!(env.event.kind(), e.kind);
        assert_eq!(EventRecord::from_envelope(&env).unwrap(), *e);
    }
}

#[test]
fn run_finished_event_ends_the_run_with_its_totals() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let run = s.run(rec.run_id).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.ended_ms, Some(1_700_000_042_000));
    assert_eq!(run.duration_ms(), Some(42_000));
    assert_eq!(run.termination_code.as_deref(), Some("finish_accepted"));
    assert_eq!((run.prompt_tokens, run.completion_tokens), (4000, 200));
    assert_eq!(run.cost_usd, Some(0.004));
    assert_eq!(run.summary["message"], "Wi-Fi is on");
    assert_eq!(run.step_count, 4);
    assert_eq!(run.event_count, rec.events as u64);
    // The runtime may still call finish_run with the same outcome afterwards: it refines the
    // record instead of failing.
    let mut again = end(RunStatus::Succeeded);
    again.ended_ms = 1_700_000_042_500;
    s.finish_run(rec.run_id, &again).unwrap();
    let run = s.run(rec.run_id).unwrap().unwrap();
    assert_eq!(run.ended_ms, Some(1_700_000_042_500));
    assert_eq!(run.summary, json!({"message": "done"}));
}

#[test]
fn envelope_with_a_bad_run_id_is_refused() {
    let s = Store::open_in_memory().unwrap();
    let env = phoneagent_protocol::EventEnvelope {
        run_id: "not-a-uuid".into(),
        seq: 0,
        ts_ms: 1,
        step: 0,
        event: phoneagent_protocol::AgentEvent::Phase {
            phase: phoneagent_protocol::Phase::Observing,
        },
    };
    let err = s.append_envelope(&env).unwrap_err();
    assert!(
        matches!(err, StoreError::BadRunId(ref id) if id == "not-a-uuid"),
        "{err:?}"
    );
}

#[test]
fn duplicate_seq_and_unknown_run_are_refused() {
    let s = Store::open_in_memory().unwrap();
    let run = NewRun::new("dup");
    s.start_run(&run).unwrap();
    s.append_event(run.id, &ev(0, "phase", json!({}))).unwrap();
    let err = s
        .append_event(run.id, &ev(0, "phase", json!({})))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateEvent { seq: 0, .. }),
        "{err:?}"
    );
    let stranger = uuid::Uuid::new_v4();
    let err = s
        .append_event(stranger, &ev(0, "phase", json!({})))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownRun(id) if id == stranger),
        "{err:?}"
    );
    assert!(err.to_string().contains("phoneagent runs"));
    // A failed batch leaves nothing behind.
    let err = s
        .append_events(run.id, &[ev(1, "a", json!({})), ev(0, "b", json!({}))])
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateEvent { seq: 0, .. }));
    assert_eq!(s.events(run.id).unwrap().len(), 1);
    assert!(matches!(
        s.start_run(&run),
        Err(StoreError::DuplicateRun(_))
    ));
}

#[test]
fn run_lifecycle_and_listing_newest_first() {
    let s = Store::open_in_memory().unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut run = NewRun::new(format!("task {i}"));
        run.started_ms = 1_000 * (i + 1);
        run.device_serial = Some("SER".into());
        run.metadata = json!({"max_steps": 20});
        s.start_run(&run).unwrap();
        ids.push(run.id);
    }
    s.finish_run(ids[0], &end(RunStatus::Succeeded)).unwrap();
    let err = s.finish_run(ids[0], &end(RunStatus::Failed)).unwrap_err();
    assert!(matches!(err, StoreError::RunAlreadyEnded(_)));
    let err = s
        .finish_run(uuid::Uuid::new_v4(), &end(RunStatus::Failed))
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownRun(_)));

    let list = s.list_runs(10).unwrap();
    assert_eq!(
        list.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1], ids[0]]
    );
    let done = &list[2];
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.ended_ms, Some(9_999));
    assert_eq!(done.duration_ms(), Some(9_999 - 1_000));
    assert_eq!(done.prompt_tokens, 10);
    assert_eq!(done.cost_usd, Some(0.5));
    assert_eq!(done.summary, json!({"message": "done"}));
    assert_eq!(done.metadata, json!({"max_steps": 20}));
    assert_eq!(list[0].status, RunStatus::Running);
    assert_eq!(s.list_runs(1).unwrap().len(), 1);

    let prefix = &ids[1].to_string()[..8];
    assert_eq!(s.find_runs_by_prefix(prefix).unwrap(), vec![ids[1]]);
    assert!(s.find_runs_by_prefix("zz").unwrap().is_empty());
}

#[test]
fn screenshots_are_stored_once_by_content_hash() {
    let s = Store::open_in_memory().unwrap();
    let a = fixture::png(20, 40, 1);
    let b = fixture::png(20, 40, 2);
    let ha = s.put_screenshot(&a, "image/png", 20, 40).unwrap();
    let ha2 = s.put_screenshot(&a, "image/png", 20, 40).unwrap();
    let hb = s.put_screenshot(&b, "image/png", 20, 40).unwrap();
    assert_eq!(ha, ha2);
    assert_ne!(ha, hb);
    assert_eq!(ha.len(), 64);
    assert_eq!(ha, phoneagent_store::sha256_hex(&a));
    assert_eq!(s.screenshot_count().unwrap(), 2);
    let got = s.screenshot(&ha.to_uppercase()).unwrap().unwrap();
    assert_eq!(got.bytes, a);
    assert_eq!(
        (got.mime.as_str(), got.width, got.height),
        ("image/png", 20, 40)
    );
    assert!(s.screenshot(&"0".repeat(64)).unwrap().is_none());
}

#[test]
fn crash_leftover_running_run_is_marked_interrupted_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let run = NewRun::new("will crash");
    {
        let s = Store::open(&path).unwrap();
        s.start_run(&run).unwrap();
        for seq in 0..3 {
            s.append_event(run.id, &ev(seq, "phase", json!({"step": 1})))
                .unwrap();
        }
        // Dropped without finish_run: what a crashed process leaves behind.
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.interrupted_at_open(), 1);
    let rec = s.run(run.id).unwrap().unwrap();
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert_eq!(rec.termination_code.as_deref(), Some("interrupted"));
    assert_eq!(
        rec.ended_ms,
        Some(1_002),
        "ended at the last committed event"
    );
    assert_eq!(s.events(run.id).unwrap().len(), 3);
    // Idempotent, and a finished-by-crash run cannot be finished again.
    assert_eq!(s.mark_interrupted_runs().unwrap(), 0);
    assert!(matches!(
        s.finish_run(run.id, &end(RunStatus::Succeeded)),
        Err(StoreError::RunAlreadyEnded(_))
    ));
}

#[test]
fn a_run_live_in_another_handle_is_not_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let a = Store::open(&path).unwrap();
    let live = NewRun::new("live in A");
    a.start_run(&live).unwrap();
    // B is like a second process (the app, or `phoneagent runs`) opening the same file.
    let b = Store::open(&path).unwrap();
    assert_eq!(b.interrupted_at_open(), 0);
    assert_eq!(b.run(live.id).unwrap().unwrap().status, RunStatus::Running);
    assert_eq!(b.mark_interrupted_runs().unwrap(), 0);
    // A's run is visible to B while it runs, and A finishes it normally.
    a.append_event(live.id, &ev(0, "phase", json!({}))).unwrap();
    assert_eq!(b.events(live.id).unwrap().len(), 1);
    a.finish_run(live.id, &end(RunStatus::Succeeded)).unwrap();

    let dying = NewRun::new("A dies");
    a.start_run(&dying).unwrap();
    assert_eq!(b.mark_interrupted_runs().unwrap(), 0);
    drop(a);
    assert_eq!(b.mark_interrupted_runs().unwrap(), 1);
    assert_eq!(
        b.run(dying.id).unwrap().unwrap().status,
        RunStatus::Interrupted
    );
    assert_eq!(
        b.run(live.id).unwrap().unwrap().status,
        RunStatus::Succeeded
    );
}

#[test]
fn concurrent_writers_from_threads_and_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let s1 = Store::open(&path).unwrap();
    // A second, independent handle on the same file (another "process").
    let s2 = Store::open_with(&path, StoreOptions::default()).unwrap();
    let per_thread = 100u64;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let s = s2.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let runs = s.list_runs(100).unwrap();
                for r in runs {
                    let evs = s.events(r.id).unwrap();
                    // Readers only ever see a gap-free prefix of each run's events.
                    assert!(evs.iter().enumerate().all(|(i, e)| e.seq == i as u64));
                }
                reads += 1;
            }
            reads
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let s = if t % 2 == 0 { s1.clone() } else { s2.clone() };
            std::thread::spawn(move || {
                let run = NewRun::new(format!("thread {t}"));
                s.start_run(&run).unwrap();
                for seq in 0..per_thread {
                    s.append_event(run.id, &ev(seq, "note", json!({"t": t, "seq": seq})))
                        .unwrap();
                    if seq.is_multiple_of(50) {
                        s.put_screenshot(&fixture::png(8, 8, 7), "image/png", 8, 8)
                            .unwrap();
                    }
                }
                s.finish_run(run.id, &end(RunStatus::Succeeded)).unwrap();
                run.id
            })
        })
        .collect();
    let ids: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    for id in ids {
        let r = s1.run(id).unwrap().unwrap();
        assert_eq!(r.event_count, per_thread);
        assert_eq!(r.status, RunStatus::Succeeded);
    }
    assert_eq!(
        s1.screenshot_count().unwrap(),
        1,
        "same bytes from four threads stored once"
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Profile {
    base_url: String,
    model: String,
    api_key_env: Option<String>,
    max_tokens: u32,
}

#[test]
fn settings_are_typed_and_refuse_secrets() {
    let s = Store::open_in_memory().unwrap();
    assert_eq!(s.setting::<Profile>("profile.actor").unwrap(), None);
    let p = Profile {
        base_url: "http://127.0.0.1:8000/v1".into(),
        model: "autoglm-phone-9b".into(),
        api_key_env: Some("OPENAI_API_KEY".into()),
        max_tokens: 3000,
    };
    s.set_setting("profile.actor", &p).unwrap();
    assert_eq!(s.setting::<Profile>("profile.actor").unwrap(), Some(p));
    s.set_setting("safety.mode", "hard").unwrap();
    s.set_setting("safety.mode", "wary").unwrap();
    assert_eq!(
        s.setting::<String>("safety.mode").unwrap().as_deref(),
        Some("wary")
    );
    // Wrong type: a clear JSON error naming the setting.
    let err = s.setting::<u32>("safety.mode").unwrap_err();
    assert!(err.to_string().contains("setting 'safety.mode'"), "{err}");

    let err = s
        .set_setting(
            "profile.cloud",
            &json!({"base_url": "https://x", "api_key": "sk-live-123"}),
        )
        .unwrap_err();
    assert!(
        matches!(err, StoreError::SecretInSettings { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("OS keyring"), "{err}");
    assert!(err.to_string().contains("$.api_key"), "{err}");
    assert!(s.set_setting("openai_api_key", "sk-123").is_err());
    assert_eq!(
        s.setting::<serde_json::Value>("profile.cloud").unwrap(),
        None
    );

    let keys: Vec<String> = s.settings().unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec!["profile.actor", "safety.mode"]);
    assert!(s.remove_setting("safety.mode").unwrap());
    assert!(!s.remove_setting("safety.mode").unwrap());
}

#[test]
fn calibration_cache_put_get_replace_remove() {
    let s = Store::open_in_memory().unwrap();
    let key = "http://127.0.0.1:8000/v1|autoglm|thinking=off|long_side=1280";
    assert!(s.calibration_get(key).unwrap().is_none());
    s.calibration_put(key, &json!({"space": "relative_0_999", "mean_err": 2.0}))
        .unwrap();
    let got = s.calibration_get(key).unwrap().unwrap();
    assert_eq!(got.value["space"], "relative_0_999");
    assert!(got.created_ms > 0);
    s.calibration_put(key, &json!({"space": "image_pixels"}))
        .unwrap();
    assert_eq!(
        s.calibration_get(key).unwrap().unwrap().value["space"],
        "image_pixels"
    );
    assert!(s.calibration_remove(key).unwrap());
    assert!(s.calibration_get(key).unwrap().is_none());
}

#[test]
fn approval_ledger_follows_events_and_rebuilds_identically() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let ledger = s.approval_ledger(Some(rec.run_id), 100).unwrap();
    // Two gate decisions and one human approval request.
    assert_eq!(ledger.len(), 3, "{ledger:#?}");
    let gate_allow = &ledger[0];
    assert_eq!(gate_allow.kind, "gate");
    assert_eq!(gate_allow.decision, "allow");
    assert_eq!(gate_allow.tier.as_deref(), Some("none"));
    assert_eq!(gate_allow.step, 1);
    let gate_hard = &ledger[1];
    assert_eq!(
        (gate_hard.decision.as_str(), gate_hard.tier.as_deref()),
        ("needs_approval", Some("hard"))
    );
    assert_eq!(gate_hard.record["reasons"][0], "sensitive_self_declared");
    let human = &ledger[2];
    assert_eq!(human.request_id, "req-1");
    assert_eq!(human.kind, "approval");
    assert_eq!(human.tool.as_deref(), Some("tap"));
    assert_eq!(human.decision, "approve");
    assert_eq!(human.decided_by.as_deref(), Some("human"));
    assert_eq!(human.latency_ms, Some(4200));
    assert!(human.last_seq > human.first_seq);
    assert_eq!(human.record["request"]["target"], "Wi-Fi toggle");

    assert_eq!(s.rebuild_approval_ledger(rec.run_id).unwrap(), 3);
    assert_eq!(s.approval_ledger(Some(rec.run_id), 100).unwrap(), ledger);
    let all = s.approval_ledger(None, 2).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].request_id, "req-1", "newest first across runs");
}

#[test]
fn delete_run_removes_events_ledger_and_unreferenced_old_screenshots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let s = Store::open(&path).unwrap();
    let rec = fixture::record_run(&s);
    let other = fixture::record_run(&s);
    let live = NewRun::new("live");
    s.start_run(&live).unwrap();
    assert!(matches!(
        s.delete_run(live.id),
        Err(StoreError::RunStillRunning(_))
    ));
    // Screenshots are shared by both runs (same bytes), so deleting one keeps them.
    assert!(s.delete_run(rec.run_id).unwrap());
    assert!(!s.delete_run(rec.run_id).unwrap());
    assert!(s.run(rec.run_id).unwrap().is_none());
    assert!(s.events(rec.run_id).unwrap().is_empty());
    assert!(s.approval_ledger(Some(rec.run_id), 10).unwrap().is_empty());
    assert_eq!(s.screenshot_count().unwrap(), 3);
    assert_eq!(s.events(other.run_id).unwrap().len(), other.events);
    // An unreferenced screenshot younger than an hour may belong to a live run: kept.
    s.put_screenshot(&fixture::png(8, 8, 1), "image/png", 8, 8)
        .unwrap();
    // Make the fixture's screenshots old, then delete the last run referencing them.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE screenshots SET created_ms = 0 WHERE width = 1080",
            [],
        )
        .unwrap();
    assert!(s.delete_run(other.run_id).unwrap());
    assert_eq!(
        s.screenshot_count().unwrap(),
        1,
        "old unreferenced screenshots are collected"
    );
}

#[test]
fn approve_for_me_reviews_become_typed_ledger_rows_and_rebuild_from_events() {
    use phoneagent_protocol::event::DecidedBy;
    use phoneagent_protocol::{
        AgentEvent, ApprovalOutcome, ApprovalPolicy, ApprovalReview, BreakerState, EventEnvelope,
        ReviewDecision, ReviewRisk, RiskTier, UserAuthorization,
    };
    let s = Store::open_in_memory().unwrap();
    let run = NewRun::new("Buy the first product");
    s.start_run(&run).unwrap();
    let review = |i: u32, outcome, by| ApprovalReview {
        request_id: format!("ar-{i}"),
        tool: "tap".into(),
        target: "提交订单".into(),
        arguments: json!({"action": "tap", "element": [500, 900]}),
        arguments_truncated: false,
        tier: RiskTier::Hard,
        reasons: vec!["commit_irreversible".into()],
        policy: ApprovalPolicy::Ai,
        policy_source: "default".into(),
        outcome,
        decided_by: by,
        delegated: by == DecidedBy::Human,
        verdict: Some(ReviewDecision::Deny),
        risk: Some(ReviewRisk::High),
        user_authorization: Some(UserAuthorization::None),
        reason: format!("reason {i}"),
        suggestion: None,
        gate: None,
        reviewer_error: None,
        reviewer_profile: Some("cloud".into()),
        reviewer_model: Some("gpt-x".into()),
        review_latency_ms: Some(40),
        latency_ms: 50 + u64::from(i),
        reviews_left: 20 - i,
        failures_left: 10,
        breaker: BreakerState {
            consecutive_denials: i,
            window_denials: i,
            window_reviews: i,
            open: false,
        },
        override_used: false,
        cached: false,
        human_request_id: None,
    };
    let rows = vec![
        review(1, ApprovalOutcome::Denied, DecidedBy::AutoReviewer),
        review(2, ApprovalOutcome::Allowed, DecidedBy::Human),
    ];
    for (seq, r) in rows.iter().enumerate() {
        s.append_envelope(&EventEnvelope {
            run_id: run.id.to_string(),
            seq: seq as u64,
            ts_ms: 1_000,
            step: 3,
            event: AgentEvent::ApprovalReview(r.clone()),
        })
        .unwrap();
    }
    assert_eq!(s.approval_reviews(run.id).unwrap(), rows);
    let ledger = s.approval_ledger(Some(run.id), 10).unwrap();
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[0].kind, "auto_review");
    assert_eq!(ledger[0].request_id, "ar-1");
    assert_eq!(ledger[0].decision, "denied");
    assert_eq!(ledger[0].decided_by.as_deref(), Some("auto_reviewer"));
    assert_eq!(ledger[0].tier.as_deref(), Some("hard"));
    assert_eq!(ledger[0].latency_ms, Some(51));
    assert_eq!(ledger[1].decision, "allowed");
    assert_eq!(ledger[1].decided_by.as_deref(), Some("human"));
    let events = s.events(run.id).unwrap();
    assert_eq!(
        phoneagent_store::approval_reviews_from_events(&events),
        rows
    );
    assert_eq!(s.rebuild_approval_ledger(run.id).unwrap(), 2);
    assert_eq!(s.approval_ledger(Some(run.id), 10).unwrap(), ledger);
}
