//! The script: scripted responses, queues and the rules that pick a queue for a request.
//!
//! See the crate documentation for the file format and an example.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::{Error, Result};

/// The name of the queue entries without a `queue` field go to, and the queue a request is
/// routed to when no rule, header or marker names another one.
pub const DEFAULT_QUEUE: &str = "default";

/// The role marker a system prompt may carry to pick a queue: `[phoneagent-role: NAME]`
/// (whitespace after the colon optional, `NAME` = `[A-Za-z0-9_-]+`).
pub const ROLE_MARKER_PREFIX: &str = "[phoneagent-role:";

/// The request header that may name the queue instead of the marker (`x-phoneagent-role: NAME`).
pub const ROLE_HEADER: &str = "x-phoneagent-role";

/// One scripted answer (one line of a JSONL script).
///
/// Every field is optional; an empty entry answers an empty assistant message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// Queue this entry belongs to (`"actor"`, `"verifier"`, `"safety_reviewer"`,
    /// `"auto_reviewer"`, `"calibration"`, … any name); `None` = [`DEFAULT_QUEUE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Assistant text (`message.content`). May contain `{{center:LABEL}}`-style placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `message.reasoning_content` (the thinking text some servers return separately).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tool calls of the answer (OpenAI function calling).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// `finish_reason`; default `"tool_calls"` when there are tool calls, else `"stop"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// `usage` object. Absent = estimated from the request and the answer; `null` = the
    /// response carries no `usage` at all; an object = sent as given (`total_tokens` is filled
    /// in when missing).
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<Value>,
    /// Coordinate space for this entry's placeholders (`relative_0_999` | `image_pixels`);
    /// `None` = the server's configured space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
    /// Fault: answer with this HTTP status and an OpenAI-style error body instead of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// With `status`: the `Retry-After` header, in whole seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// With `status`: the `retry-after-ms` header (OpenAI's millisecond variant), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// With `status`: the error message in the body (a default names the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Fault: wait this long (ms) before sending anything (timeouts, cancel tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Streaming only: wait this long (ms) between SSE chunks (cancel mid-stream tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_delay_ms: Option<u64>,
    /// Fault: status 200 with a body that is not valid JSON. `true` = a built-in broken body;
    /// a string = that exact body. In a stream, one `data:` line carries the broken JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_body: Option<MalformedBody>,
    /// Fault: remove these fields from the response JSON (dotted paths from the top, numeric
    /// segments index arrays: `"choices"`, `"usage"`, `"choices.0.message"`). In a stream the
    /// paths apply to every chunk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_fields: Vec<String>,
    /// Fault: the connection closes before the response is complete (the body is cut in half
    /// under a `Content-Length` for the full body; a stream stops halfway with no
    /// `finish_reason` and no `[DONE]`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What a `malformed_body` fault sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MalformedBody {
    /// `true` = the built-in broken body; `false` = no fault.
    Flag(bool),
    /// This exact body.
    Body(String),
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Tool call id; default `call_<request>_<index>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name (`tap`, `finish`, …).
    pub name: String,
    /// Arguments: a JSON object (serialized compactly; string values that are exactly one
    /// placeholder become JSON values, e.g. `"{{center:X}}"` → `[x,y]`) or a string sent
    /// verbatim after textual placeholder substitution (use it to send broken arguments).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Deserialize a field that was present (even as `null`) to `Some(value)`.
fn present_value<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl ScriptEntry {
    /// A plain text answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// An answer with one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool_calls: vec![ScriptToolCall {
                id: None,
                name: name.into(),
                arguments,
            }],
            ..Self::default()
        }
    }

    /// An error answer with this HTTP status.
    pub fn status(status: u16) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }

    /// The same entry in queue `queue`.
    pub fn in_queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// The same entry delayed by `ms` milliseconds.
    pub fn delayed(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }

    /// The queue name this entry belongs to.
    pub fn queue_name(&self) -> &str {
        self.queue.as_deref().unwrap_or(DEFAULT_QUEUE)
    }

    /// Whether a `malformed_body` fault is on.
    pub fn is_malformed(&self) -> bool {
        match &self.malformed_body {
            None | Some(MalformedBody::Flag(false)) => false,
            Some(_) => true,
        }
    }
}

/// A routing rule: requests whose text contains a substring go to a queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueRule {
    /// Target queue.
    pub queue: String,
    /// Matches when the system prompt (all `system` messages' text, joined by newlines)
    /// contains this substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_contains: Option<String>,
    /// Matches when any message text (any role) contains this substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
}

/// What a request gets when its queue has run dry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExhausted {
    /// HTTP 500 with code `script_exhausted` and a message naming the queue.
    #[default]
    Error,
    /// Serve the queue's last served entry again (faults included).
    RepeatLast,
}

/// A whole script: entries plus routing rules and the exhaustion policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Entries in file order (each goes to its queue, consumed in order within the queue).
    #[serde(default)]
    pub entries: Vec<ScriptEntry>,
    /// Routing rules, checked in order before the header and the marker.
    #[serde(default)]
    pub rules: Vec<QueueRule>,
    /// Policy when a queue is empty.
    #[serde(default)]
    pub on_exhausted: OnExhausted,
}

/// A directive line of a JSONL script (a line with a `rule` or `on_exhausted` key).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Directive {
    #[serde(default)]
    rule: Option<QueueRule>,
    #[serde(default)]
    on_exhausted: Option<OnExhausted>,
}

impl Script {
    /// A script of these entries, default rules and policy.
    pub fn from_entries(entries: Vec<ScriptEntry>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    /// Parse JSONL text: one JSON object per line; blank lines and lines starting with `#` or
    /// `//` are skipped; a line whose keys are `rule` and/or `on_exhausted` is a directive.
    ///
    /// Errors: [`Error::Script`] naming the 1-based line and what is wrong.
    pub fn parse_jsonl(text: &str) -> Result<Self> {
        let mut script = Script::default();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("//") {
                continue;
            }
            let value: Value = serde_json::from_str(trimmed).map_err(|e| Error::Script {
                at: format!("line {line_no}"),
                message: format!("not valid JSON: {e}"),
            })?;
            let is_directive = value.as_object().is_some_and(|o| {
                !o.is_empty() && o.keys().all(|k| k == "rule" || k == "on_exhausted")
            });
            if is_directive {
                let d: Directive = serde_json::from_value(value).map_err(|e| Error::Script {
                    at: format!("line {line_no}"),
                    message: format!("bad directive: {e}"),
                })?;
                if let Some(rule) = d.rule {
                    validate_rule(&rule).map_err(|message| Error::Script {
                        at: format!("line {line_no}"),
                        message,
                    })?;
                    script.rules.push(rule);
                }
                if let Some(policy) = d.on_exhausted {
                    script.on_exhausted = policy;
                }
                continue;
            }
            let entry: ScriptEntry = serde_json::from_value(value).map_err(|e| Error::Script {
                at: format!("line {line_no}"),
                message: format!("bad entry: {e} (see the phoneagent-testkit docs for the fields)"),
            })?;
            validate_entry(&entry).map_err(|message| Error::Script {
                at: format!("line {line_no}"),
                message,
            })?;
            script.entries.push(entry);
        }
        Ok(script)
    }

    /// Check every entry and rule (the same checks as [`Script::parse_jsonl`]).
    pub fn validate(&self) -> Result<()> {
        for (i, e) in self.entries.iter().enumerate() {
            validate_entry(e).map_err(|message| Error::Script {
                at: format!("entry {}", i + 1),
                message,
            })?;
        }
        for r in &self.rules {
            validate_rule(r).map_err(|message| Error::Script {
                at: "rules".into(),
                message,
            })?;
        }
        Ok(())
    }
}

fn validate_rule(rule: &QueueRule) -> std::result::Result<(), String> {
    if rule.system_contains.is_none() && rule.contains.is_none() {
        return Err(format!(
            "rule for queue {:?} has neither `system_contains` nor `contains`",
            rule.queue
        ));
    }
    Ok(())
}

fn validate_entry(e: &ScriptEntry) -> std::result::Result<(), String> {
    if let Some(s) = e.status
        && !(100..=599).contains(&s)
    {
        return Err(format!("status {s} is not an HTTP status (100..=599)"));
    }
    if let Some(space) = &e.space
        && !matches!(space.as_str(), "relative_0_999" | "image_pixels")
    {
        return Err(format!(
            "space {space:?} is not supported here: use relative_0_999 or image_pixels"
        ));
    }
    for tc in &e.tool_calls {
        if tc.name.is_empty() {
            return Err("a tool call has an empty `name`".into());
        }
        if !(tc.arguments.is_object() || tc.arguments.is_string()) {
            return Err(format!(
                "tool call {:?}: `arguments` must be a JSON object or a string",
                tc.name
            ));
        }
    }
    if let Some(u) = &e.usage
        && !(u.is_null() || u.is_object())
    {
        return Err("`usage` must be an object or null".into());
    }
    Ok(())
}

/// The live queues of a running server.
#[derive(Debug, Default)]
pub(crate) struct Queues {
    pending: BTreeMap<String, VecDeque<ScriptEntry>>,
    /// Queues that ever had an entry (a request routed to a queue that never had one falls back
    /// to the default queue).
    known: BTreeMap<String, Option<ScriptEntry>>,
    served: BTreeMap<String, usize>,
    pub(crate) rules: Vec<QueueRule>,
    pub(crate) on_exhausted: OnExhausted,
}

/// Result of taking an entry from a queue.
pub(crate) enum Take {
    /// The next entry.
    Entry(Box<ScriptEntry>),
    /// The queue is dry; the message says which and how many were served.
    Exhausted(String),
}

impl Queues {
    pub(crate) fn new(script: Script) -> Self {
        let mut q = Self::default();
        q.replace(script);
        q
    }

    pub(crate) fn replace(&mut self, script: Script) {
        self.pending.clear();
        self.known.clear();
        self.served.clear();
        self.rules = script.rules;
        self.on_exhausted = script.on_exhausted;
        self.push(script.entries);
    }

    pub(crate) fn append(&mut self, script: Script) {
        self.rules.extend(script.rules);
        if script.on_exhausted != OnExhausted::default() {
            self.on_exhausted = script.on_exhausted;
        }
        self.push(script.entries);
    }

    fn push(&mut self, entries: Vec<ScriptEntry>) {
        for e in entries {
            let name = e.queue_name().to_string();
            self.known.entry(name.clone()).or_insert(None);
            self.pending.entry(name).or_default().push_back(e);
        }
    }

    /// Resolve the queue a request goes to: a queue that never had entries falls back to the
    /// default queue.
    pub(crate) fn effective_queue(&self, routed: &str) -> String {
        if self.known.contains_key(routed) {
            routed.to_string()
        } else {
            DEFAULT_QUEUE.to_string()
        }
    }

    pub(crate) fn take(&mut self, queue: &str) -> Take {
        if let Some(e) = self.pending.get_mut(queue).and_then(VecDeque::pop_front) {
            *self.served.entry(queue.to_string()).or_default() += 1;
            self.known.insert(queue.to_string(), Some(e.clone()));
            return Take::Entry(Box::new(e));
        }
        let served = self.served.get(queue).copied().unwrap_or(0);
        if self.on_exhausted == OnExhausted::RepeatLast
            && let Some(Some(last)) = self.known.get(queue)
        {
            return Take::Entry(Box::new(last.clone()));
        }
        Take::Exhausted(format!(
            "script exhausted: queue {queue:?} has no more entries ({served} served); \
             add entries to the script (or POST /__script) or set on_exhausted to repeat_last"
        ))
    }

    /// Pending entry counts per queue.
    pub(crate) fn pending_counts(&self) -> BTreeMap<String, usize> {
        self.pending
            .iter()
            .map(|(k, v)| (k.clone(), v.len()))
            .collect()
    }
}

/// Pick the queue for a request: rules in order, then the `x-phoneagent-role` header, then the
/// `[phoneagent-role: NAME]` marker in the system prompt, else [`DEFAULT_QUEUE`].
pub(crate) fn route(
    rules: &[QueueRule],
    header_role: Option<&str>,
    system_text: &str,
    all_text: &str,
) -> String {
    for r in rules {
        let sys_ok = r
            .system_contains
            .as_deref()
            .is_none_or(|s| system_text.contains(s));
        let any_ok = r.contains.as_deref().is_none_or(|s| all_text.contains(s));
        if sys_ok && any_ok {
            return r.queue.clone();
        }
    }
    if let Some(h) = header_role.map(str::trim).filter(|h| !h.is_empty()) {
        return h.to_string();
    }
    if let Some(name) = find_role_marker(system_text) {
        return name;
    }
    DEFAULT_QUEUE.to_string()
}

/// Find `[phoneagent-role: NAME]` in `text`.
pub fn find_role_marker(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(pos) = rest.find(ROLE_MARKER_PREFIX) {
        let after = &rest[pos + ROLE_MARKER_PREFIX.len()..];
        let trimmed = after.trim_start();
        let name: String = trimmed
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        if !name.is_empty() && trimmed[name.len()..].trim_start().starts_with(']') {
            return Some(name);
        }
        rest = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_directives_and_comments() {
        let text = r#"
# a comment
{"rule": {"queue": "verifier", "system_contains": "finish verifier"}}
{"on_exhausted": "repeat_last"}
{"content": "do(action=\"Home\")"}
{"queue": "verifier", "content": "{\"verdict\":\"done\"}", "usage": null}
{"status": 429, "retry_after": 1}
"#;
        let s = Script::parse_jsonl(text).unwrap();
        assert_eq!(s.entries.len(), 3);
        assert_eq!(s.rules.len(), 1);
        assert_eq!(s.on_exhausted, OnExhausted::RepeatLast);
        assert_eq!(s.entries[1].usage, Some(Value::Null));
        assert_eq!(s.entries[0].usage, None);
        assert_eq!(s.entries[2].status, Some(429));
    }

    #[test]
    fn rejects_unknown_fields_with_line_number() {
        let err = Script::parse_jsonl("{\"content\":\"a\"}\n{\"contnet\":\"b\"}").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("line 2"), "{msg}");
        assert!(msg.contains("contnet"), "{msg}");
        let err = Script::parse_jsonl("{\"status\": 1000}").unwrap_err();
        assert!(err.to_string().contains("1000"));
        let err = Script::parse_jsonl("not json").unwrap_err();
        assert!(err.to_string().contains("line 1"));
    }

    #[test]
    fn role_marker_and_routing_order() {
        assert_eq!(
            find_role_marker("You check. [phoneagent-role: verifier] ok"),
            Some("verifier".into())
        );
        assert_eq!(
            find_role_marker("[phoneagent-role:safety_reviewer]"),
            Some("safety_reviewer".into())
        );
        assert_eq!(find_role_marker("[phoneagent-role: ]"), None);
        assert_eq!(find_role_marker("[phoneagent-role: a b]"), None);
        let rules = vec![QueueRule {
            queue: "auto_reviewer".into(),
            system_contains: Some("approve for me".into()),
            contains: None,
        }];
        assert_eq!(
            route(
                &rules,
                Some("actor"),
                "approve for me [phoneagent-role: x]",
                ""
            ),
            "auto_reviewer"
        );
        assert_eq!(
            route(&rules, Some("actor"), "[phoneagent-role: x]", ""),
            "actor"
        );
        assert_eq!(route(&rules, None, "[phoneagent-role: x]", ""), "x");
        assert_eq!(route(&rules, None, "plain", ""), DEFAULT_QUEUE);
    }

    #[test]
    fn queues_fall_back_and_exhaust() {
        let mut q = Queues::new(Script::from_entries(vec![
            ScriptEntry::text("a"),
            ScriptEntry::text("v").in_queue("verifier"),
        ]));
        assert_eq!(q.effective_queue("actor"), DEFAULT_QUEUE);
        assert_eq!(q.effective_queue("verifier"), "verifier");
        assert!(matches!(q.take("verifier"), Take::Entry(e) if e.content.as_deref() == Some("v")));
        match q.take("verifier") {
            Take::Exhausted(m) => assert!(m.contains("\"verifier\"") && m.contains("1 served")),
            Take::Entry(_) => panic!("should be exhausted"),
        }
        q.on_exhausted = OnExhausted::RepeatLast;
        assert!(matches!(q.take("verifier"), Take::Entry(e) if e.content.as_deref() == Some("v")));
        assert_eq!(q.pending_counts().get(DEFAULT_QUEUE), Some(&1));
    }
}
