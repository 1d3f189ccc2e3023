//! API keys in the OS keyring (SPEC P5, U5): Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows, through the `keyring` crate. Keys never go to files, SQLite,
//! logs, events or error messages; in memory they live in [`ApiKey`], whose `Debug`/`Display`
//! print `[redacted]`.
//!
//! Every entry is stored under service [`SERVICE`] with the entry name as the user/account, so
//! `secret-tool search service phoneagent` lists them on Linux.
//!
//! The `keyring` calls are blocking (D-Bus round trips); from async code call them through
//! `tokio::task::spawn_blocking` or the `*_async` helpers.

use secrecy::{ExposeSecret, SecretString};

use crate::error::{LlmError, Result};

/// Keyring service name of every PhoneAgent entry.
pub const SERVICE: &str = "phoneagent";

/// An API key. `Debug` and `Display` redact; [`ApiKey::expose`] is the only way to read it and
/// is used only to build the `Authorization` header.
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wraps a key. Surrounding whitespace (a pasted newline) is trimmed.
    pub fn new(key: impl Into<String>) -> Self {
        let key: String = key.into();
        Self(SecretString::from(key.trim().to_string()))
    }

    /// The raw key. Only for building the HTTP request that needs it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// True for an empty key.
    pub fn is_empty(&self) -> bool {
        self.expose().is_empty()
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where API keys are looked up by entry name.
///
/// [`KeyStore`] is the real implementation; [`ModelsConfig::resolve`](crate::config::ModelsConfig::resolve)
/// takes this trait so a front end can pass the store it already has.
pub trait KeyLookup: Send + Sync {
    /// The key stored under `entry`, `Ok(None)` when there is none.
    fn lookup(&self, entry: &str) -> Result<Option<ApiKey>>;
}

/// The OS keyring, entries under service [`SERVICE`].
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    _private: (),
}

impl KeyStore {
    /// The platform's default credential store (Secret Service on Linux).
    pub fn new() -> Self {
        Self { _private: () }
    }

    fn entry(entry: &str) -> Result<keyring::Entry> {
        validate_entry_name(entry)?;
        keyring::Entry::new(SERVICE, entry).map_err(|e| keyring_error(entry, &e))
    }

    /// Stores (or replaces) the key of `entry`.
    pub fn set(&self, entry: &str, key: &ApiKey) -> Result<()> {
        if key.is_empty() {
            return Err(LlmError::config(format!(
                "refusing to store an empty API key in keyring entry {entry:?}; use delete to remove it"
            )));
        }
        Self::entry(entry)?
            .set_password(key.expose())
            .map_err(|e| keyring_error(entry, &e))
    }

    /// The key of `entry`, `Ok(None)` when the entry does not exist.
    pub fn get(&self, entry: &str) -> Result<Option<ApiKey>> {
        match Self::entry(entry)?.get_password() {
            Ok(p) => Ok(Some(ApiKey::new(p))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(entry, &e)),
        }
    }

    /// True when `entry` holds a key.
    pub fn has(&self, entry: &str) -> Result<bool> {
        Ok(self.get(entry)?.is_some())
    }

    /// Deletes `entry`; returns whether it existed.
    pub fn delete(&self, entry: &str) -> Result<bool> {
        match Self::entry(entry)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(keyring_error(entry, &e)),
        }
    }

    /// [`KeyStore::get`] on the blocking pool.
    pub async fn get_async(&self, entry: &str) -> Result<Option<ApiKey>> {
        let store = self.clone();
        let name = entry.to_string();
        tokio::task::spawn_blocking(move || store.get(&name))
            .await
            .map_err(|e| LlmError::Keyring {
                entry: entry.to_string(),
                detail: format!("keyring task failed: {e}"),
            })?
    }
}

impl KeyLookup for KeyStore {
    fn lookup(&self, entry: &str) -> Result<Option<ApiKey>> {
        self.get(entry)
    }
}

/// Entry names: 1..=128 chars of `A-Za-z0-9._-` (they show up in UIs and `secret-tool`).
pub fn validate_entry_name(entry: &str) -> Result<()> {
    let ok = !entry.is_empty()
        && entry.len() <= 128
        && entry
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(LlmError::config(format!(
            "invalid keyring entry name {entry:?}: use 1-128 characters of letters, digits, '.', '_' or '-'"
        )))
    }
}

fn keyring_error(entry: &str, e: &keyring::Error) -> LlmError {
    // keyring's messages describe the platform failure; they never contain the password.
    let detail = match e {
        keyring::Error::NoStorageAccess(inner) => {
            format!("no access to the credential store ({inner})")
        }
        keyring::Error::PlatformFailure(inner) => format!("credential store failure ({inner})"),
        other => other.to_string(),
    };
    LlmError::Keyring {
        entry: entry.to_string(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_redacts() {
        let k = ApiKey::new("sk-secret-123\n");
        assert_eq!(format!("{k:?}"), "ApiKey([redacted])");
        assert_eq!(format!("{k}"), "[redacted]");
        assert_eq!(k.expose(), "sk-secret-123");
    }

    #[test]
    fn entry_names() {
        assert!(validate_entry_name("openai.main-1").is_ok());
        assert!(validate_entry_name("").is_err());
        assert!(validate_entry_name("a b").is_err());
        let err = validate_entry_name("x/y").unwrap_err().to_string();
        assert!(err.contains("invalid keyring entry name"), "{err}");
    }
}
