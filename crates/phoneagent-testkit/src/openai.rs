//! OpenAI chat-completions wire shapes: the full response, SSE chunks, error bodies.

use serde_json::{Map, Value, json};

/// A resolved answer, ready to be put on the wire.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    /// (id, name, arguments as a JSON string)
    pub tool_calls: Vec<(String, String, String)>,
    pub finish_reason: String,
    /// `None` = no usage in the response.
    pub usage: Option<Value>,
}

/// Fields shared by the response and every chunk.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
}

/// Rough, deterministic token estimate: 4 chars per token (at least 1), 765 per image.
pub(crate) fn estimate_tokens(text_chars: usize, images: usize) -> u64 {
    (text_chars as u64).div_ceil(4).max(1) + 765 * images as u64
}

/// Fill `total_tokens` if missing.
pub(crate) fn complete_usage(mut u: Value) -> Value {
    if let Some(o) = u.as_object_mut()
        && !o.contains_key("total_tokens")
    {
        let p = o.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
        let c = o
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        o.insert("total_tokens".into(), Value::from(p + c));
    }
    u
}

fn tool_calls_json(a: &Answer) -> Value {
    Value::Array(
        a.tool_calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect(),
    )
}

/// The non-streaming `chat.completion` object.
pub(crate) fn completion(meta: &Meta, a: &Answer) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        a.content.clone().map_or(Value::Null, Value::String),
    );
    if let Some(r) = &a.reasoning {
        message.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    if !a.tool_calls.is_empty() {
        message.insert("tool_calls".into(), tool_calls_json(a));
    }
    let mut out = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{
            "index": 0,
            "message": Value::Object(message),
            "logprobs": null,
            "finish_reason": a.finish_reason,
        }],
    });
    if let (Some(u), Some(o)) = (&a.usage, out.as_object_mut()) {
        o.insert("usage".into(), u.clone());
    }
    out
}

fn chunk(meta: &Meta, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
}

fn split_chars(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The SSE chunk objects of a streamed answer, in order: a role chunk, reasoning deltas,
/// content deltas, per tool call a header delta (id, type, name, empty arguments) and argument
/// fragments, a final chunk with `finish_reason`, then (when the answer has usage) a usage
/// chunk with `choices: []`. `[DONE]` is not included.
pub(crate) fn stream_chunks(meta: &Meta, a: &Answer, chunk_chars: usize) -> Vec<Value> {
    let mut out = vec![chunk(
        meta,
        json!({"role": "assistant", "content": ""}),
        None,
    )];
    if let Some(r) = &a.reasoning {
        for piece in split_chars(r, chunk_chars) {
            out.push(chunk(meta, json!({"reasoning_content": piece}), None));
        }
    }
    if let Some(c) = &a.content {
        for piece in split_chars(c, chunk_chars) {
            out.push(chunk(meta, json!({"content": piece}), None));
        }
    }
    for (i, (id, name, args)) in a.tool_calls.iter().enumerate() {
        out.push(chunk(
            meta,
            json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        for piece in split_chars(args, chunk_chars) {
            out.push(chunk(
                meta,
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    out.push(chunk(meta, json!({}), Some(&a.finish_reason)));
    if let Some(u) = &a.usage {
        out.push(json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [],
            "usage": u,
        }));
    }
    out
}

/// An OpenAI-style error body.
pub(crate) fn error_body(status: u16, message: &str, code: Option<&str>) -> Value {
    let (kind, default_code) = match status {
        400 => ("invalid_request_error", "invalid_request"),
        401 => ("authentication_error", "invalid_api_key"),
        403 => ("permission_error", "forbidden"),
        404 => ("not_found_error", "not_found"),
        429 => ("rate_limit_error", "rate_limit_exceeded"),
        503 => ("server_error", "service_unavailable"),
        _ => ("server_error", "server_error"),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code.unwrap_or(default_code)}})
}

/// Default message for a scripted error status.
pub(crate) fn default_error_message(status: u16) -> String {
    match status {
        429 => {
            "Rate limit reached (scripted 429). Please retry after the time in Retry-After.".into()
        }
        500 => "The server had an error while processing your request (scripted 500).".into(),
        503 => "The engine is currently overloaded, please try again later (scripted 503).".into(),
        s => format!("Scripted error status {s}."),
    }
}

/// Remove dotted paths (`choices.0.message`) from a JSON value; missing paths are ignored.
pub(crate) fn remove_paths(v: &mut Value, paths: &[String]) {
    for p in paths {
        let segs: Vec<&str> = p.split('.').filter(|s| !s.is_empty()).collect();
        remove_path(v, &segs);
    }
}

fn remove_path(v: &mut Value, segs: &[&str]) {
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for s in parents {
        let next = match cur {
            Value::Object(o) => o.get_mut(*s),
            Value::Array(a) => s.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match cur {
        Value::Object(o) => {
            o.remove(*last);
        }
        Value::Array(a) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// The built-in body of a `malformed_body: true` fault (a JSON document cut mid-string).
pub(crate) const BROKEN_BODY: &str = r#"{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"do(action=\"Tap\", elem"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            id: "chatcmpl-1".into(),
            model: "m".into(),
            created: 1,
        }
    }

    #[test]
    fn completion_shape_and_removal() {
        let a = Answer {
            content: None,
            reasoning: Some("think".into()),
            tool_calls: vec![("c1".into(), "tap".into(), "{\"element\":[1,2]}".into())],
            finish_reason: "tool_calls".into(),
            usage: Some(complete_usage(
                json!({"prompt_tokens": 3, "completion_tokens": 4}),
            )),
        };
        let mut v = completion(&meta(), &a);
        assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "tap"
        );
        assert_eq!(v["usage"]["total_tokens"], 7);
        remove_paths(
            &mut v,
            &["choices.0.message".into(), "usage".into(), "nope.x".into()],
        );
        assert!(v["choices"][0].get("message").is_none());
        assert!(v.get("usage").is_none());
        assert!(serde_json::from_str::<Value>(BROKEN_BODY).is_err());
    }

    #[test]
    fn stream_reassembles() {
        let a = Answer {
            content: Some("héllo wörld, 你好".into()),
            reasoning: None,
            tool_calls: vec![(
                "c1".into(),
                "finish".into(),
                "{\"message\":\"done\"}".into(),
            )],
            finish_reason: "tool_calls".into(),
            usage: Some(json!({"prompt_tokens": 1})),
        };
        let chunks = stream_chunks(&meta(), &a, 3);
        let text: String = chunks
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
            })
            .collect();
        assert_eq!(text, "héllo wörld, 你好");
        let args: String = chunks
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/tool_calls/0/function/arguments")
                    .and_then(Value::as_str)
            })
            .collect();
        assert_eq!(args, "{\"message\":\"done\"}");
        assert_eq!(chunks.last().unwrap()["choices"], json!([]));
        assert_eq!(
            chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }
}
