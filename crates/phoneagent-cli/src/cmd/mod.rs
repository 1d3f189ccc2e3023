//! Subcommands. Each module owns its clap args and its handler; handlers return the exit code.

#[macro_use]
pub mod out;
pub mod approvals;
pub mod demo;
pub mod device;
pub mod mcp;
pub mod models;
pub mod protocol;
pub mod run;
pub mod safety;
pub mod sim;
pub mod timeline;
pub mod web;

/// Flags every subcommand takes.
#[derive(Debug, clap::Args)]
pub struct Global {
    /// adb server to use, as HOST:PORT (default: ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_PORT, 127.0.0.1:5037).
    #[arg(long, global = true, value_name = "HOST:PORT")]
    pub adb: Option<String>,
    /// Drive a phone's adbd directly over TCP, without an adb server (a phone after
    /// `adb tcpip 5555`, or the virtual phone's `sim serve --adbd-port`). Without it and
    /// without a running adb server, phones on USB are driven directly.
    #[arg(
        long,
        global = true,
        value_name = "HOST:PORT",
        env = "PHONEAGENT_ADB_DIRECT"
    )]
    pub direct: Option<String>,
    /// More logging (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Logs go to stderr; `RUST_LOG` overrides the level.
pub fn init_tracing(g: &Global) {
    let level = match g.verbose {
        0 => "warn,phoneagent_testkit=error",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Colour codes only on a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
