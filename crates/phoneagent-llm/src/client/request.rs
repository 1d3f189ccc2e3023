//! The request body (SPEC M1): the common OpenAI chat-completions subset — messages with text
//! and `image_url` parts, tools, tool choice, sampling limits, streaming — plus the profile's
//! `extra_body`.

use serde_json::{Map, Value, json};

use super::ChatClient;
use crate::types::{ChatMessage, ChatRequest, ContentPart, MessageRole, ToolChoice};

impl ChatClient {
    /// The JSON body this client would send for `req` (also used by tests and `doctor`).
    pub fn build_body(&self, req: &ChatRequest) -> Value {
        let stream = req.stream.unwrap_or(self.cfg.stream);
        let mut body = Map::new();
        for (k, v) in &self.cfg.extra_body {
            body.insert(k.clone(), v.clone());
        }
        body.insert("model".into(), json!(self.cfg.model));
        body.insert(
            "messages".into(),
            Value::Array(req.messages.iter().map(wire_message).collect()),
        );
        if !req.tools.is_empty() {
            let tools: Vec<Value> = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = &req.tool_choice {
            let v = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Function(name) => {
                    json!({"type": "function", "function": {"name": name}})
                }
            };
            body.insert("tool_choice".into(), v);
        }
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(m) = req.max_tokens {
            body.insert("max_tokens".into(), json!(m));
        }
        body.insert("stream".into(), json!(stream));
        if stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }
}

fn wire_message(m: &ChatMessage) -> Value {
    let role = match m.role {
        MessageRole::System => "system",
        MessageRole::User => "user",
        MessageRole::Assistant => "assistant",
        MessageRole::Tool => "tool",
    };
    let content = match m.content.as_slice() {
        [] => Value::Null,
        [ContentPart::Text { text }] => Value::String(text.clone()),
        parts => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => json!({"type": "text", "text": text}),
                    ContentPart::Image { url, detail } => {
                        let mut img = Map::new();
                        img.insert("url".into(), json!(url));
                        if let Some(d) = detail {
                            img.insert("detail".into(), json!(d));
                        }
                        json!({"type": "image_url", "image_url": img})
                    }
                })
                .collect(),
        ),
    };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    // Assistant messages with only tool calls carry `content: null`; others an empty string.
    let content = if content.is_null() && !matches!(m.role, MessageRole::Assistant) {
        json!("")
    } else {
        content
    };
    out.insert("content".into(), content);
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ClientConfig, ModelClient};
    use crate::types::ToolCall;

    #[test]
    fn body_shape() {
        let mut cfg = ClientConfig::new("http://127.0.0.1:1/v1/", "m");
        cfg.extra_body.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": false}),
        );
        let c = ChatClient::new(cfg).unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
        let req = ChatRequest {
            messages: vec![
                ChatMessage::system("s"),
                ChatMessage::user_parts(vec![
                    ContentPart::text("t"),
                    ContentPart::image("data:image/png;base64,AA=="),
                ]),
                ChatMessage::assistant(
                    "",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "tap".into(),
                        arguments: "{}".into(),
                    }],
                ),
                ChatMessage::tool_result("c1", "ok"),
            ],
            tool_choice: Some(ToolChoice::Function("tap".into())),
            max_tokens: Some(10),
            stream: Some(true),
            ..Default::default()
        };
        let b = c.build_body(&req);
        assert_eq!(b["model"], "m");
        assert_eq!(b["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(b["messages"][0]["content"], "s");
        assert_eq!(b["messages"][1]["content"][1]["type"], "image_url");
        assert_eq!(
            b["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AA=="
        );
        assert!(b["messages"][2]["content"].is_null());
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["name"], "tap");
        assert_eq!(b["messages"][3]["tool_call_id"], "c1");
        assert_eq!(b["tool_choice"]["function"]["name"], "tap");
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert!(b.get("tools").is_none());
    }
}
