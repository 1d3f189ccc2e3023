//! Exports of a run (SPEC T2, U6): the trajectory JSON (schema `1.3`) and a self-contained
//! HTML report. Both are derived from the stored events through [`RunView`].

pub mod html;
pub mod trajectory;

use std::io::Write;
use std::path::Path;

pub use html::{HtmlOptions, html_report, write_html_report};
pub use trajectory::{JsonOptions, RunView, StepView, trajectory_json, write_trajectory_json};

use crate::error::{Result, StoreError};

/// `ms` since the Unix epoch as RFC 3339 UTC (`2026-11-30T04:06:25.123Z`), `None` if out of range.
pub fn rfc3339(ms: i64) -> Option<String> {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()?;
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// Writes `bytes` to `path` atomically (a temporary file in the same directory, then rename).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let err = |source| StoreError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map_err(err)
}
