//! `safety classify` (SPEC C2, S3).

use super::Global;

/// Safety subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SafetyCommand {
    /// JSON lines in (`tool`, `target_description`, `text`, `reason`, `task`, `sensitive`), JSON lines out (`tier`, `reasons`).
    Classify,
}

/// Run a safety subcommand.
pub async fn run(_g: &Global, _c: SafetyCommand) -> anyhow::Result<u8> {
    anyhow::bail!("`safety` is not built yet")
}
