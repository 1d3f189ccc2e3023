//! `protocol parse` (SPEC C2, A1-A5).

use super::Global;

/// Protocol subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProtocolCommand {
    /// Read one model output on stdin; print the parsed action as JSON (exit 0) or the rejection (exit 1).
    Parse {
        /// Which front end: the `do(...)` grammar or OpenAI tool calls (JSON).
        #[arg(long, default_value = "do")]
        format: String,
    },
}

/// Run a protocol subcommand.
pub async fn run(_g: &Global, _c: ProtocolCommand) -> anyhow::Result<u8> {
    anyhow::bail!("`protocol` is not built yet")
}
