//! Exports (SPEC T2, U6): the trajectory JSON (schema 1.3) and the HTML report.

use base64::Engine;
use phoneagent_store::export::{
    HtmlOptions, JsonOptions, html_report, trajectory_json, write_html_report,
    write_trajectory_json,
};
use phoneagent_store::{EventRecord, NewRun, Store, StoreError};
use serde_json::json;

use crate::fixture::{self, HOSTILE_REASON};

#[test]
fn trajectory_json_has_schema_policy_facts_counters_and_metrics() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let doc = trajectory_json(&s, rec.run_id, &JsonOptions::default()).unwrap();

    assert_eq!(doc["schema_version"], "1.3");
    assert_eq!(
        doc["policy"],
        json!({
            "policy_observation": "screenshot_only",
            "android_semantics_visible_to_model": false,
            "deterministic_app_launch": false,
            "external_api_action": false,
        })
    );

    let run = &doc["run"];
    assert_eq!(run["id"], rec.run_id.to_string());
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["device_serial"], "emulator-5554");
    assert_eq!(run["model"], "autoglm-phone-9b");
    assert_eq!(run["access_mode"], "hard");
    assert_eq!(run["protocol"], "do");
    assert_eq!(run["max_steps"], 20);
    assert_eq!(run["duration_ms"], 42_000);
    assert_eq!(run["termination_code"], "finish_accepted");
    assert_eq!(run["final_message"], "Wi-Fi is on");
    assert_eq!(run["steps"], 4);

    // Execution facts, each its own field (R4): 3 dispatched, all ok, 2 with effect, 1 without.
    let ex = &doc["execution"];
    assert_eq!(ex["dispatched"], 3);
    assert_eq!(ex["command_ok"], 3);
    assert_eq!(ex["command_failed"], 0);
    assert_eq!(ex["observable_effect"], 2);
    assert_eq!(ex["no_observable_effect"], 1);
    assert_eq!(ex["recovery_needed"], true);
    assert_eq!(
        ex["warnings"],
        json!([{"step": 2, "code": "no_visible_change"}])
    );
    assert_eq!(
        ex["root_error"],
        serde_json::Value::Null,
        "a succeeded run has no root error"
    );
    assert_eq!(ex["termination_code"], "finish_accepted");

    assert_eq!(doc["recovery"]["hard_failures"], 0);
    assert_eq!(doc["recovery"]["soft_replans"], 1);
    assert_eq!(doc["recovery"]["outcomes"], json!({"replan": 1}));

    let m = &doc["metrics"];
    assert_eq!(m["prompt_tokens"], 4000);
    assert_eq!(m["completion_tokens"], 200);
    assert_eq!(m["total_tokens"], 4200);
    assert_eq!(m["calls"], 4);
    assert_eq!(m["by_role"]["actor"]["calls"], 4);
    assert_eq!(m["by_call_kind"]["planning"]["prompt_tokens"], 4000);

    // Coordinate metadata: the contract, and per-action model→device mappings in the events.
    assert_eq!(doc["coordinates"]["contract"]["method"], "negotiated");
    assert_eq!(doc["coordinates"]["contract"]["space"], "relative_0_999");
    assert_eq!(
        doc["coordinates"]["screen"],
        json!({"width_px": 1080, "height_px": 2400})
    );

    // The full event stream, in order, each shaped like an EventEnvelope.
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events.len(), rec.events);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64);
        let env: phoneagent_protocol::EventEnvelope = serde_json::from_value(e.clone())
            .unwrap_or_else(|err| panic!("event {i} is not an EventEnvelope: {err}\n{e}"));
        assert_eq!(env.run_id, rec.run_id.to_string());
    }
    let proposed = events
        .iter()
        .find(|e| e["kind"] == "action_proposed")
        .unwrap();
    assert_eq!(
        proposed["points"][0]["model"],
        json!({"x": 500.0, "y": 250.0})
    );
    assert!(proposed["points"][0]["device"]["x"].is_u64());

    // Steps with per-step facts.
    let steps = doc["steps"].as_array().unwrap();
    let step_numbers: Vec<u64> = steps.iter().map(|s| s["step"].as_u64().unwrap()).collect();
    // Step 0 (run_started, calibration) has nothing to show and is left out of `steps`.
    assert_eq!(step_numbers, vec![1, 2, 3, 4]);
    let s2 = &steps[1];
    assert_eq!(s2["action_type"], "swipe");
    assert_eq!(s2["execution"]["dispatched"], true);
    assert_eq!(s2["execution"]["command_ok"], true);
    assert_eq!(s2["execution"]["observable_effect"], false);
    assert_eq!(s2["execution"]["recovery_needed"], true);
    assert_eq!(
        s2["device_points"],
        json!([[540.0, 1922.0], [540.0, 480.0]])
    );
    let s4 = &steps[3];
    assert_eq!(s4["execution"]["dispatched"], false);
    assert_eq!(s4["execution"]["command_ok"], serde_json::Value::Null);

    // Screenshots by hash, not inlined by default.
    let shots = doc["screenshots"].as_object().unwrap();
    assert_eq!(shots.len(), 3);
    for h in &rec.shots {
        assert_eq!(shots[h]["mime"], "image/png");
        assert!(shots[h].get("data_base64").is_none());
    }
}

#[test]
fn trajectory_json_can_inline_screenshots() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let doc = trajectory_json(
        &s,
        rec.run_id,
        &JsonOptions {
            inline_screenshots: true,
        },
    )
    .unwrap();
    let h = &rec.shots[0];
    let data = doc["screenshots"][h]["data_base64"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert_eq!(phoneagent_store::sha256_hex(&bytes), *h);
}

#[test]
fn interrupted_run_exports_from_events_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneagent.sqlite3");
    let run = NewRun::new("half done");
    {
        let s = Store::open(&path).unwrap();
        s.start_run(&run).unwrap();
        let evs = [
            (
                "model_call",
                json!({"step": 1, "role": "actor", "call_kind": "planning", "prompt_tokens": 700, "completion_tokens": 30, "cost_usd": 0.0, "latency_ms": 5}),
            ),
            (
                "action_dispatched",
                json!({"step": 1, "action_type": "tap", "device_points": [{"x": 10, "y": 20}], "command_ok": false, "error": "device_lost", "message": "device vanished", "duration_ms": 3}),
            ),
            (
                "recovery",
                json!({"step": 1, "outcome": "reobserve", "code": "device_lost", "hard_failures": 1, "soft_replans": 0, "detail": "waiting"}),
            ),
        ];
        for (i, (k, p)) in evs.into_iter().enumerate() {
            s.append_event(
                run.id,
                &EventRecord {
                    seq: i as u64,
                    ts_ms: 5_000 + i as i64,
                    kind: k.into(),
                    payload: p,
                },
            )
            .unwrap();
        }
    }
    let s = Store::open(&path).unwrap();
    let doc = trajectory_json(&s, run.id, &JsonOptions::default()).unwrap();
    assert_eq!(doc["run"]["status"], "interrupted");
    assert_eq!(doc["execution"]["termination_code"], "interrupted");
    assert_eq!(doc["execution"]["command_failed"], 1);
    assert_eq!(doc["execution"]["root_error"], "device_lost");
    assert_eq!(doc["recovery"]["hard_failures"], 1);
    assert_eq!(doc["metrics"]["prompt_tokens"], 700);
    // Without a run_started event the policy block is still the pure-vision one.
    assert_eq!(doc["policy"]["policy_observation"], "screenshot_only");
    assert_eq!(doc["policy"]["android_semantics_visible_to_model"], false);
}

#[test]
fn html_report_is_self_contained_escaped_and_draws_actions() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let html = html_report(&s, rec.run_id, &HtmlOptions::default()).unwrap();
    // To look at the report: PHONEAGENT_STORE_SAMPLE_REPORT=/tmp/report.html cargo nextest run ...
    if let Some(out) = std::env::var_os("PHONEAGENT_STORE_SAMPLE_REPORT") {
        std::fs::write(out, &html).unwrap();
    }

    // Untrusted text is escaped: the model's <script> never becomes markup.
    assert!(!html.contains("<script"), "raw <script> in the report");
    assert!(html.contains("&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"));
    assert!(!html.contains(HOSTILE_REASON));
    assert!(html.contains("Open Settings and turn on &lt;b&gt;Wi-Fi&lt;/b&gt;"));

    // Self-contained: no external resources, a CSP that forbids them, images as data URLs.
    assert!(!html.contains("src=\"http"), "external image");
    assert!(!html.contains("href=\"http"), "external link");
    assert!(!html.contains("url(http"), "external CSS resource");
    assert!(html.contains("default-src 'none'"));
    assert_eq!(
        html.matches("src=\"data:image/jpeg;base64,").count(),
        4,
        "one thumbnail per step with a screenshot"
    );

    // Header facts.
    for needle in [
        "succeeded",
        "finish_accepted",
        "42.0 s",
        "emulator-5554",
        "autoglm-phone-9b",
        "4\u{202f}000 in",
        "200 out",
        "$0.0040",
        "1 soft",
    ] {
        assert!(html.contains(needle), "header lacks {needle:?}");
    }
    // Each step drawn: a tap ring at the dispatched device point, a swipe arrow.
    assert!(html.contains(r#"<svg viewBox="0 0 1080 2400""#));
    assert!(
        html.contains(r#"<circle cx="541.0" cy="601.0""#),
        "tap ring at the device point"
    );
    assert!(
        html.contains(r#"<line x1="540.0" y1="1922.0" x2="540.0" y2="577.2""#),
        "swipe shaft from the start point to the arrowhead"
    );
    assert!(
        html.contains(r#"<polygon points="540.0,480.0 "#),
        "swipe arrowhead tip at the end point"
    );
    // Gate decisions, human approval, verification, tokens, model text.
    assert!(html.contains("needs_approval"));
    assert!(html.contains("tier hard"));
    assert!(html.contains("approval asked for tap on “Wi-Fi toggle”"));
    assert!(html.contains(r#"<span class="chip ok">approve</span>"#));
    assert!(html.contains("no visible effect"));
    assert!(html.contains("The home screen with a Settings icon"));
    assert!(html.contains("finish verifier: pass"));
    assert!(html.contains("prefers-color-scheme: dark"));

    // Balanced structure: every article closes.
    assert_eq!(
        html.matches("<article").count(),
        html.matches("</article>").count()
    );
}

#[test]
fn html_full_size_option_adds_lightbox_images() {
    let s = Store::open_in_memory().unwrap();
    let rec = fixture::record_run(&s);
    let html = html_report(
        &s,
        rec.run_id,
        &HtmlOptions {
            full_size: true,
            ..HtmlOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        html.matches("class=\"lightbox\"").count(),
        3,
        "one per distinct screenshot"
    );
    assert!(html.contains("src=\"data:image/png;base64,"));
}

#[test]
fn exports_write_files_and_report_unknown_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path().join("db.sqlite3")).unwrap();
    let rec = fixture::record_run(&s);
    let json_path = dir.path().join("run.json");
    let html_path = dir.path().join("run.html");
    write_trajectory_json(&s, rec.run_id, &JsonOptions::default(), &json_path).unwrap();
    write_html_report(&s, rec.run_id, &HtmlOptions::default(), &html_path).unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(doc["schema_version"], "1.3");
    assert!(
        std::fs::read_to_string(&html_path)
            .unwrap()
            .starts_with("<!doctype html>")
    );
    let missing = uuid::Uuid::new_v4();
    let err = trajectory_json(&s, missing, &JsonOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::UnknownRun(id) if id == missing));
    let err = write_html_report(
        &s,
        rec.run_id,
        &HtmlOptions::default(),
        &dir.path().join("no/such/dir/r.html"),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("could not write the export"),
        "{err}"
    );
}
