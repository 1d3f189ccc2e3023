//! The crate's error type. Every variant maps to a stable [`ErrorCode`] and its message names
//! what went wrong (endpoint, model, status, file and line) and what to do about it.
//!
//! Invariant (SPEC P5): no message ever contains an API key or an `Authorization` header. Server
//! bodies quoted in messages are truncated and scrubbed of the key in use
//! ([`crate::client::scrub_secret`]).

use phoneagent_protocol::ErrorCode;

/// Result alias for this crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// Which timeout fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// The TCP/TLS connection was not established within `connect_timeout_ms`.
    Connect,
    /// The whole request (send + full body / stream) did not finish within `timeout_ms`.
    Total,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "connecting",
            Self::Total => "waiting for the answer",
        })
    }
}

/// Everything that can go wrong in the model layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The model endpoint / profile is misconfigured (bad URL, unknown profile, missing key).
    #[error("model configuration: {message}")]
    Config {
        /// What is wrong and what to do.
        message: String,
    },

    /// `models.json` could not be read or parsed.
    #[error("{path}: {message}")]
    ModelsFile {
        /// The file.
        path: String,
        /// What is wrong, with line/column for JSON errors, and what to do.
        message: String,
    },

    /// The endpoint answered a non-success HTTP status (after retries, where retryable).
    #[error(
        "model endpoint {endpoint} (model {model}) answered HTTP {status} after {attempts} attempt(s): {detail}. {hint}"
    )]
    Http {
        /// `{base_url}/chat/completions`.
        endpoint: String,
        /// Model name sent.
        model: String,
        /// HTTP status code.
        status: u16,
        /// Attempts made (1 = no retry).
        attempts: u32,
        /// Truncated, key-scrubbed server message.
        detail: String,
        /// What the user can do.
        hint: String,
    },

    /// The endpoint kept answering 429 past the retry budget, or asked us to wait longer than
    /// the configured maximum.
    #[error(
        "model endpoint {endpoint} (model {model}) is rate limiting us (HTTP 429) after {attempts} attempt(s){retry_after}. Wait and retry later, lower the request rate, or raise the provider quota"
    )]
    RateLimited {
        /// Endpoint URL.
        endpoint: String,
        /// Model name.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// Human text about the last `Retry-After` (may be empty).
        retry_after: String,
        /// The last `Retry-After` the server sent, in ms (`None`: it sent none). A caller that
        /// cannot wait that long stops instead of asking again.
        retry_after_ms: Option<u64>,
    },

    /// Could not reach the endpoint (connection refused/reset, DNS, TLS) after retries.
    #[error(
        "could not reach model endpoint {endpoint} (model {model}) after {attempts} attempt(s): {detail}. Check that the server is running and that base_url (including /v1) is right"
    )]
    Connect {
        /// Endpoint URL.
        endpoint: String,
        /// Model name.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// Underlying error text.
        detail: String,
    },

    /// A timeout fired.
    #[error(
        "model endpoint {endpoint} (model {model}) timed out {phase} after {after_ms} ms. Raise timeout_ms in the profile or check the server load"
    )]
    Timeout {
        /// Endpoint URL.
        endpoint: String,
        /// Model name.
        model: String,
        /// Which timeout.
        phase: TimeoutPhase,
        /// The limit that was hit, ms.
        after_ms: u64,
    },

    /// The endpoint answered 2xx with a body that is not a valid chat completion.
    #[error(
        "model endpoint {endpoint} (model {model}) sent a malformed response: {detail}. Check that base_url points at an OpenAI-compatible /v1 API; body starts with: {excerpt:?}"
    )]
    MalformedResponse {
        /// Endpoint URL.
        endpoint: String,
        /// Model name.
        model: String,
        /// What was wrong (JSON error with line/column, missing field).
        detail: String,
        /// First bytes of the body, key-scrubbed.
        excerpt: String,
    },

    /// The call was cancelled (the in-flight request was dropped).
    #[error("model call to {endpoint} cancelled")]
    Cancelled {
        /// Endpoint URL.
        endpoint: String,
    },

    /// The OS keyring failed (not "entry missing", which is `Ok(None)`).
    #[error(
        "OS keyring entry {entry:?} (service \"phoneagent\"): {detail}. Make sure a Secret Service (GNOME Keyring/KWallet), macOS Keychain or Windows Credential Manager is available and unlocked"
    )]
    Keyring {
        /// Entry name.
        entry: String,
        /// Backend message (never contains the secret).
        detail: String,
    },

    /// Image preparation failed.
    #[error("screenshot preparation failed: {0}")]
    Image(String),

    /// A model coordinate was outside the frozen space (SPEC M5: never clamped).
    #[error("{0}")]
    CoordinateOutOfRange(String),

    /// The screen changed geometry (rotation/resolution) since the screenshot the model saw.
    #[error("{0}")]
    GeometryChanged(String),

    /// Coordinate calibration failed closed (SPEC M4).
    #[error("{0}")]
    Calibration(String),
}

impl LlmError {
    /// The stable error code for the UI / recovery table.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Config { .. } | Self::ModelsFile { .. } | Self::Keyring { .. } => {
                ErrorCode::ModelConfig
            }
            Self::Http { status, .. } => match status {
                401 | 403 | 404 => ErrorCode::ModelConfig,
                _ => ErrorCode::ModelHttp,
            },
            Self::RateLimited { .. } => ErrorCode::ModelRateLimited,
            Self::Connect { .. } | Self::MalformedResponse { .. } => ErrorCode::ModelHttp,
            Self::Timeout { .. } => ErrorCode::ModelTimeout,
            Self::Cancelled { .. } => ErrorCode::Cancelled,
            Self::Image(_) => ErrorCode::Internal,
            Self::CoordinateOutOfRange(_) => ErrorCode::CoordinateOutOfRange,
            Self::GeometryChanged(_) => ErrorCode::StaleAction,
            Self::Calibration(_) => ErrorCode::CalibrationFailed,
        }
    }

    /// Shorthand for a [`LlmError::Config`].
    pub fn config(message: impl Into<String>) -> Self {
        Self::Config {
            message: message.into(),
        }
    }
}
