//! `scripted-model`: the scripted OpenAI-compatible model server as a process (SPEC V5).
//!
//! Prints one line `scripted model listening on http://127.0.0.1:PORT/v1` on stdout once it
//! accepts connections, then serves until Ctrl-C or SIGTERM. See the `phoneagent_testkit` crate
//! docs for the script format.

use anyhow::Context as _;
use clap::Parser;
use phoneagent_testkit::ScriptedModel;
use phoneagent_testkit::serve::ServeArgs;
use std::io::Write as _;

/// Scripted OpenAI-compatible model server on 127.0.0.1 for PhoneAgent tests and demos.
#[derive(Debug, Parser)]
#[command(name = "scripted-model", version)]
struct Args {
    #[command(flatten)]
    serve: ServeArgs,
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
    let config = args.serve.into_config()?;
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
