//! `sim serve`, `sim state` (SPEC V1-V4).

use super::Global;

/// Virtual phone subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Serve a virtual phone over the ADB protocol on 127.0.0.1:PORT until stopped.
    Serve {
        /// Port (default 5037 is avoided; 0 picks a free one).
        #[arg(long, default_value_t = 15037)]
        port: u16,
    },
    /// Print the ground truth of a running virtual phone as JSON.
    State {
        /// Port the virtual phone listens on.
        #[arg(long, default_value_t = 15037)]
        port: u16,
    },
}

/// Run a sim subcommand.
pub async fn run(_g: &Global, _c: SimCommand) -> anyhow::Result<u8> {
    anyhow::bail!("`sim` is not built yet")
}
