//! Request/response types of the OpenAI-compatible chat API, as the rest of PhoneAgent sees
//! them (SPEC M1). Wire details (content arrays, `image_url` parts, tool-call deltas) are handled
//! in [`crate::client`].

use serde::{Deserialize, Serialize};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// System prompt.
    System,
    /// The user (task, screenshot, tool results in the `do` protocol).
    User,
    /// The model's earlier answers.
    Assistant,
    /// A tool result (function-calling protocol), answering `tool_call_id`.
    Tool,
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, normally a `data:image/jpeg;base64,...` URL from
    /// [`crate::image::PreparedImage::data_url`].
    Image {
        /// `data:` URL (or http(s) URL).
        url: String,
        /// OpenAI `detail` hint (`low` / `high` / `auto`); `None` omits it.
        detail: Option<String>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image part from a data URL, without a `detail` hint.
    pub fn image(url: impl Into<String>) -> Self {
        Self::Image {
            url: url.into(),
            detail: None,
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: MessageRole,
    /// Content parts in order; a single text part is sent as a plain string for compatibility.
    pub content: Vec<ContentPart>,
    /// Tool calls the assistant made (only for `role = assistant`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (only for `role = tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    fn new(role: MessageRole, content: Vec<ContentPart>) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(MessageRole::System, vec![ContentPart::text(text)])
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(MessageRole::User, vec![ContentPart::text(text)])
    }

    /// A user message with the given parts (e.g. text + screenshot).
    pub fn user_parts(parts: Vec<ContentPart>) -> Self {
        Self::new(MessageRole::User, parts)
    }

    /// An assistant message with text and optional tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentPart::text(text)]
        };
        Self {
            tool_calls,
            ..Self::new(MessageRole::Assistant, content)
        }
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(MessageRole::Tool, vec![ContentPart::text(text)])
        }
    }

    /// Number of image parts.
    pub fn image_count(&self) -> usize {
        self.content
            .iter()
            .filter(|p| matches!(p, ContentPart::Image { .. }))
            .count()
    }
}

/// A function the model may call (OpenAI function calling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Function name (`tap`, `swipe`, …).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this function.
    Function(String),
}

/// One chat-completion request. The model name, base URL, key and sampling defaults come from
/// the client's profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Functions offered (empty = no `tools` field is sent).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// `tool_choice`; `None` omits the field.
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature; `None` uses the server default.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Completion token cap; `None` uses the server default.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Overrides the profile's `stream` setting for this call.
    #[serde(default)]
    pub stream: Option<bool>,
}

/// One tool call in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (`call_…`); synthesized as `call_<index>` when the server sends none.
    pub id: String,
    /// Function name.
    pub name: String,
    /// The arguments exactly as sent: a JSON object in a string (not validated here; the
    /// protocol crate validates against the closed schema).
    pub arguments: String,
}

/// Token usage of one call, as reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens (text + images).
    pub prompt_tokens: u64,
    /// Output tokens (including reasoning tokens where the server counts them).
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt + completion.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One parsed chat-completion answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The visible answer, with any `<think>…</think>` block removed.
    pub content: String,
    /// Reasoning text: the server's `reasoning_content` / `reasoning` field and any `<think>`
    /// block split out of the content, in that order. `None` when there was none.
    pub reasoning: Option<String>,
    /// Tool calls, in the order the server sent them.
    pub tool_calls: Vec<ToolCall>,
    /// Usage, when the server reported it.
    pub usage: Option<Usage>,
    /// `stop`, `length`, `tool_calls`, … as sent.
    pub finish_reason: Option<String>,
    /// Wall time of the whole call including retries, ms.
    pub latency_ms: u64,
    /// HTTP attempts made (1 = no retry).
    pub attempts: u32,
    /// The model name the server reported (may differ from the requested one).
    pub model: Option<String>,
}

/// Splits `<think>…</think>` out of a model's text.
///
/// Returns `(reasoning, visible)`. Handles a leading block, blocks anywhere, several blocks, a
/// `</think>` with no opening tag (templates that put `<think>` into the prompt: everything
/// before it is reasoning) and an unclosed `<think>` (truncated output: the rest is reasoning).
/// The visible text is trimmed at both ends.
pub fn split_think(text: &str) -> (Option<String>, String) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let mut reasoning: Vec<String> = Vec::new();
    let mut rest = text;
    // A closing tag before any opening tag: the prefix is reasoning.
    if let Some(close) = rest.find(CLOSE)
        && rest.find(OPEN).is_none_or(|open| open > close)
    {
        reasoning.push(rest[..close].trim().to_string());
        rest = &rest[close + CLOSE.len()..];
    }
    let mut visible = String::new();
    loop {
        match rest.find(OPEN) {
            None => {
                visible.push_str(rest);
                break;
            }
            Some(open) => {
                visible.push_str(&rest[..open]);
                let after = &rest[open + OPEN.len()..];
                match after.find(CLOSE) {
                    Some(close) => {
                        reasoning.push(after[..close].trim().to_string());
                        rest = &after[close + CLOSE.len()..];
                    }
                    None => {
                        reasoning.push(after.trim().to_string());
                        break;
                    }
                }
            }
        }
    }
    let reasoning: Vec<String> = reasoning.into_iter().filter(|r| !r.is_empty()).collect();
    let reasoning = if reasoning.is_empty() {
        None
    } else {
        Some(reasoning.join("\n\n"))
    };
    (reasoning, visible.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_think_variants() {
        assert_eq!(
            split_think("<think>hmm</think>\ndo(action=\"Back\")"),
            (Some("hmm".into()), "do(action=\"Back\")".into())
        );
        assert_eq!(
            split_think("plan first</think>answer"),
            (Some("plan first".into()), "answer".into())
        );
        assert_eq!(
            split_think("a<think>x</think>b<think>y</think>c"),
            (Some("x\n\ny".into()), "abc".into())
        );
        assert_eq!(
            split_think("<think>truncated"),
            (Some("truncated".into()), String::new())
        );
        assert_eq!(split_think("  plain  "), (None, "plain".into()));
        assert_eq!(split_think("<think></think>x"), (None, "x".into()));
    }

    #[test]
    fn usage_total() {
        let u = Usage {
            prompt_tokens: 3,
            completion_tokens: 4,
        };
        assert_eq!(u.total(), 7);
    }
}
