//! What the server saw: recorded requests and helpers to read an OpenAI chat request body.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Header names whose values are credentials: never recorded (only their presence is).
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// One HTTP request the server received on a model path (everything except the `/__*`
/// control endpoints), as tests see it through [`crate::ScriptedModel::requests`] or
/// `GET /__requests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// 1-based arrival order.
    pub seq: u64,
    /// HTTP method (`POST`, `GET`).
    pub method: String,
    /// Path and query (`/v1/chat/completions`).
    pub path: String,
    /// Request headers, lower-case names, without any credential header
    /// ([`CREDENTIAL_HEADERS`]); values that are not UTF-8 are lossily converted.
    pub headers: BTreeMap<String, String>,
    /// Whether an `Authorization` (or other credential) header was present. Its value is never
    /// recorded anywhere (SPEC P5).
    pub authorization_present: bool,
    /// The body: parsed JSON, or the raw text as a JSON string when it was not JSON
    /// (then `body_is_json` is false). Images stay in as the data URLs that were sent.
    pub body: Value,
    /// Whether `body` was valid JSON.
    pub body_is_json: bool,
    /// The queue the request was routed to (chat requests only).
    pub queue: Option<String>,
    /// Who answered: `script`, `oracle`, `error` (an error of the server itself: exhausted
    /// script, bad placeholder, bad request) or `control` for `/v1/models`.
    pub answered_by: Option<String>,
    /// HTTP status the server answered with.
    pub response_status: u16,
    /// `pending` until the answer is handed over, then `completed`; `client_disconnected`
    /// when the client went away first (cancel tests).
    pub outcome: String,
    /// A server-side error message (bad placeholder, exhausted script, not a probe…), if any.
    pub error: Option<String>,
    /// ms since the server started.
    pub received_at_ms: u64,
}

impl RecordedRequest {
    /// Text of all `system` (and `developer`) messages, joined by newlines.
    pub fn system_text(&self) -> String {
        system_text(&self.body)
    }

    /// Text of all messages (any role, images excluded), joined by newlines.
    pub fn all_text(&self) -> String {
        all_text(&self.body)
    }

    /// The image URLs (data URLs) of the request, in message order.
    pub fn image_urls(&self) -> Vec<String> {
        image_urls(&self.body)
    }

    /// The body serialized as JSON with every image URL replaced by `"<image>"`: search this
    /// for strings that must never reach a model (package names, activities, UI trees: SPEC P1)
    /// without false hits inside base64.
    pub fn body_text_without_images(&self) -> String {
        let mut b = self.body.clone();
        strip_images(&mut b);
        b.to_string()
    }

    /// Whether the request carried a non-empty `tools` array.
    pub fn has_tools(&self) -> bool {
        has_tools(&self.body)
    }
}

fn content_text(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(parts) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push(t.to_string());
                }
            }
        }
        _ => {}
    }
}

fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Text of the `system`/`developer` messages of a chat request body.
pub(crate) fn system_text(body: &Value) -> String {
    let mut out = Vec::new();
    for m in messages(body) {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if (role == "system" || role == "developer")
            && let Some(c) = m.get("content")
        {
            content_text(c, &mut out);
        }
    }
    out.join("\n")
}

/// Text of every message of a chat request body (tool-call arguments included).
pub(crate) fn all_text(body: &Value) -> String {
    let mut out = Vec::new();
    for m in messages(body) {
        if let Some(c) = m.get("content") {
            content_text(c, &mut out);
        }
        if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                if let Some(a) = c.pointer("/function/arguments").and_then(Value::as_str) {
                    out.push(a.to_string());
                }
            }
        }
    }
    out.join("\n")
}

/// Image URLs of a chat request body in message order.
pub(crate) fn image_urls(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages(body) {
        if let Some(parts) = m.get("content").and_then(Value::as_array) {
            for p in parts {
                let url = p
                    .pointer("/image_url/url")
                    .or_else(|| p.get("image_url"))
                    .and_then(Value::as_str);
                if let Some(u) = url {
                    out.push(u.to_string());
                }
            }
        }
    }
    out
}

/// Whether the body has a non-empty `tools` array.
pub(crate) fn has_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

fn strip_images(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(iu) = map.get_mut("image_url") {
                match iu {
                    Value::Object(o) if o.contains_key("url") => {
                        o.insert("url".into(), Value::String("<image>".into()));
                    }
                    Value::String(s) => *s = "<image>".into(),
                    _ => {}
                }
            }
            for (_, child) in map.iter_mut() {
                strip_images(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_images),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extracts_text_images_and_strips() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys [phoneagent-role: actor]"},
                {"role": "user", "content": [
                    {"type": "text", "text": "task"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "tap", "arguments": "{\"element\":[1,2]}"}}
                ]}
            ],
            "tools": [{"type": "function", "function": {"name": "tap"}}]
        });
        assert_eq!(system_text(&body), "sys [phoneagent-role: actor]");
        let all = all_text(&body);
        assert!(all.contains("task") && all.contains("element"));
        assert_eq!(
            image_urls(&body),
            vec!["data:image/png;base64,AAAA".to_string()]
        );
        assert!(has_tools(&body));
        let mut b = body.clone();
        strip_images(&mut b);
        assert!(!b.to_string().contains("AAAA"));
        assert!(b.to_string().contains("<image>"));
    }
}
