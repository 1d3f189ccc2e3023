//! `phoneagent`: the command-line front end over the PhoneAgent runtime (SPEC C1-C3).

#[macro_use]
mod cmd;

use clap::{Parser, Subcommand};

/// PhoneAgent: carries out a task on an Android phone by looking at screenshots, under a safety
/// gate that never lets an irreversible action happen without the right confirmation.
#[derive(Debug, Parser)]
#[command(name = "phoneagent", version, long_about = None)]
struct Cli {
    #[command(flatten)]
    global: cmd::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List connected phones with their state and the fix for each problem.
    Devices(cmd::device::DevicesArgs),
    /// Check that a phone (and the model endpoint) is ready, with a fix for each failed check.
    Doctor(cmd::device::DoctorArgs),
    /// Save a screenshot of the phone as PNG.
    Screenshot(cmd::device::ScreenshotArgs),
    /// Carry out a task on the phone (without a task: interactive mode, task after task).
    Run(cmd::run::RunArgs),
    /// List past runs.
    Runs(cmd::run::RunsArgs),
    /// Export a run as JSON (trajectory schema 1.3) or a self-contained HTML report.
    Export(cmd::run::ExportArgs),
    /// Print the approve-for-me ledger of a run (every approval request with its verdict).
    Approvals(cmd::approvals::ApprovalsArgs),
    /// Serve the Model Context Protocol on stdio: other agents use the phone through the safety
    /// gate (approvals of irreversible actions stay with you).
    Mcp(cmd::mcp::McpArgs),
    /// Serve the desktop app's UI to a browser on 127.0.0.1, behind a per-start token printed
    /// in the URL (watch runs live, answer approvals, see history; `--listen` exposes it).
    Web(cmd::web::WebArgs),
    /// Run a sample task end to end on the virtual phone with the scripted model (no phone, no API key).
    Demo(cmd::demo::DemoArgs),
    /// The virtual phone: serve it over the ADB protocol, read its ground truth.
    #[command(subcommand)]
    Sim(cmd::sim::SimCommand),
    /// Model profiles, families and provider presets (models.json; keys only in the OS keyring).
    #[command(subcommand)]
    Models(cmd::models::ModelsCommand),
    /// Inspect the action protocol.
    #[command(subcommand)]
    Protocol(cmd::protocol::ProtocolCommand),
    /// Inspect the safety gate.
    #[command(subcommand)]
    Safety(cmd::safety::SafetyCommand),
}

fn main() -> std::process::ExitCode {
    // Started as `phoneagent web`'s virtual phone (its own process): serve it and end.
    if let Some(code) = phoneagent_console::virtual_phone::run_child_if_asked() {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = Cli::parse();
    cmd::init_tracing(&cli.global);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = rt.block_on(async move {
        match cli.command {
            Command::Devices(a) => cmd::device::devices(&cli.global, a).await,
            Command::Doctor(a) => cmd::device::doctor(&cli.global, a).await,
            Command::Screenshot(a) => cmd::device::screenshot(&cli.global, a).await,
            Command::Run(a) => cmd::run::run(&cli.global, a).await,
            Command::Runs(a) => cmd::run::runs(&cli.global, a).await,
            Command::Export(a) => cmd::run::export(&cli.global, a).await,
            Command::Approvals(a) => cmd::approvals::approvals(&cli.global, a).await,
            Command::Demo(a) => cmd::demo::demo(&cli.global, a).await,
            Command::Mcp(a) => cmd::mcp::mcp(&cli.global, a).await,
            Command::Web(a) => cmd::web::web(&cli.global, a).await,
            Command::Sim(c) => cmd::sim::run(&cli.global, c).await,
            Command::Models(c) => cmd::models::run(&cli.global, c).await,
            Command::Protocol(c) => cmd::protocol::run(&cli.global, c).await,
            Command::Safety(c) => cmd::safety::run(&cli.global, c).await,
        }
    });
    // A thread still blocked reading the terminal (an approval prompt answered by Ctrl-C) must
    // not keep the process alive: the run is over, the IME restored.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    if let Some(e) = cmd::out::write_error() {
        cmd::out::note(&format!("error: cannot write the output: {e}"));
        return std::process::ExitCode::from(2);
    }
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            cmd::out::note(&format!("error: {e:#}"));
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency check over every subcommand: argument ids unique per command (a
    /// flattened `--capture` once clashed with `demo --mode`, and `phoneagent demo` panicked).
    #[test]
    fn every_subcommand_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
