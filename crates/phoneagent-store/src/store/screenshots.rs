//! Screenshots stored once by content hash (SHA-256).

use rusqlite::{OptionalExtension, params};

use super::{Store, sha256_hex};
use crate::error::{Result, StoreError};
use crate::types::{StoredScreenshot, now_ms};

impl Store {
    // ---------------------------------------------------------------------------- screenshots

    /// Stores an encoded screenshot once by content hash and returns the hash (lowercase hex
    /// SHA-256, 64 chars). Storing the same bytes again is a cheap no-op returning the same hash.
    /// `width`/`height` are in px; `mime` is e.g. `image/png`.
    pub fn put_screenshot(
        &self,
        bytes: &[u8],
        mime: &str,
        width: u32,
        height: u32,
    ) -> Result<String> {
        let hash = sha256_hex(bytes);
        self.writer()
            .prepare_cached(
                "INSERT OR IGNORE INTO screenshots (sha256, mime, width, height, bytes, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| s.execute(params![hash, mime, width, height, bytes, now_ms()]))
            .map_err(StoreError::sqlite("put_screenshot"))?;
        Ok(hash)
    }

    /// A stored screenshot by hash, `None` when absent.
    pub fn screenshot(&self, sha256: &str) -> Result<Option<StoredScreenshot>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT sha256, mime, width, height, bytes FROM screenshots WHERE sha256 = ?1",
            )
            .map_err(StoreError::sqlite("screenshot"))?;
        stmt.query_row([sha256.to_ascii_lowercase()], |r| {
            Ok(StoredScreenshot {
                sha256: r.get(0)?,
                mime: r.get(1)?,
                width: r.get(2)?,
                height: r.get(3)?,
                bytes: r.get(4)?,
            })
        })
        .optional()
        .map_err(StoreError::sqlite("screenshot"))
    }

    /// Number of distinct screenshots stored.
    pub fn screenshot_count(&self) -> Result<u64> {
        let n: i64 = self
            .reader()
            .query_row("SELECT COUNT(*) FROM screenshots", [], |r| r.get(0))
            .map_err(StoreError::sqlite("screenshot_count"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
