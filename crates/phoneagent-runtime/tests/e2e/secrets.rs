//! Typed secrets (SPEC P6, S3 password-field rule): a password typed into the password field is
//! asked for in `hard` mode, reaches the phone, and is nowhere else in plain text: not in any
//! stored event, the JSON or HTML export, or a later model request.

use phoneagent_protocol::AccessMode;
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_store::export::{HtmlOptions, JsonOptions, html_report, trajectory_json};
use phoneagent_testkit::ScriptEntry;

use crate::harness::{Harness, Opts};

const PASSWORD: &str = "Tr0ub4dor&3horse";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_typed_into_the_password_field_is_asked_for_and_masked_everywhere() {
    let script = format!(
        r#"
{{"content": "do(action=\"Tap\", element={{{{center:login.password}}}}, target_description=\"密码输入框\", reason=\"Focus the password field.\")"}}
{{"content": "do(action=\"Type\", text=\"{PASSWORD}\", reason=\"Type the password {PASSWORD} the user gave.\")"}}
{{"content": "finish(message=\"Typed the password.\")"}}
{{"content": "finish(message=\"Typed the password.\", confirm=True)"}}
{{"queue": "verifier", "content": "{{\"verdict\": \"pass\", \"reason\": \"typed\"}}"}}
"#
    );
    let mut h = Harness::new(
        &script,
        Opts {
            mode: AccessMode::Hard,
            scenario: Some("login"),
            ..Opts::default()
        },
    )
    .await;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let answers = h.answer_with(move |k| {
        if let HumanRequestKind::Approval { tool, target, .. } = k {
            log.lock().unwrap().push(format!("{tool} {target}"));
        }
        HumanResponse::Approve
    });
    let out = h.run("Log in with the password I gave you").await;
    answers.abort();
    let _ = h.drain();
    // The phone got the real password.
    let truth = h.truth();
    assert_eq!(
        truth
            .typed_text
            .fields
            .get("login.password")
            .map(String::as_str),
        Some(PASSWORD),
        "{truth:?}"
    );
    // The person was asked before it was typed (the password-field rule is fed by the runtime).
    let asked = asked.lock().unwrap().clone();
    assert!(
        asked.iter().any(|a| a.starts_with("type_text")),
        "hard mode must ask before typing into the password field: {asked:?}"
    );
    assert!(
        asked.iter().all(|a| !a.contains(PASSWORD)),
        "the approval request shows the password: {asked:?}"
    );
    // Nowhere else in plain text.
    assert_nowhere_in_the_clear(&h, &out.run_id, PASSWORD);
    let id = uuid::Uuid::parse_str(&out.run_id).unwrap();
    let json = trajectory_json(&h.store, id, &JsonOptions::default())
        .unwrap()
        .to_string();
    assert!(
        json.contains("[secret:"),
        "the placeholder is in the trajectory"
    );
    let requests = h.model.chat_requests().len();
    assert!(requests >= 3, "{requests}");
}

/// Every place a run records or sends text, checked for `secret` in the clear: stored events,
/// the JSON and HTML exports, and every model request after the first.
fn assert_nowhere_in_the_clear(h: &Harness, run_id: &str, secret: &str) {
    let id = uuid::Uuid::parse_str(run_id).unwrap();
    for e in h.store.events(id).unwrap() {
        let j = e.payload.to_string();
        assert!(!j.contains(secret), "stored event holds the password: {j}");
    }
    let json = trajectory_json(&h.store, id, &JsonOptions::default())
        .unwrap()
        .to_string();
    assert!(
        !json.contains(secret),
        "trajectory export holds the password"
    );
    let html = html_report(&h.store, id, &HtmlOptions::default()).unwrap();
    let escaped = secret
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    assert!(
        !html.contains(secret) && !html.contains(&escaped),
        "HTML export holds the password"
    );
    for (i, r) in h.model.chat_requests().iter().enumerate() {
        assert!(
            !r.body.to_string().contains(secret),
            "model request {i} holds the password"
        );
    }
}

/// P6 without a touch: the app opened with the cursor already in the password field (a saved
/// user name, a payment-password sheet). A plain-words password typed there is recognised from
/// the screen (the field's label read by OCR), before the answer is recorded: the `model_call`
/// event, the exports and later requests never hold it, and `hard` asks first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_typed_into_a_field_focused_without_a_touch_is_masked_too() {
    const WORDS: &str = "purple monkey dishwasher";
    let script = format!(
        r#"
{{"content": "do(action=\"Type\", text=\"{WORDS}\", reason=\"Type what the user gave.\")"}}
{{"content": "finish(message=\"Typed it.\")"}}
{{"content": "finish(message=\"Typed it.\", confirm=True)"}}
{{"queue": "verifier", "content": "{{\"verdict\": \"pass\", \"reason\": \"typed\"}}"}}
"#
    );
    let mut h = Harness::new(
        &script,
        Opts {
            mode: AccessMode::Hard,
            scenario: Some("login_password_focused"),
            ..Opts::default()
        },
    )
    .await;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let answers = h.answer_with(move |k| {
        if let HumanRequestKind::Approval { tool, .. } = k {
            log.lock().unwrap().push(tool.clone());
        }
        HumanResponse::Approve
    });
    let out = h.run("Log in as alice with the password I gave you").await;
    answers.abort();
    let _ = h.drain();
    let truth = h.truth();
    assert_eq!(
        truth
            .typed_text
            .fields
            .get("login.password")
            .map(String::as_str),
        Some(WORDS),
        "the phone got the real text: {truth:?}"
    );
    assert!(
        asked.lock().unwrap().iter().any(|t| t == "type_text"),
        "hard mode asks before typing into the password field"
    );
    assert_nowhere_in_the_clear(&h, &out.run_id, WORDS);
}

/// Drive a step session to its end (at most `max` steps).
async fn steps_to_end(
    session: &mut phoneagent_runtime::StepSession,
    max: usize,
) -> phoneagent_runtime::RunOutcome {
    for _ in 0..max {
        match session.step().await.expect("step") {
            phoneagent_runtime::StepOutcome::Continue(_) => {}
            phoneagent_runtime::StepOutcome::Finished(out) => return out,
        }
    }
    panic!("the run did not end in {max} steps")
}

/// P6, leak 1: a password the task spells out ("my pw: …", "密码 …") is registered before the
/// run records anything. The run row, `run_started` (the terminal `task:` line), the JSON and
/// HTML exports and every model request carry the placeholder; the model types the placeholder
/// and the phone gets the real password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_spelled_out_in_the_task_is_masked_from_the_start_and_typed_for_real() {
    const PW: &str = "Tr0ub4dor&3";
    for task in [
        format!("Log in as alice, my pw: {PW}"),
        format!("登录 alice，密码 {PW}"),
    ] {
        let mut h = Harness::new(
            "",
            Opts {
                mode: AccessMode::Hard,
                scenario: Some("login"),
                ..Opts::default()
            },
        )
        .await;
        let answers = h.answer_with(|_| HumanResponse::Approve);
        let mut session = h
            .agent
            .start_steps(&task, tokio_util::sync::CancellationToken::new())
            .expect("run started");
        // The task as the run sees it: the password is a placeholder from the first event.
        let shown = h
            .drain()
            .into_iter()
            .find_map(|e| match e {
                phoneagent_protocol::AgentEvent::RunStarted { task, .. } => Some(task),
                _ => None,
            })
            .expect("run_started");
        assert!(
            !shown.contains(PW),
            "run_started shows the password: {shown}"
        );
        let at = shown.find("[secret:").expect("placeholder in the task");
        let placeholder = &shown[at..at + "[secret:12345678]".len()];
        assert_eq!(shown.replace(placeholder, PW), task);
        h.model
            .push_entries(vec![
                ScriptEntry::text(
                    "do(action=\"Tap\", element={{center:login.password}}, target_description=\"密码输入框\", reason=\"Focus the password field.\")",
                ),
                ScriptEntry::text(format!(
                    "do(action=\"Type\", text=\"{placeholder}\", reason=\"Type the password the user gave.\")"
                )),
                ScriptEntry::text("finish(message=\"Typed the password.\")"),
                ScriptEntry::text("finish(message=\"Typed the password.\", confirm=True)"),
                ScriptEntry::text("{\"verdict\": \"pass\", \"reason\": \"typed\"}")
                    .in_queue("verifier"),
            ])
            .unwrap();
        let out = steps_to_end(&mut session, 8).await;
        drop(session);
        answers.abort();
        let truth = h.truth();
        assert_eq!(
            truth
                .typed_text
                .fields
                .get("login.password")
                .map(String::as_str),
            Some(PW),
            "the phone got the real password ({task}): {out:?}"
        );
        assert_nowhere_in_the_clear(&h, &out.run_id, PW);
        // The store's run row (history, `runs` listing) holds the masked task.
        let runs = format!("{:?}", h.store.list_runs(10).unwrap());
        assert!(runs.contains(placeholder), "{runs}");
        assert!(!runs.contains(PW), "the run row holds the password: {runs}");
        // The model was told what the placeholder is.
        let first = h.model.chat_requests()[0].body.to_string();
        assert!(first.contains(placeholder) && first.contains("exactly as written"));
    }
}

/// P6, leak 2: the model echoing a typed password in another case (a Note, the finish
/// message) is masked too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_password_echoed_in_another_case_is_masked() {
    const PW: &str = "Tr0ub4dor&3";
    let script = format!(
        r#"
{{"content": "do(action=\"Tap\", element={{{{center:login.password}}}}, target_description=\"密码输入框\", reason=\"Focus the password field.\")"}}
{{"content": "do(action=\"Type\", text=\"{PW}\", reason=\"Type the password.\")"}}
{{"content": "do(action=\"Note\", message=\"typed {upper} into the field\")"}}
{{"content": "finish(message=\"Logged in with {lower}.\")"}}
{{"content": "finish(message=\"Logged in with {lower}.\", confirm=True)"}}
{{"queue": "verifier", "content": "{{\"verdict\": \"pass\", \"reason\": \"typed\"}}"}}
"#,
        upper = PW.to_uppercase(),
        lower = PW.to_lowercase(),
    );
    let mut h = Harness::new(
        &script,
        Opts {
            mode: AccessMode::Hard,
            scenario: Some("login"),
            ..Opts::default()
        },
    )
    .await;
    let answers = h.answer_with(|_| HumanResponse::Approve);
    let out = h.run("Log in as alice with the password I gave you").await;
    answers.abort();
    let _ = h.drain();
    assert_eq!(
        h.truth()
            .typed_text
            .fields
            .get("login.password")
            .map(String::as_str),
        Some(PW),
        "{out:?}"
    );
    for variant in [PW.to_uppercase(), PW.to_lowercase(), PW.to_string()] {
        assert_nowhere_in_the_clear(&h, &out.run_id, &variant);
    }
}
