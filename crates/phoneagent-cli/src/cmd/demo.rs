//! `phoneagent demo`: a labelled end-to-end run on the virtual phone with the scripted model —
//! no phone and no API key needed (SPEC C1). Both run in-process but are reached over their real
//! protocols (ADB on loopback, OpenAI-compatible HTTP on loopback), so this is the same code path
//! as a real run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use phoneagent_console::demo::{DemoModel, demo_config};
use phoneagent_device::{AdbDevice, AdbServer, AdbServerAddr, Device};
use phoneagent_protocol::AccessMode;
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{Delegation, PolicyApprover, Session, SessionParts};
use phoneagent_sim::{SimConfig, SimServer};

use super::Global;
use super::run::{exit_code, open_store, run_task, spawn_printer, write_export};

use phoneagent_testkit::demo::SCENARIOS;

/// `phoneagent demo`
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Scenario: buy (default) or draft-mail.
    #[arg(long, default_value = "buy")]
    pub scenario: String,
    /// Where to write the HTML report.
    #[arg(long, default_value = "phoneagent-demo-report.html")]
    pub report: PathBuf,
    /// Print JSON lines of events instead of the timeline.
    #[arg(long)]
    pub json: bool,
    /// List the scenarios and exit.
    #[arg(long)]
    pub list: bool,
    /// Access mode of the scenario's script (default: the scenario's own; `--list` shows which
    /// scenario has which). approve-for-me: the scripted model also acts as the auto-reviewer.
    #[arg(long)]
    pub mode: Option<AccessMode>,
    /// approve-for-me: policy/gate file (TOML or JSON; default: the config dir's, else defaults).
    #[arg(long, value_name = "FILE")]
    pub approval_policy: Option<PathBuf>,
    #[command(flatten)]
    pub capture: super::run::CaptureArg,
}

/// Run the demo.
pub async fn demo(_g: &Global, a: DemoArgs) -> anyhow::Result<u8> {
    // With --json, stdout carries only the JSON lines of events: the demo's own lines go to
    // stderr.
    let json = a.json;
    macro_rules! info {
        ($($arg:tt)*) => {
            if json {
                super::out::note(&format!($($arg)*));
            } else {
                outln!($($arg)*);
            }
        };
    }
    if a.list {
        for s in SCENARIOS {
            outln!(
                "{:<11} {:<15} {} — {}",
                s.name,
                s.mode.as_str(),
                s.task,
                s.about
            );
        }
        return Ok(0);
    }
    let scenario = phoneagent_testkit::demo::find(&a.scenario, a.mode).with_context(|| {
        format!(
            "no demo scenario {:?}{}: choose one of {} (see `phoneagent demo --list`)",
            a.scenario,
            a.mode.map(|m| format!(" in mode {m}")).unwrap_or_default(),
            SCENARIOS
                .iter()
                .map(|s| format!("{} --mode {}", s.name, s.mode))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    let t0 = Instant::now();
    info!(
        "PhoneAgent DEMO — a virtual phone and a scripted model on this computer; no real phone or model is used."
    );
    info!(
        "A real run needs a phone with USB debugging and a model endpoint: see `phoneagent run --help`.\n"
    );

    let sim = SimServer::start(SimConfig::default(), 0)
        .await
        .context("cannot start the virtual phone")?;
    let serial = sim
        .serials()
        .into_iter()
        .next()
        .context("the virtual phone has no device")?;
    // The scenario's first screen (the app does the same, issue #13).
    if scenario.start_screen != "home" {
        sim.phone(&serial)
            .context("the virtual phone has no device")?
            .reset(scenario.start_screen)
            .context("cannot put the virtual phone on the scenario's first screen")?;
    }
    // The same rig as the app's "Run demo" (phoneagent_console::demo).
    let model = DemoModel::start(scenario, sim.port(), &serial)
        .await
        .map_err(anyhow::Error::msg)?;

    let addr = AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port()))?;
    let device: Arc<dyn Device> = Arc::new(
        AdbDevice::open(
            AdbServer::new(addr),
            &serial,
            super::run::device_options(a.capture.mode),
        )
        .await?,
    );
    let store = open_store()?;
    let auto_review = if scenario.mode == AccessMode::ApproveForMe {
        super::approvals::load_policy(a.approval_policy.as_deref())?
    } else {
        Default::default()
    };
    // The demo runs through the same session as `phoneagent run` (SPEC A7); nobody is asked
    // (the scripted model confirms what its scenario needs), so every approval is rejected.
    let session = Session::new(
        SessionParts {
            device,
            actor: model.route("actor")?,
            verifier: Some(model.route("verifier")?),
            safety_reviewer: None,
            auto_reviewer: Some(model.route("auto-reviewer")?),
            auto_review,
            recorder: Arc::new(StoreRecorder::new(store.clone())),
            calibration_cache: None,
            screen_reader: super::run::screen_reader(false),
            person: Some(Arc::new(PolicyApprover { approve: false })),
        },
        demo_config(scenario),
        Delegation::default(),
    );
    let printer = spawn_printer(session.subscribe(), a.json);
    let outcome = run_task(&session, scenario.task, scenario.mode).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(session);
    let _ = tokio::time::timeout(Duration::from_secs(1), printer).await;

    let truth = sim.phone(&serial).map(|p| p.ground_truth());
    if let Some(t) = &truth {
        info!(
            "\nvirtual phone ground truth: screen {} · orders placed {} · mails sent {}",
            t.current_screen,
            t.orders_placed,
            t.mails_sent.len()
        );
    }
    let run_id = uuid::Uuid::parse_str(&outcome.run_id)?;
    write_export(&store, run_id, "html", &a.report)?;
    info!("report: {}", a.report.display());
    info!(
        "history: `phoneagent runs`; export: `phoneagent export {} --format json -o run.json`",
        &outcome.run_id[..8]
    );
    if scenario.mode == AccessMode::ApproveForMe {
        info!("approvals: `phoneagent approvals {}`", &outcome.run_id[..8]);
    }
    info!("demo finished in {:.1} s", t0.elapsed().as_secs_f64());
    model.shutdown().await;
    sim.shutdown().await;
    Ok(exit_code(&outcome))
}
