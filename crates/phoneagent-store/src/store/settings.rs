//! Settings (SPEC U5) and the calibration cache (SPEC M4): JSON values by key.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Store;
use crate::error::{Result, StoreError};
use crate::types::{CalibrationEntry, now_ms};

impl Store {
    // ------------------------------------------------------------------------------- settings

    /// A setting decoded as `T`, `None` when unset (SPEC U5).
    ///
    /// Errors: [`StoreError::Json`] when the stored JSON does not fit `T`.
    pub fn setting<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let raw: Option<String> = self
            .reader()
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(StoreError::sqlite("setting"))?;
        raw.map(|s| serde_json::from_str(&s).map_err(StoreError::json(format!("setting '{key}'"))))
            .transpose()
    }

    /// Sets a setting to `value` (as JSON), replacing any previous value.
    ///
    /// Errors: [`StoreError::SecretInSettings`] when the value has a field that looks like an API
    /// key, password or token (see [`crate::secrets`]) — those go in the OS keyring.
    pub fn set_setting<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let json =
            serde_json::to_value(value).map_err(StoreError::json(format!("setting '{key}'")))?;
        if crate::secrets::is_secret_name(key) && json.as_str().is_some_and(|s| !s.is_empty()) {
            return Err(StoreError::SecretInSettings {
                key: key.to_owned(),
                field: "$".to_owned(),
            });
        }
        if let Some(field) = crate::secrets::find_secret(&json) {
            return Err(StoreError::SecretInSettings {
                key: key.to_owned(),
                field,
            });
        }
        let text = json.to_string();
        self.writer()
            .execute(
                "INSERT INTO settings (key, value, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms",
                params![key, text, now_ms()],
            )
            .map_err(StoreError::sqlite("set_setting"))?;
        Ok(())
    }

    /// Removes a setting; returns whether it existed.
    pub fn remove_setting(&self, key: &str) -> Result<bool> {
        let n = self
            .writer()
            .execute("DELETE FROM settings WHERE key = ?1", [key])
            .map_err(StoreError::sqlite("remove_setting"))?;
        Ok(n > 0)
    }

    /// All settings as raw JSON, ordered by key.
    pub fn settings(&self) -> Result<Vec<(String, serde_json::Value)>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare("SELECT key, value FROM settings ORDER BY key")
            .map_err(StoreError::sqlite("settings"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(StoreError::sqlite("settings"))?;
        let mut out = Vec::new();
        for row in rows {
            let (k, v) = row.map_err(StoreError::sqlite("settings"))?;
            let v = serde_json::from_str(&v).map_err(StoreError::json(format!("setting '{k}'")))?;
            out.push((k, v));
        }
        Ok(out)
    }

    // ---------------------------------------------------------------------- calibration cache

    /// A cached calibration result by key (SPEC M4: the key encodes endpoint, model, thinking
    /// mode and screenshot sizing policy; the caller builds it). `None` when absent.
    pub fn calibration_get(&self, key: &str) -> Result<Option<CalibrationEntry>> {
        let raw: Option<(String, i64)> = self
            .reader()
            .query_row(
                "SELECT value, created_ms FROM calibration_cache WHERE key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(StoreError::sqlite("calibration_get"))?;
        raw.map(|(v, created_ms)| {
            Ok(CalibrationEntry {
                value: serde_json::from_str(&v)
                    .map_err(StoreError::json(format!("calibration cache entry '{key}'")))?,
                created_ms,
            })
        })
        .transpose()
    }

    /// Stores (or replaces) a calibration result.
    pub fn calibration_put<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string(value)
            .map_err(StoreError::json(format!("calibration cache entry '{key}'")))?;
        self.writer()
            .execute(
                "INSERT INTO calibration_cache (key, value, created_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, created_ms = excluded.created_ms",
                params![key, text, now_ms()],
            )
            .map_err(StoreError::sqlite("calibration_put"))?;
        Ok(())
    }

    /// Removes a calibration result; returns whether it existed.
    pub fn calibration_remove(&self, key: &str) -> Result<bool> {
        let n = self
            .writer()
            .execute("DELETE FROM calibration_cache WHERE key = ?1", [key])
            .map_err(StoreError::sqlite("calibration_remove"))?;
        Ok(n > 0)
    }
}
