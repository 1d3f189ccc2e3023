//! Finding `scrcpy-server` on this computer and its version (SPEC D8).
//!
//! Order: the path in settings ([`crate::AdbDeviceOptions::scrcpy_server`]), then
//! `SCRCPY_SERVER_PATH` (the variable scrcpy itself reads), then the scrcpy package's usual
//! install locations (Debian/Ubuntu `/usr/share/scrcpy`, source builds `/usr/local/share/scrcpy`,
//! Homebrew `/opt/homebrew/share/scrcpy`, snap), then next to a `scrcpy` on `PATH` (release
//! archives put `scrcpy-server` beside the binary).
//!
//! The server refuses a client of another version, so the version matters: the setting
//! ([`crate::AdbDeviceOptions::scrcpy_version`]), else `scrcpy --version` of the scrcpy that
//! ships the server, else [`DEFAULT_SCRCPY_VERSION`].

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The variable scrcpy reads for its server's path.
pub const SCRCPY_SERVER_ENV: &str = "SCRCPY_SERVER_PATH";
/// The version assumed when neither a setting nor a `scrcpy` binary tells it.
pub const DEFAULT_SCRCPY_VERSION: &str = "3.3.4";

const INSTALL_LOCATIONS: &[&str] = &[
    "/usr/share/scrcpy/scrcpy-server",
    "/usr/local/share/scrcpy/scrcpy-server",
    "/opt/homebrew/share/scrcpy/scrcpy-server",
    "/home/linuxbrew/.linuxbrew/share/scrcpy/scrcpy-server",
    "/snap/scrcpy/current/usr/share/scrcpy/scrcpy-server",
];

fn scrcpy_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| {
            d.join(if cfg!(windows) {
                "scrcpy.exe"
            } else {
                "scrcpy"
            })
        })
        .find(|p| p.is_file())
}

/// Where `scrcpy-server` is, or `None` (then the stream falls back to `screenrecord`).
pub fn find_scrcpy_server(setting: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = setting {
        return p.is_file().then(|| p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(SCRCPY_SERVER_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(p) = INSTALL_LOCATIONS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    {
        return Some(p);
    }
    let bin = scrcpy_on_path()?;
    let dir = bin.parent()?;
    [
        dir.join("scrcpy-server"),
        dir.join("../share/scrcpy/scrcpy-server"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Parse `scrcpy 3.3.4 <https://github.com/Genymobile/scrcpy>` → `3.3.4`.
pub fn parse_scrcpy_version(out: &str) -> Option<String> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("scrcpy "))?;
    let v = line.split_whitespace().nth(1)?;
    v.chars()
        .next()
        .filter(char::is_ascii_digit)
        .map(|_| v.trim_start_matches('v').to_owned())
}

/// The version to announce to the server: `setting`, else what `scrcpy --version` says, else
/// [`DEFAULT_SCRCPY_VERSION`].
pub async fn scrcpy_version(setting: Option<&str>) -> String {
    if let Some(v) = setting.filter(|v| !v.trim().is_empty()) {
        return v.trim().to_owned();
    }
    if let Some(bin) = scrcpy_on_path() {
        let run = tokio::process::Command::new(bin)
            .arg("--version")
            .kill_on_drop(true)
            .output();
        if let Ok(Ok(o)) = tokio::time::timeout(Duration::from_secs(3), run).await
            && let Some(v) = parse_scrcpy_version(&String::from_utf8_lossy(&o.stdout))
        {
            return v;
        }
    }
    DEFAULT_SCRCPY_VERSION.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_settings() {
        assert_eq!(
            parse_scrcpy_version(
                "scrcpy 3.3.4 <https://github.com/Genymobile/scrcpy>\n\nDependencies"
            ),
            Some("3.3.4".into())
        );
        assert_eq!(parse_scrcpy_version("scrcpy v2.7"), None);
        assert_eq!(parse_scrcpy_version("nothing"), None);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("scrcpy-server");
        std::fs::write(&f, b"x").unwrap();
        assert_eq!(find_scrcpy_server(Some(&f)), Some(f.clone()));
        assert_eq!(find_scrcpy_server(Some(&dir.path().join("missing"))), None);
    }
}
