//! Parsing answers (SPEC M1): a plain JSON completion, or streamed chunks assembled into one
//! answer (content, reasoning and tool-call deltas); `<think>` blocks and `reasoning_content`
//! go to the reasoning.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{Attempt, error_detail, truncate_chars};
use crate::types::{ChatResponse, ToolCall, Usage, split_think};

/// A parsed answer before timing is attached.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    content: String,
    reasoning: String,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    model: Option<String>,
}

impl Parsed {
    pub(super) fn into_response(self, latency_ms: u64, attempts: u32) -> ChatResponse {
        let (think, content) = split_think(&self.content);
        let mut reasoning = self.reasoning.trim().to_string();
        if let Some(t) = think {
            if !reasoning.is_empty() {
                reasoning.push_str("\n\n");
            }
            reasoning.push_str(&t);
        }
        ChatResponse {
            content,
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
            tool_calls: self.tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            latency_ms,
            attempts,
            model: self.model,
        }
    }
}

#[derive(Deserialize)]
struct WireCompletion {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    delta: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// serde_json's message without its trailing " at line L column C" (we print the position
/// ourselves).
fn serde_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

fn malformed(detail: impl Into<String>, body: &[u8]) -> Attempt {
    Attempt::Malformed {
        detail: detail.into(),
        excerpt: truncate_chars(&String::from_utf8_lossy(body), 200),
    }
}

pub(super) fn parse_completion(body: &[u8]) -> std::result::Result<Parsed, Attempt> {
    let wire: WireCompletion = serde_json::from_slice(body).map_err(|e| {
        malformed(
            format!(
                "invalid JSON at line {} column {}: {}",
                e.line(),
                e.column(),
                serde_message(&e)
            ),
            body,
        )
    })?;
    if let Some(err) = wire.error.as_ref().filter(|_| wire.choices.is_none()) {
        return Err(malformed(
            format!(
                "the endpoint returned an error object: {}",
                error_detail(&json!({"error": err}).to_string())
            ),
            body,
        ));
    }
    let choices = wire
        .choices
        .ok_or_else(|| malformed("no `choices` field", body))?;
    let choice = choices
        .into_iter()
        .next()
        .ok_or_else(|| malformed("`choices` is empty", body))?;
    let msg = choice
        .message
        .ok_or_else(|| malformed("`choices[0].message` is missing", body))?;
    let tool_calls =
        msg.tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let f = c.function.ok_or_else(|| {
                    malformed(format!("tool call {i} has no `function` object"), body)
                })?;
                let name = f.name.filter(|n| !n.is_empty()).ok_or_else(|| {
                    malformed(format!("tool call {i} has no function name"), body)
                })?;
                Ok(ToolCall {
                    id: c
                        .id
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("call_{i}")),
                    name,
                    arguments: f.arguments.as_ref().map(arguments_text).unwrap_or_default(),
                })
            })
            .collect::<std::result::Result<Vec<_>, Attempt>>()?;
    Ok(Parsed {
        content: msg.content.as_ref().map(content_text).unwrap_or_default(),
        reasoning: msg.reasoning_content.or(msg.reasoning).unwrap_or_default(),
        tool_calls,
        usage: wire.usage.map(|u| Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        }),
        finish_reason: choice.finish_reason,
        model: wire.model,
    })
}

/// Assembles streamed chunks into one answer.
#[derive(Default)]
pub(super) struct StreamAccumulator {
    parsed: Parsed,
    /// Tool calls by stream index: (id, name, arguments).
    calls: BTreeMap<usize, (String, String, String)>,
    saw_chunk: bool,
}

impl StreamAccumulator {
    /// Feeds one event payload; returns true on `[DONE]`.
    pub(super) fn feed(&mut self, data: &str) -> std::result::Result<bool, Attempt> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: WireCompletion = serde_json::from_str(data).map_err(|e| {
            malformed(
                format!(
                    "invalid JSON in a stream event at line {} column {}: {}",
                    e.line(),
                    e.column(),
                    serde_message(&e)
                ),
                data.as_bytes(),
            )
        })?;
        if let Some(err) = chunk.error.as_ref() {
            return Err(malformed(
                format!(
                    "the stream carried an error: {}",
                    error_detail(&json!({"error": err}).to_string())
                ),
                data.as_bytes(),
            ));
        }
        self.saw_chunk = true;
        if chunk.model.is_some() {
            self.parsed.model = chunk.model;
        }
        if let Some(u) = chunk.usage {
            self.parsed.usage = Some(Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            });
        }
        for choice in chunk.choices.unwrap_or_default() {
            if let Some(fr) = choice.finish_reason {
                self.parsed.finish_reason = Some(fr);
            }
            let Some(delta) = choice.delta.or(choice.message) else {
                continue;
            };
            if let Some(c) = delta.content.as_ref() {
                self.parsed.content.push_str(&content_text(c));
            }
            if let Some(r) = delta.reasoning_content.or(delta.reasoning) {
                self.parsed.reasoning.push_str(&r);
            }
            for (pos, tc) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let idx = tc.index.unwrap_or(pos);
                let entry = self.calls.entry(idx).or_default();
                if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                    entry.0 = id;
                }
                if let Some(f) = tc.function {
                    if let Some(n) = f.name {
                        entry.1.push_str(&n);
                    }
                    if let Some(a) = f.arguments.as_ref() {
                        entry.2.push_str(&arguments_text(a));
                    }
                }
            }
        }
        Ok(false)
    }

    pub(super) fn finish(mut self) -> std::result::Result<Parsed, Attempt> {
        if !self.saw_chunk {
            return Err(malformed("the event stream ended without any chunk", b""));
        }
        for (i, (idx, (id, name, args))) in std::mem::take(&mut self.calls).into_iter().enumerate()
        {
            if name.is_empty() {
                return Err(malformed(
                    format!("streamed tool call {idx} has no function name"),
                    args.as_bytes(),
                ));
            }
            self.parsed.tool_calls.push(ToolCall {
                id: if id.is_empty() {
                    format!("call_{i}")
                } else {
                    id
                },
                name,
                arguments: args,
            });
        }
        Ok(self.parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_accumulates_tool_call_deltas() {
        let mut acc = StreamAccumulator::default();
        let events = [
            r#"{"choices":[{"delta":{"reasoning_content":"let me "}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"see"}}]}"#,
            r#"{"choices":[{"delta":{"content":"ok"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"tap","arguments":"{\"elem"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ent\":[1,2]}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"note","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#,
        ];
        for e in events {
            assert!(!acc.feed(e).unwrap());
        }
        assert!(acc.feed("[DONE]").unwrap());
        let p = acc.finish().unwrap();
        assert_eq!(p.content, "ok");
        assert_eq!(p.reasoning, "let me see");
        assert_eq!(p.tool_calls.len(), 2);
        assert_eq!(p.tool_calls[0].arguments, "{\"element\":[1,2]}");
        assert_eq!(p.tool_calls[1].name, "note");
        assert_eq!(p.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(p.usage.unwrap().total(), 15);
    }

    #[test]
    fn completion_parsing_and_errors() {
        let ok = br#"{"model":"m","choices":[{"message":{"content":"<think>r</think>do(action=\"Back\")","tool_calls":[{"function":{"name":"tap","arguments":{"element":[1,2]}}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#;
        let p = parse_completion(ok).unwrap().into_response(5, 1);
        assert_eq!(p.content, "do(action=\"Back\")");
        assert_eq!(p.reasoning.as_deref(), Some("r"));
        assert_eq!(p.tool_calls[0].id, "call_0");
        assert_eq!(p.tool_calls[0].arguments, r#"{"element":[1,2]}"#);

        let Err(Attempt::Malformed { detail, .. }) = parse_completion(b"{\"choices\": [") else {
            panic!("expected malformed")
        };
        assert!(detail.contains("line 1 column"), "{detail}");
        let Err(Attempt::Malformed { detail, .. }) = parse_completion(b"{\"choices\": []}") else {
            panic!("expected malformed")
        };
        assert!(detail.contains("empty"), "{detail}");
        let Err(Attempt::Malformed { detail, .. }) =
            parse_completion(br#"{"error":{"message":"model overloaded"}}"#)
        else {
            panic!("expected malformed")
        };
        assert!(detail.contains("model overloaded"), "{detail}");
    }
}
