//! Failed attempts and the errors they become: transport failures classified, HTTP statuses
//! with a hint, the server's message extracted, and the API key scrubbed from any quoted text
//! (SPEC P5).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::ChatClient;
use crate::error::{LlmError, TimeoutPhase};

/// One failed attempt, before deciding whether to retry.
#[derive(Debug)]
pub(super) enum Attempt {
    Status {
        status: StatusCode,
        detail: String,
        retry_after: Option<Duration>,
    },
    Connect(String),
    ConnectTimeout,
    Malformed {
        detail: String,
        excerpt: String,
    },
}

impl Attempt {
    pub(super) fn summary(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("HTTP {}", status.as_u16()),
            Self::Connect(d) => format!("connection error: {d}"),
            Self::ConnectTimeout => "connect timeout".into(),
            Self::Malformed { detail, .. } => format!("malformed body: {detail}"),
        }
    }
}

pub(super) fn classify_reqwest(e: &reqwest::Error) -> Attempt {
    if e.is_connect() && e.is_timeout() {
        return Attempt::ConnectTimeout;
    }
    // Walk the source chain: reqwest's Display hides the root cause ("error sending request").
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    // Strip the URL reqwest appends ("for url (...)"); the endpoint is in the message anyway.
    Attempt::Connect(detail)
}

pub(super) fn status_hint(status: StatusCode, key_source: &str) -> String {
    match status.as_u16() {
        400 | 422 => "The server refused the request: check that the model accepts images (vision) and, if the profile uses protocol \"tools\", function calling; or set stream to false in the profile".into(),
        401 | 403 => format!("The server rejected the credentials ({key_source}): store a valid API key in the profile's keyring entry"),
        404 => "Check base_url (most servers need the /v1 suffix) and the model name".into(),
        413 => "The request is too large: lower image.max_long_side or image.max_pixels in the profile".into(),
        408 | 429 | 500..=599 => "The server failed; try again later or check the server's logs".into(),
        _ => "Check the endpoint's documentation for this status".into(),
    }
}

/// Replaces every occurrence of `secret` in `text` with `[redacted]` (SPEC P5). Keys shorter than
/// 4 characters are not searched for (they would match ordinary text).
pub fn scrub_secret(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    }
}

/// The server's error message (OpenAI `{"error":{"message":…}}` shape or raw text), truncated.
pub(super) fn error_detail(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error")?;
        match e {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| Some(e.to_string())),
            _ => None,
        }
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        "(empty body)".into()
    } else {
        truncate_chars(&text, 300)
    }
}

pub(super) fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

impl ChatClient {
    pub(super) fn final_error(&self, a: Attempt, attempts: u32) -> LlmError {
        let endpoint = self.endpoint.clone();
        let model = self.cfg.model.clone();
        let key = self.key();
        match a {
            Attempt::Status {
                status,
                retry_after,
                ..
            } if status == StatusCode::TOO_MANY_REQUESTS => LlmError::RateLimited {
                endpoint,
                model,
                attempts,
                retry_after: match retry_after {
                    Some(d) => format!(" (the server asked to wait {} s more)", d.as_secs()),
                    None => String::new(),
                },
                retry_after_ms: retry_after.map(|d| d.as_millis() as u64),
            },
            Attempt::Status { status, detail, .. } => LlmError::Http {
                endpoint,
                model,
                status: status.as_u16(),
                attempts,
                detail: scrub_secret(&detail, key),
                hint: status_hint(status, &self.cfg.key_source),
            },
            Attempt::Connect(detail) => LlmError::Connect {
                endpoint,
                model,
                attempts,
                detail: scrub_secret(&detail, key),
            },
            Attempt::ConnectTimeout => LlmError::Timeout {
                endpoint,
                model,
                phase: TimeoutPhase::Connect,
                after_ms: self.cfg.connect_timeout_ms,
            },
            Attempt::Malformed { detail, excerpt } => LlmError::MalformedResponse {
                endpoint,
                model,
                detail: scrub_secret(&detail, key),
                excerpt: scrub_secret(&excerpt, key),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_key() {
        assert_eq!(
            scrub_secret("bad key sk-abcdef given", Some("sk-abcdef")),
            "bad key [redacted] given"
        );
        assert_eq!(scrub_secret("abc", Some("ab")), "abc");
    }
}
