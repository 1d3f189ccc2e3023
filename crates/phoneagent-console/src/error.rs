//! [`AppError`]: what every command returns on failure, serialized as `{code, message}` (SPEC U7,
//! ARCHITECTURE "Conventions"). `code` is a stable snake_case string the UI may match on; the
//! `message` names what went wrong and what to do, and never contains a secret (SPEC P5).

use phoneagent_protocol::ErrorCode;
use serde::Serialize;
use ts_rs::TS;

/// A command error as the webview sees it: `{"code": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct AppError {
    /// Stable code: an [`ErrorCode`] name (`no_device`, `config`, …) or one of the app's own
    /// (`busy`, `not_running`, `unknown_request`, `expired_request`, `mismatched_response`,
    /// `no_take_over`, `keyring`, `not_found`, `invalid_input`, `bad_request`).
    pub code: String,
    /// What went wrong and what to do about it.
    pub message: String,
}

impl AppError {
    /// An error with an app-specific code.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// An error with a shared [`ErrorCode`].
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.as_str().to_string(),
            message: message.into(),
        }
    }

    /// Bad input from the UI.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid_input", message)
    }

    /// A command the console does not serve, or arguments that do not fit it
    /// ([`crate::Console::dispatch`]); the message names the command or argument and what was
    /// expected.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new("bad_request", message)
    }

    /// Something that should not happen (a task panicked, …).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::coded(ErrorCode::Internal, message)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for AppError {}

/// Result of every command.
pub type AppResult<T> = Result<T, AppError>;

impl From<phoneagent_device::DeviceError> for AppError {
    fn from(e: phoneagent_device::DeviceError) -> Self {
        Self::coded(e.code(), e.to_string())
    }
}

impl From<phoneagent_store::StoreError> for AppError {
    fn from(e: phoneagent_store::StoreError) -> Self {
        Self::coded(e.code(), e.to_string())
    }
}

impl From<phoneagent_llm::LlmError> for AppError {
    fn from(e: phoneagent_llm::LlmError) -> Self {
        let code = match &e {
            phoneagent_llm::LlmError::Keyring { .. } => "keyring".to_string(),
            other => other.code().as_str().to_string(),
        };
        Self {
            code,
            message: e.to_string(),
        }
    }
}

impl From<phoneagent_runtime::approver::AnswerError> for AppError {
    fn from(e: phoneagent_runtime::approver::AnswerError) -> Self {
        use phoneagent_runtime::approver::AnswerError as E;
        let code = match &e {
            E::UnknownRequest(_) => "unknown_request",
            E::Expired(_) => "expired_request",
            E::Mismatch(..) => "mismatched_response",
        };
        Self::new(code, e.to_string())
    }
}

impl From<phoneagent_runtime::RuntimeError> for AppError {
    fn from(e: phoneagent_runtime::RuntimeError) -> Self {
        match e {
            phoneagent_runtime::RuntimeError::Busy => Self::new("busy", e.to_string()),
            phoneagent_runtime::RuntimeError::Store(_) => {
                Self::coded(ErrorCode::Store, e.to_string())
            }
            phoneagent_runtime::RuntimeError::TaskTooLong { .. } => {
                Self::new("task_too_long", e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_code_and_message() {
        let e = AppError::coded(ErrorCode::NoDevice, "no phone: plug one in");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "no_device", "message": "no phone: plug one in"})
        );
    }

    #[test]
    fn answer_errors_keep_distinct_codes() {
        use phoneagent_runtime::approver::AnswerError;
        assert_eq!(
            AppError::from(AnswerError::UnknownRequest("x".into())).code,
            "unknown_request"
        );
        assert_eq!(
            AppError::from(AnswerError::Expired("x".into())).code,
            "expired_request"
        );
    }
}
