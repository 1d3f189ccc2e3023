//! `scripted-model`: the scripted OpenAI-compatible model server as a process (SPEC V5).
//!
//! Prints one line `scripted model listening on http://127.0.0.1:PORT/v1` on stdout once it
//! accepts connections, then serves until Ctrl-C or SIGTERM. See the `phoneagent_testkit` crate
//! docs for the script format.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Parser;
use phoneagent_protocol::CoordinateSpace;
use phoneagent_testkit::{
    OnExhausted, OracleConfig, Script, ScriptedModel, ScriptedModelConfig, SimTarget,
};

/// Scripted OpenAI-compatible model server on 127.0.0.1 for PhoneAgent tests and demos.
#[derive(Debug, Parser)]
#[command(name = "scripted-model", version)]
struct Args {
    /// Port on 127.0.0.1 (0 = pick a free one; the chosen port is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// JSONL script of answers (see the crate docs).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Oracle mode: answer calibration probes from the image, and read label placeholders'
    /// ground truth from the virtual phone listening on this port.
    #[arg(long, value_name = "PORT")]
    oracle_sim_port: Option<u16>,
    /// Oracle mode without a virtual phone (probes only).
    #[arg(long)]
    oracle: bool,
    /// Virtual phone port for `{{center:LABEL}}` placeholders (script mode).
    #[arg(long, value_name = "PORT", conflicts_with = "oracle_sim_port")]
    sim_port: Option<u16>,
    /// Virtual phone serial (default: the only device).
    #[arg(long, value_name = "SERIAL")]
    sim_serial: Option<String>,
    /// Coordinate space of answers: relative_0_999 or image_pixels.
    #[arg(long, default_value = "relative_0_999")]
    space: String,
    /// Append every request as a JSON line to this file.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Oracle: deliberate error of every answer, in image px (shifts right).
    #[arg(long, default_value_t = 0.0, value_name = "N")]
    oracle_error_px: f64,
    /// Oracle: answer wrong on purpose (tests fail-closed calibration).
    #[arg(long)]
    bad: bool,
    /// What an empty queue answers: error (HTTP 500) or repeat_last. Overrides the script.
    #[arg(long, value_name = "POLICY")]
    on_exhausted: Option<String>,
    /// Model ids for /v1/models (repeatable; default scripted-model).
    #[arg(long = "model", value_name = "ID")]
    models: Vec<String>,
    /// Require `Authorization: Bearer <key>` with the key read from this environment variable.
    #[arg(long, value_name = "VAR")]
    require_api_key_env: Option<String>,
    /// Characters per SSE delta.
    #[arg(long, default_value_t = 8)]
    stream_chunk_chars: usize,
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("scripted-model: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scripted-model: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let oracle_on = args.oracle || args.oracle_sim_port.is_some();
    if args.script.is_none() && !oracle_on {
        bail!(
            "give --script FILE (scripted answers) or --oracle-sim-port PORT / --oracle (oracle mode), or both"
        );
    }
    let space: CoordinateSpace = args.space.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    if !matches!(
        space,
        CoordinateSpace::Relative0999 | CoordinateSpace::ImagePixels
    ) {
        bail!("--space {space} is not supported: use relative_0_999 or image_pixels");
    }
    let mut script = match &args.script {
        Some(p) => Script::from_file(p)?,
        None => Script::default(),
    };
    if let Some(p) = &args.on_exhausted {
        script.on_exhausted = match p.as_str() {
            "error" => OnExhausted::Error,
            "repeat_last" => OnExhausted::RepeatLast,
            other => bail!("--on-exhausted {other:?}: use error or repeat_last"),
        };
    }
    let require_api_key = match &args.require_api_key_env {
        Some(var) => Some(std::env::var(var).with_context(|| {
            format!("--require-api-key-env {var}: the environment variable is not set")
        })?),
        None => None,
    };
    let sim_port = args.oracle_sim_port.or(args.sim_port);
    let config = ScriptedModelConfig {
        script,
        space,
        sim: sim_port.map(|port| SimTarget {
            port,
            serial: args.sim_serial.clone(),
        }),
        oracle: oracle_on.then_some(OracleConfig {
            error_px: args.oracle_error_px,
            bad: args.bad,
        }),
        models: if args.models.is_empty() {
            vec!["scripted-model".into()]
        } else {
            args.models.clone()
        },
        require_api_key,
        record_file: args.record.clone(),
        stream_chunk_chars: args.stream_chunk_chars.max(1),
        port: args.port,
    };
    let model = ScriptedModel::start(config).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "scripted model listening on {}", model.base_url())?;
        out.flush()?;
    }
    wait_for_signal().await?;
    model.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("cannot listen for Ctrl-C")?,
            _ = term.recv() => {}
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("cannot listen for Ctrl-C")
    }
}
