//! `devices`, `doctor`, `screenshot` (SPEC C1, D1, D2).

use super::Global;

/// `phoneagent devices`
#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `phoneagent doctor`
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// ADB serial of the phone to check (default: ANDROID_SERIAL, or the only device).
    #[arg(long, env = "ANDROID_SERIAL")]
    pub serial: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `phoneagent screenshot`
#[derive(Debug, clap::Args)]
pub struct ScreenshotArgs {
    /// ADB serial (default: ANDROID_SERIAL, or the only device).
    #[arg(long, env = "ANDROID_SERIAL")]
    pub serial: Option<String>,
    /// Output PNG file.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

/// List devices.
pub async fn devices(_g: &Global, _a: DevicesArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`devices` is not built yet")
}

/// Preflight.
pub async fn doctor(_g: &Global, _a: DoctorArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`doctor` is not built yet")
}

/// Screenshot to file.
pub async fn screenshot(_g: &Global, _a: ScreenshotArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`screenshot` is not built yet")
}
