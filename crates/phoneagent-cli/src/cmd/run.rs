//! `run`, `runs`, `export` (SPEC C1, R*, T1–T2).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use phoneagent_device::{AdbDevice, AdbDeviceOptions, ConnectPlan, Device};
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AccessMode, CoordinateSpace, EventEnvelope, Op, RunStatus, TaskOptions};
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    AgentConfig, Approver, Delegation, FinishVerifyMode, HumanRequest, PolicyApprover, RunOutcome,
    Session, SessionError, SessionParts, map_free_text,
};
use phoneagent_store::Store;
use tokio_util::sync::CancellationToken;

use super::Global;

/// Model selection flags shared by `run` and `doctor`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// Model profile from models.json (default: roles.actor.model, or PHONE_AGENT_MODEL).
    #[arg(long)]
    pub profile: Option<String>,
    /// OpenAI-compatible base URL including /v1 (overrides the profile; env PHONE_AGENT_BASE_URL).
    #[arg(long, env = "PHONE_AGENT_BASE_URL")]
    pub base_url: Option<String>,
    /// Model name (overrides the profile; env PHONE_AGENT_MODEL).
    #[arg(long, env = "PHONE_AGENT_MODEL")]
    pub model: Option<String>,
    /// Action front end: `do` (AutoGLM-style text) or `tools` (function calling).
    #[arg(long, value_parser = ["do", "tools"])]
    pub protocol: Option<String>,
    /// Coordinate space: relative_0_999, image_pixels, display_pixels or auto (env MODEL_COORDINATE_SPACE).
    #[arg(long, env = "MODEL_COORDINATE_SPACE")]
    pub coord_space: Option<CoordinateSpace>,
}

/// `phoneagent run`
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task, in plain words. Without it, an interactive prompt takes task after task.
    pub task: Option<String>,
    /// ADB serial of the phone (default: ANDROID_SERIAL, or the only device).
    #[arg(long, env = "ANDROID_SERIAL")]
    pub serial: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Access mode: off, wary, hard, reviewer or approve-for-me (env PHONE_AGENT_SAFETY_MODE).
    /// approve-for-me sends the approval requests `hard` would put to you to the auto_reviewer
    /// model first (roles.auto_reviewer / PHONE_AGENT_AUTO_REVIEWER_MODEL).
    #[arg(long, env = "PHONE_AGENT_SAFETY_MODE", default_value = "wary")]
    pub mode: AccessMode,
    /// approve-for-me: policy/gate file (TOML or JSON; default: approval-policy.toml or .json
    /// in the config dir, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    pub approval_policy: Option<std::path::PathBuf>,
    /// Language of receipts and approve-for-me reasons: zh or en (env PHONE_AGENT_LANG).
    #[arg(long, env = "PHONE_AGENT_LANG", default_value = "en", value_parser = super::approvals::parse_lang)]
    pub lang: phoneagent_runtime::Lang,
    /// Maximum steps.
    #[arg(long, default_value_t = 30)]
    pub max_steps: u32,
    /// Maximum run time in minutes.
    #[arg(long, default_value_t = 15)]
    pub max_minutes: u64,
    /// How long to wait for a phone that disconnects mid-run to come back, in seconds.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub device_wait: u64,
    /// Run token budget (all roles).
    #[arg(long)]
    pub token_budget: Option<u64>,
    /// Finish verifier: auto, always or off (env PHONE_AGENT_FINISH_VERIFY).
    #[arg(long, env = "PHONE_AGENT_FINISH_VERIFY", default_value = "auto")]
    pub finish_verify: FinishVerifyMode,
    /// With no terminal to ask: approve or reject approval requests (default reject).
    #[arg(long)]
    pub on_approval: Option<OnApproval>,
    /// Print JSON lines of events instead of the timeline.
    #[arg(long)]
    pub json: bool,
    /// Run without the gate reading the screen (OCR, SPEC S10): the gate then sees only the
    /// model's words. Not recommended.
    #[arg(long)]
    pub no_screen_reading: bool,
    #[command(flatten)]
    pub capture: CaptureArg,
}

/// The gate's screen reader (SPEC S10), or `None` with a warning saying why and how to fix it.
pub fn screen_reader(off: bool) -> Option<Arc<phoneagent_vision::ScreenReader>> {
    if off {
        super::out::note(
            "warning: screen reading is off (--no-screen-reading): the safety gate sees only the model's words",
        );
        return None;
    }
    match phoneagent_vision::ScreenReader::new(phoneagent_vision::ReaderConfig::default()) {
        Ok(r) => Some(Arc::new(r)),
        Err(e) => {
            super::out::note(&format!(
                "warning: the safety gate cannot read the screen, so it sees only the model's words: {e}"
            ));
            None
        }
    }
}

/// What to do with approvals when nobody can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnApproval {
    /// Approve every approval request.
    Approve,
    /// Reject every approval request.
    Reject,
}

/// Device options for a `--capture` path (SPEC D8), with the IME journal beside the run store
/// (`$PHONEAGENT_HOME/ime-journal` or the data directory's), so a run killed with SIGKILL has its
/// phone's keyboard put back by the next command (SPEC D4).
/// `--capture PATH`, shared by every command that opens a phone (SPEC D8, D9).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct CaptureArg {
    /// Capture path (SPEC D8, D9): scrcpy (default: scrcpy's live stream and fast input when
    /// scrcpy-server is found — SCRCPY_SERVER_PATH or the scrcpy package — else raw
    /// screencap and `input`), auto (scrcpy, else Android's screenrecord stream, else raw),
    /// screenrecord, raw or png. screenrecord is opt-in (`auto`): it sends frames only when
    /// the screen changes and has had less testing than scrcpy. A stream that dies falls back
    /// to raw without ending the run; `doctor`'s `capture` and `input_path` lines show what
    /// each path gives on a phone (env PHONEAGENT_CAPTURE).
    #[arg(
        id = "capture",
        long = "capture",
        env = "PHONEAGENT_CAPTURE",
        default_value = "scrcpy",
        value_name = "PATH"
    )]
    pub mode: phoneagent_device::ScreenshotMode,
}

pub fn device_options(capture: phoneagent_device::ScreenshotMode) -> AdbDeviceOptions {
    AdbDeviceOptions {
        screenshot_mode: capture,
        ime_journal: phoneagent_store::default_ime_journal_dir().ok(),
        ..AdbDeviceOptions::default()
    }
}

/// Connect to the phone named by flags/env, through the adb server of `--adb`, capturing
/// through `capture`.
pub async fn connect_device(
    g: &Global,
    serial: Option<&str>,
    capture: phoneagent_device::ScreenshotMode,
) -> anyhow::Result<AdbDevice> {
    // The same transport choice as `devices`/`doctor` (SPEC D1): `--direct HOST:PORT`, else the
    // adb server when one answers, else the phone's adbd directly over USB.
    let plan = ConnectPlan::from_flags(g.adb.as_deref(), g.direct.as_deref());
    Ok(AdbDevice::connect(&plan, serial, device_options(capture)).await?)
}

/// Open the run store (PHONEAGENT_HOME or the platform data dir) and report crashed runs.
pub fn open_store() -> anyhow::Result<Store> {
    let store = Store::open_default().context("cannot open the run store")?;
    let n = store.interrupted_at_open();
    if n > 0 {
        eprintln!("note: {n} run(s) left running by a crash were marked interrupted");
    }
    Ok(store)
}

/// The terminal approver: asks on stdin/stderr (SPEC S8 free-text mapping for approvals).
pub struct TerminalApprover;

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: &HumanRequest, cancel: &CancellationToken) -> HumanResponse {
        let prompt = approval_prompt(request);
        let kind = request.kind.clone();
        let read = tokio::task::spawn_blocking(move || {
            super::out::prompt(&prompt);
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        });
        let line = tokio::select! {
            r = read => r.ok().and_then(|r| r.ok()).unwrap_or_default(),
            _ = cancel.cancelled() => return HumanResponse::Reject { note: Some("run cancelled".into()) },
        };
        map_answer(&kind, &line)
    }
}

/// How a line the person typed answers a request of `kind` (SPEC S8): free-text mapping for an
/// approval, the verbatim line for a question, `back` / `done` / anything else for a take-over.
pub fn map_answer(kind: &HumanRequestKind, line: &str) -> HumanResponse {
    match kind {
        HumanRequestKind::Approval { .. } => map_free_text(line),
        HumanRequestKind::AskUser { .. } => HumanResponse::Answer {
            text: line.trim().to_string(),
        },
        HumanRequestKind::TakeOver { .. } => match line.trim().to_lowercase().as_str() {
            "back" | "b" | "hand back" | "交还" => HumanResponse::HandBack,
            "done" | "d" | "完成" => HumanResponse::Approve,
            _ => HumanResponse::Reject { note: None },
        },
    }
}

/// The text the terminal shows for a human request (SPEC S8, S14). For an approval it leads with
/// the gate's own reading — the tool, the tier and reasons, and the text read from the screen
/// at the target — and shows what the model wrote only in a block labelled as the model's.
/// Every untrusted string is inert (one line, no control characters).
pub fn approval_prompt(request: &HumanRequest) -> String {
    use phoneagent_protocol::text::{inert_block, inert_line};
    match &request.kind {
        HumanRequestKind::Approval {
            tool,
            target,
            tier,
            reasons,
            screen,
            model_reason,
        } => {
            let mut p = String::from("\n────────── approval needed ──────────\n");
            p.push_str(&format!(
                "  the gate's reading: {} · tier {} · {}\n",
                inert_line(tool),
                serde_json::to_value(tier)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                inert_line(&reasons.join(", "))
            ));
            p.push_str(&format!(
                "  on the screen at the target: {}\n",
                screen
                    .as_deref()
                    .map(inert_line)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "(nothing read)".into())
            ));
            p.push_str("  what the model wrote (unverified):\n");
            p.push_str(&format!("    target: {}\n", inert_line(target)));
            if let Some(r) = model_reason {
                p.push_str(&format!("    reason: {}\n", inert_line(r)));
            }
            if !request.detail.trim().is_empty() {
                for l in inert_block(&request.detail).lines() {
                    p.push_str(&format!("  │ {l}\n"));
                }
            }
            p.push_str(&format!(
                "⏸ Run this {}? type approve / yes / 同意 to run it; anything else (or Ctrl-C) rejects: ",
                inert_line(tool)
            ));
            p
        }
        HumanRequestKind::AskUser { question } => {
            format!(
                "\n? The agent asks (the model's words): {}\n  your answer: ",
                inert_line(question)
            )
        }
        HumanRequestKind::TakeOver { message } => format!(
            "\n✋ Take over (the model's words): {}\n  operate the phone, then type `back` to hand it back, `done` if you finished the task yourself, or anything else to refuse: ",
            inert_line(message)
        ),
    }
}

/// Print `rx`'s events as they come (a session's stream): the timeline, or JSON lines.
pub fn spawn_printer(
    mut rx: tokio::sync::broadcast::Receiver<EventEnvelope>,
    json: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(env) => print_event(&env, json),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    eprintln!("(timeline skipped {n} events)")
                }
                Err(_) => break,
            }
        }
    })
}

fn print_event(env: &EventEnvelope, json: bool) {
    if json {
        if let Ok(s) = serde_json::to_string(env) {
            outln!("{s}");
        }
    } else if let Some(line) = super::timeline::line(env) {
        outln!("{line}");
    }
}

/// Cancel `session`'s run on Ctrl-C, SIGTERM or SIGHUP (a second one exits at once), or when
/// stdout's reader went away (`phoneagent run … | head`): the run then ends the normal way,
/// keyboard restored (SPEC D4). Abort the returned handle when the run is over, so a later
/// Ctrl-C is not taken by a listener of a finished run.
pub fn cancel_on_ctrl_c(session: Session) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // No run going (it ended as the signal came) is nothing to cancel.
        let cancel = || {
            let _ = session.submit(Op::Cancel);
        };
        tokio::select! {
            sig = super::out::stop_signal() => {
                // Cancel first: stderr may be a closed pipe too (`2>&1 | head`).
                cancel();
                super::out::note(&format!("\n{sig}: cancelling… (Ctrl-C again to quit at once)"));
                super::out::stop_signal().await;
                std::process::exit(130);
            }
            () = super::out::gone().cancelled() => {
                cancel();
                super::out::note("stdout was closed: cancelling the run");
            }
        }
    })
}

/// Run `task` in `mode` on `session` to its end, cancelled by Ctrl-C (see
/// [`cancel_on_ctrl_c`]).
///
/// # Errors
/// The session refused the start (task too long, store error).
pub async fn run_task(
    session: &Session,
    task: &str,
    mode: AccessMode,
) -> Result<RunOutcome, phoneagent_runtime::SessionError> {
    let listener = cancel_on_ctrl_c(session.clone());
    let outcome = session.run(task, mode, TaskOptions::default()).await;
    listener.abort();
    outcome
}

/// Exit code for a run outcome: 0 succeeded, 1 otherwise.
pub fn exit_code(o: &RunOutcome) -> u8 {
    if o.status == RunStatus::Succeeded {
        0
    } else {
        1
    }
}

/// Run one task, or an interactive session of tasks.
pub async fn run(g: &Global, a: RunArgs) -> anyhow::Result<u8> {
    // A task over the sane size is refused before the phone, the model or the store.
    if let Some(task) = &a.task {
        phoneagent_runtime::check_task_size(task, phoneagent_runtime::DEFAULT_MAX_TASK_CHARS)?;
    }
    let device: Arc<dyn Device> =
        Arc::new(connect_device(g, a.serial.as_deref(), a.capture.mode).await?);
    let routes = super::models::resolve_routes(&a.model)?;
    for why in &routes.unavailable {
        eprintln!("note: {why}");
    }
    let store = open_store()?;
    let interactive_terminal = std::io::stdin().is_terminal();
    let person: Arc<dyn Approver> = match (interactive_terminal, a.on_approval) {
        (true, None) => Arc::new(TerminalApprover),
        (_, Some(OnApproval::Approve)) => Arc::new(PolicyApprover { approve: true }),
        (_, Some(OnApproval::Reject)) => Arc::new(PolicyApprover { approve: false }),
        (false, None) => {
            eprintln!(
                "note: no terminal to ask for approvals: approval requests will be rejected (use --on-approval approve|reject)"
            );
            Arc::new(PolicyApprover { approve: false })
        }
    };
    let config = AgentConfig {
        max_steps: a.max_steps,
        max_duration: Duration::from_secs(a.max_minutes * 60),
        mode: a.mode,
        token_budget: a.token_budget,
        finish_verify: a.finish_verify,
        lang: a.lang,
        device_wait: Duration::from_secs(a.device_wait),
        ..AgentConfig::default()
    };
    let auto_review = if a.mode == AccessMode::ApproveForMe {
        if routes.auto_reviewer.is_none() {
            eprintln!(
                "note: approve-for-me has no auto_reviewer model: every request it would review goes to you (set roles.auto_reviewer in models.json or PHONE_AGENT_AUTO_REVIEWER_MODEL)"
            );
        }
        super::approvals::load_policy(a.approval_policy.as_deref())?
    } else {
        Default::default()
    };
    let session = Session::new(
        SessionParts {
            device,
            actor: routes.actor,
            verifier: routes.verifier,
            safety_reviewer: routes.safety_reviewer,
            auto_reviewer: routes.auto_reviewer,
            auto_review,
            recorder: Arc::new(StoreRecorder::new(store)),
            calibration_cache: None,
            screen_reader: screen_reader(a.no_screen_reading),
            person: Some(person),
        },
        config,
        Delegation::default(),
    );
    let printer = spawn_printer(session.subscribe(), a.json);
    let mut last = 0;
    match a.task {
        Some(task) => {
            last = exit_code(&run_task(&session, &task, a.mode).await?);
        }
        None => {
            eprintln!(
                "PhoneAgent interactive mode: type a task and press Enter (\"help\" for help; an empty line, \"exit\" or Ctrl-D quits)."
            );
            loop {
                eprint!("task> ");
                let _ = std::io::stderr().flush();
                let read = tokio::task::spawn_blocking(|| {
                    let mut s = String::new();
                    std::io::stdin().lock().read_line(&mut s).map(|n| (n, s))
                });
                // Ctrl-C at the prompt quits (no run is going: nothing to restore).
                let line = tokio::select! {
                    r = read => r??,
                    _ = super::out::stop_signal() => {
                        super::out::note("");
                        std::process::exit(130);
                    }
                };
                let task = line.1.trim().to_string();
                if line.0 == 0 || task.is_empty() {
                    break;
                }
                // Words a user types to leave or to get help are not tasks for the phone.
                match task.to_lowercase().as_str() {
                    "exit" | "quit" | "q" | ":q" | "退出" => break,
                    "help" | "?" | "帮助" => {
                        super::out::note(
                            "Type what the phone should do, e.g. \"Open Settings and turn on Wi-Fi\", and press Enter. \
                             An empty line, Ctrl-D, \"exit\" or Ctrl-C quits; Ctrl-C during a task cancels it.",
                        );
                        continue;
                    }
                    _ => {}
                }
                last = match run_task(&session, &task, a.mode).await {
                    // Too long a task ends only this task, not the session.
                    Err(
                        e @ SessionError::Start(phoneagent_runtime::RuntimeError::TaskTooLong {
                            ..
                        }),
                    ) => {
                        super::out::note(&format!("error: {e}"));
                        1
                    }
                    other => exit_code(&other?),
                };
            }
        }
    }
    // Let the printer drain the last events.
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(session);
    let _ = tokio::time::timeout(Duration::from_secs(1), printer).await;
    Ok(last)
}

/// `phoneagent runs`
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// How many runs to list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// List past runs.
pub async fn runs(_g: &Global, a: RunsArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let list = store.list_runs(a.limit)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    if list.is_empty() {
        outln!("no runs yet: start one with `phoneagent run \"<task>\"` or `phoneagent demo`");
        return Ok(0);
    }
    outln!(
        "{:<10} {:<12} {:>6} {:>8}  task",
        "run",
        "status",
        "events",
        "tokens"
    );
    for r in list {
        let id = r.id.to_string();
        outln!(
            "{:<10} {:<12} {:>6} {:>8}  {}",
            &id[..8],
            r.status.as_str(),
            r.event_count,
            r.prompt_tokens + r.completion_tokens,
            phoneagent_protocol::text::inert_line(&r.task)
        );
    }
    Ok(0)
}

/// `phoneagent export`
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Run id (or a unique prefix of it, as `phoneagent runs` shows).
    pub run_id: String,
    /// json (trajectory schema 1.3) or html (self-contained report).
    #[arg(long, default_value = "html")]
    pub format: String,
    /// Output file.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

/// The one run whose id starts with `prefix` (`phoneagent runs` shows 8 characters).
///
/// # Errors
/// No run or several runs match (the message says what to do); store errors.
pub fn find_run(store: &Store, prefix: &str) -> anyhow::Result<uuid::Uuid> {
    let ids = store.find_runs_by_prefix(prefix)?;
    match ids.as_slice() {
        [id] => Ok(*id),
        [] => anyhow::bail!("no run matches {prefix:?}: list runs with `phoneagent runs`"),
        _ => anyhow::bail!(
            "{prefix:?} matches {} runs: give more characters of the run id",
            ids.len()
        ),
    }
}

/// Export a run.
pub async fn export(_g: &Global, a: ExportArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let id = find_run(&store, &a.run_id)?;
    write_export(&store, id, &a.format, &a.output)?;
    outln!("wrote {}", a.output.display());
    Ok(0)
}

/// Write the export of `run_id` in `format` to `path`.
pub fn write_export(
    store: &Store,
    run_id: uuid::Uuid,
    format: &str,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let bytes = match format {
        "json" => serde_json::to_vec_pretty(&phoneagent_store::export::trajectory_json(
            store,
            run_id,
            &phoneagent_store::export::JsonOptions {
                inline_screenshots: false,
            },
        )?)?,
        "html" => {
            phoneagent_store::export::html_report(store, run_id, &Default::default())?.into_bytes()
        }
        other => anyhow::bail!("unknown export format {other:?}: use json or html"),
    };
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_prompt_leads_with_the_gate_reading_and_labels_the_model_text() {
        let req = HumanRequest {
            id: "r1".into(),
            kind: HumanRequestKind::Approval {
                tool: "tap".into(),
                target: "「关闭通知」\u{1b}[2J\r⏸ Approve tap → 「关闭通知」?".into(),
                tier: phoneagent_protocol::RiskTier::Hard,
                reasons: vec!["commit_irreversible".into()],
                screen: Some("确认支付 ¥899".into()),
                model_reason: Some("close it\u{1b}]0;x\u{7}\nyes".into()),
            },
            expires_at_ms: 0,
            task: "Check my notifications".into(),
            detail: "⚠️ blocked\u{1b}[31m".into(),
        };
        let p = approval_prompt(&req);
        assert!(!p.contains('\u{1b}') && !p.contains('\r') && !p.contains('\u{7}'));
        let gate = p.find("the gate's reading").expect("gate line");
        let screen = p.find("确认支付 ¥899").expect("screen text");
        let model = p
            .find("what the model wrote (unverified)")
            .expect("model block");
        assert!(gate < model && screen < model, "{p}");
        // The model's fake prompt stays inside its labelled line: it cannot start a line.
        assert!(
            p.lines()
                .all(|l| !l.starts_with('⏸') || l.starts_with("⏸ Run this tap?")),
            "{p}"
        );
    }
}
