//! The OpenAI-compatible chat-completions client (SPEC M1).
//!
//! `POST {base_url}/chat/completions` over reqwest + rustls (ring). Works with OpenAI,
//! vLLM/SGLang (AutoGLM-Phone), Ollama, LM Studio and OpenRouter: the body uses only the common
//! subset (`model`, `messages` with text and `image_url` parts, `tools`, `tool_choice`,
//! `temperature`, `max_tokens`, `stream`, `stream_options.include_usage`) plus the profile's
//! `extra_body` merged in verbatim.
//!
//! Behaviour:
//! * Timeouts: `connect_timeout_ms` for TCP/TLS, `timeout_ms` for the whole call (send + full
//!   body or stream), each a distinct [`LlmError::Timeout`] phase. Timeouts are not retried.
//! * Retries ([`RetryPolicy`]): on 408, 429, 500, 502, 503, 504, 529 and connection errors
//!   (refused, reset, dropped mid-body), at most `max_retries` times, with exponential backoff
//!   and jitter; a `Retry-After` header (seconds or HTTP-date) is honoured, and one longer than
//!   `max_retry_after_ms` ends the call at once.
//! * Cancellation: the [`CancellationToken`] is raced against the request and the backoff
//!   sleeps; on cancel the request future is dropped, which closes the connection, and the call
//!   returns [`LlmError::Cancelled`] at once.
//! * Streaming (SSE) when the profile (or the request) enables it: content, reasoning and
//!   tool-call deltas are assembled into one [`ChatResponse`]. A server that ignores `stream`
//!   and answers plain JSON is accepted too.
//! * `reasoning_content` / `reasoning` fields and `<think>…</think>` blocks go to
//!   [`ChatResponse::reasoning`], not into the content.
//! * Secrets: the `Authorization` header is marked sensitive, and server text quoted in errors
//!   is scrubbed of the key ([`scrub_secret`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;
use rand::Rng;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::{LlmError, Result, TimeoutPhase};
use crate::keystore::ApiKey;
use crate::types::{
    ChatMessage, ChatRequest, ChatResponse, ContentPart, MessageRole, ToolCall, ToolChoice, Usage,
    split_think,
};

/// Anything that answers chat requests: the runtime, the reviewers and calibration call this.
/// [`ChatClient`] is the HTTP implementation.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// One chat completion. Must return [`LlmError::Cancelled`] promptly when `cancel` fires,
    /// aborting any in-flight request.
    async fn chat(&self, req: ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse>;

    /// `{base_url}/chat/completions`, for messages and cache keys.
    fn endpoint(&self) -> &str;

    /// The model name requests are sent with.
    fn model(&self) -> &str;

    /// [`ModelClient::chat`] for a caller that can wait at most `max_wait` for a server that
    /// asks to be retried later: a `Retry-After` longer than that (or than the client's own
    /// [`RetryPolicy::max_retry_after_ms`]) ends the call at once with
    /// [`LlmError::RateLimited`] carrying `retry_after_ms`. The default ignores `max_wait`.
    async fn chat_within(
        &self,
        req: ChatRequest,
        cancel: &CancellationToken,
        max_wait: Duration,
    ) -> Result<ChatResponse> {
        let _ = max_wait;
        self.chat(req, cancel).await
    }
}

/// Retry behaviour (SPEC M1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts at most).
    pub max_retries: u32,
    /// First backoff, ms; doubles per retry.
    pub base_delay_ms: u64,
    /// Backoff cap, ms.
    pub max_delay_ms: u64,
    /// A `Retry-After` longer than this (ms) is not waited for: the call fails at once.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay_ms: 500,
            max_delay_ms: 8_000,
            max_retry_after_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// Backoff before retry number `retry` (1-based): `min(max, base·2^(retry-1))`, jittered
    /// uniformly into `[d/2, d]` so clients that failed together do not retry together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay_ms
            .saturating_mul(1u64 << retry.saturating_sub(1).min(30));
        let d = exp.min(self.max_delay_ms);
        let half = d / 2;
        let jittered = if d > half {
            rand::rng().random_range(half..=d)
        } else {
            d
        };
        Duration::from_millis(jittered)
    }
}

/// Everything a [`ChatClient`] needs (normally built from a model profile).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL including `/v1`, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Model name to send.
    pub model: String,
    /// Bearer key; `None` for local endpoints without auth.
    pub api_key: Option<ApiKey>,
    /// Where the key came from, for hints (`keyring entry "openai"`, `PHONE_AGENT_API_KEY`);
    /// never the key itself.
    pub key_source: String,
    /// Use SSE streaming unless the request overrides it.
    pub stream: bool,
    /// TCP/TLS connect timeout, ms.
    pub connect_timeout_ms: u64,
    /// Whole-call timeout per attempt, ms.
    pub timeout_ms: u64,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Extra top-level body fields merged into every request (e.g. `chat_template_kwargs`).
    pub extra_body: Map<String, Value>,
}

impl ClientConfig {
    /// A config with defaults: no key, no streaming, 10 s connect, 120 s total, default retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            key_source: "no API key configured".into(),
            stream: false,
            connect_timeout_ms: 10_000,
            timeout_ms: 120_000,
            retry: RetryPolicy::default(),
            extra_body: Map::new(),
        }
    }
}

/// The HTTP [`ModelClient`].
#[derive(Debug, Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    cfg: ClientConfig,
    endpoint: String,
}

impl ChatClient {
    /// Builds a client. Errors ([`LlmError::Config`]) for a base URL that is not http(s), or a
    /// key that cannot be put in a header.
    pub fn new(cfg: ClientConfig) -> Result<Self> {
        let base = cfg.base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base).map_err(|e| {
            LlmError::config(format!(
                "base_url {base:?} is not a valid URL ({e}); use e.g. http://127.0.0.1:8000/v1"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(LlmError::config(format!(
                "base_url {base:?} must start with http:// or https://"
            )));
        }
        if base.ends_with("/chat/completions") {
            return Err(LlmError::config(format!(
                "base_url {base:?} must not include /chat/completions: give the API root, e.g. https://api.openai.com/v1"
            )));
        }
        if cfg.model.trim().is_empty() {
            return Err(LlmError::config(format!(
                "no model name configured for {base}: set `model` in the profile or PHONE_AGENT_MODEL"
            )));
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = cfg.api_key.as_ref().filter(|k| !k.is_empty()) {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                LlmError::config(format!(
                    "the API key from {} contains characters not allowed in an HTTP header; store it again without spaces or line breaks",
                    cfg.key_source
                ))
            })?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms.max(1)))
            .user_agent(concat!("phoneagent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::config(format!("could not build the HTTP client: {e}")))?;
        let endpoint = format!("{base}/chat/completions");
        Ok(Self {
            http,
            cfg: ClientConfig {
                base_url: base,
                ..cfg
            },
            endpoint,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// `GET {base_url}/models` (used by `phoneagent doctor`): the model ids the endpoint lists,
    /// or `None` when it does not offer the listing (HTTP 404/405). One attempt, no retry,
    /// bounded by `timeout_ms`.
    ///
    /// Errors: [`LlmError::Connect`] / [`LlmError::Timeout`] when unreachable,
    /// [`LlmError::Http`] for other statuses (401/403 name the key's source, never the key),
    /// [`LlmError::MalformedResponse`] when the listing is not `{"data": [{"id": …}]}`,
    /// [`LlmError::Cancelled`].
    pub async fn list_models(&self, cancel: &CancellationToken) -> Result<Option<Vec<String>>> {
        let base = self.cfg.base_url.trim_end_matches('/');
        let url = format!("{base}/models");
        let key = self.cfg.api_key.as_ref().map(|k| k.expose());
        let model = self.cfg.model.clone();
        let total = Duration::from_millis(self.cfg.timeout_ms.max(1));
        let request = async {
            let resp = self.http.get(&url).send().await?;
            let status = resp.status();
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        };
        let (status, text) = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(LlmError::Cancelled { endpoint: url }),
            r = tokio::time::timeout(total, request) => match r {
                Err(_) => {
                    return Err(LlmError::Timeout {
                        endpoint: url,
                        model,
                        phase: TimeoutPhase::Total,
                        after_ms: self.cfg.timeout_ms,
                    });
                }
                Ok(Err(e)) => match classify_reqwest(&e) {
                    Attempt::ConnectTimeout => {
                        return Err(LlmError::Timeout {
                            endpoint: url,
                            model,
                            phase: TimeoutPhase::Connect,
                            after_ms: self.cfg.connect_timeout_ms,
                        });
                    }
                    other => {
                        let detail = match other {
                            Attempt::Connect(d) => d,
                            a => a.summary(),
                        };
                        return Err(LlmError::Connect {
                            endpoint: url,
                            model,
                            attempts: 1,
                            detail: scrub_secret(&detail, key),
                        });
                    }
                },
                Ok(Ok(r)) => r,
            },
        };
        if matches!(status.as_u16(), 404 | 405) {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(LlmError::Http {
                endpoint: url,
                model,
                status: status.as_u16(),
                attempts: 1,
                detail: scrub_secret(&text.chars().take(300).collect::<String>(), key),
                hint: status_hint(status, &self.cfg.key_source),
            });
        }
        let ids = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
            v.get("data")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect::<Vec<_>>()
            })
        });
        match ids {
            Some(ids) => Ok(Some(ids)),
            None => Err(LlmError::MalformedResponse {
                endpoint: url,
                model,
                detail: "the model listing is not {\"data\": [{\"id\": ...}]}".into(),
                excerpt: scrub_secret(&text.chars().take(120).collect::<String>(), key),
            }),
        }
    }

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

    fn key(&self) -> Option<&str> {
        self.cfg.api_key.as_ref().map(|k| k.expose())
    }

    async fn attempt(
        &self,
        body: &bytes::Bytes,
        stream: bool,
    ) -> std::result::Result<Parsed, Attempt> {
        let resp = self
            .http
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send()
            .await
            .map_err(|e| classify_reqwest(&e))?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            let text = resp.text().await.unwrap_or_default();
            return Err(Attempt::Status {
                status,
                detail: error_detail(&text),
                retry_after,
            });
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if stream && !is_sse {
            // Some servers stream with a wrong content type; sniff the body.
            let bytes = resp.bytes().await.map_err(|e| classify_reqwest(&e))?;
            if bytes.trim_ascii_start().starts_with(b"data:") {
                let mut acc = StreamAccumulator::default();
                let mut parser = SseParser::default();
                let mut events = parser.push(&bytes);
                events.extend(parser.finish());
                for data in events {
                    if acc.feed(&data)? {
                        break;
                    }
                }
                return acc.finish();
            }
            parse_completion(&bytes)
        } else if stream {
            let mut acc = StreamAccumulator::default();
            let mut parser = SseParser::default();
            let mut body_stream = resp.bytes_stream();
            while let Some(chunk) = body_stream.next().await {
                let chunk = chunk.map_err(|e| classify_reqwest(&e))?;
                for data in parser.push(&chunk) {
                    if acc.feed(&data)? {
                        return acc.finish();
                    }
                }
            }
            for data in parser.finish() {
                if acc.feed(&data)? {
                    break;
                }
            }
            acc.finish()
        } else {
            let bytes = resp.bytes().await.map_err(|e| classify_reqwest(&e))?;
            parse_completion(&bytes)
        }
    }

    fn final_error(&self, a: Attempt, attempts: u32) -> LlmError {
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

    /// Delay before the next attempt, or `None` when this failure is final (a `Retry-After`
    /// over `max_retry_after_ms` is final).
    fn retry_delay(&self, a: &Attempt, retry: u32, max_retry_after_ms: u64) -> Option<Duration> {
        if retry > self.cfg.retry.max_retries {
            return None;
        }
        match a {
            Attempt::Status {
                status,
                retry_after,
                ..
            } if is_retryable_status(*status) => match retry_after {
                Some(d) if d.as_millis() > u128::from(max_retry_after_ms) => None,
                Some(d) => {
                    let extra = rand::rng().random_range(0..=(d.as_millis() as u64 / 10).min(250));
                    Some(*d + Duration::from_millis(extra))
                }
                None => Some(self.cfg.retry.backoff(retry)),
            },
            Attempt::Connect(_) | Attempt::ConnectTimeout => Some(self.cfg.retry.backoff(retry)),
            _ => None,
        }
    }
}

#[async_trait]
impl ModelClient for ChatClient {
    async fn chat(&self, req: ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse> {
        self.chat_capped(req, cancel, self.cfg.retry.max_retry_after_ms)
            .await
    }

    async fn chat_within(
        &self,
        req: ChatRequest,
        cancel: &CancellationToken,
        max_wait: Duration,
    ) -> Result<ChatResponse> {
        let cap = (max_wait.as_millis() as u64).min(self.cfg.retry.max_retry_after_ms);
        self.chat_capped(req, cancel, cap).await
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn model(&self) -> &str {
        &self.cfg.model
    }
}

impl ChatClient {
    /// The request loop; a `Retry-After` over `max_retry_after_ms` ends it.
    async fn chat_capped(
        &self,
        req: ChatRequest,
        cancel: &CancellationToken,
        max_retry_after_ms: u64,
    ) -> Result<ChatResponse> {
        let stream = req.stream.unwrap_or(self.cfg.stream);
        // Serialized once (a screenshot makes it ~200 KB), reused by every retry.
        let body = {
            let _phase =
                tracing::trace_span!(target: "phoneagent::phase", "request_encode").entered();
            bytes::Bytes::from(self.build_body(&req).to_string())
        };
        let started = Instant::now();
        let total = Duration::from_millis(self.cfg.timeout_ms.max(1));
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(LlmError::Cancelled { endpoint: self.endpoint.clone() });
                }
                r = tokio::time::timeout(total, self.attempt(&body, stream)) => r,
            };
            let failure = match outcome {
                Err(_) => {
                    return Err(LlmError::Timeout {
                        endpoint: self.endpoint.clone(),
                        model: self.cfg.model.clone(),
                        phase: TimeoutPhase::Total,
                        after_ms: self.cfg.timeout_ms,
                    });
                }
                Ok(Ok(parsed)) => {
                    return Ok(parsed.into_response(started.elapsed().as_millis() as u64, attempts));
                }
                Ok(Err(a)) => a,
            };
            let Some(delay) = self.retry_delay(&failure, attempts, max_retry_after_ms) else {
                return Err(self.final_error(failure, attempts));
            };
            tracing::warn!(
                endpoint = %self.endpoint,
                model = %self.cfg.model,
                attempt = attempts,
                delay_ms = delay.as_millis() as u64,
                failure = %failure.summary(),
                "model call failed, retrying"
            );
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(LlmError::Cancelled { endpoint: self.endpoint.clone() });
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }
}

/// One failed attempt, before deciding whether to retry.
#[derive(Debug)]
enum Attempt {
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
    fn summary(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("HTTP {}", status.as_u16()),
            Self::Connect(d) => format!("connection error: {d}"),
            Self::ConnectTimeout => "connect timeout".into(),
            Self::Malformed { detail, .. } => format!("malformed body: {detail}"),
        }
    }
}

fn classify_reqwest(e: &reqwest::Error) -> Attempt {
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

fn is_retryable_status(s: StatusCode) -> bool {
    matches!(s.as_u16(), 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

fn status_hint(status: StatusCode, key_source: &str) -> String {
    match status.as_u16() {
        400 | 422 => "The server refused the request: check that the model accepts images (vision) and, if the profile uses protocol \"tools\", function calling; or set stream to false in the profile".into(),
        401 | 403 => format!("The server rejected the credentials ({key_source}): store a valid API key in the profile's keyring entry"),
        404 => "Check base_url (most servers need the /v1 suffix) and the model name".into(),
        413 => "The request is too large: lower image.max_long_side or image.max_pixels in the profile".into(),
        408 | 429 | 500..=599 => "The server failed; try again later or check the server's logs".into(),
        _ => "Check the endpoint's documentation for this status".into(),
    }
}

/// Parses a `Retry-After` value: delta-seconds (integer or decimal) or an HTTP-date, relative to
/// `now`. A date in the past gives zero. Unparseable values give `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = v.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Some(Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
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
fn error_detail(body: &str) -> String {
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

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
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

/// A parsed answer before timing is attached.
#[derive(Debug, Default)]
struct Parsed {
    content: String,
    reasoning: String,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    model: Option<String>,
}

impl Parsed {
    fn into_response(self, latency_ms: u64, attempts: u32) -> ChatResponse {
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

fn parse_completion(body: &[u8]) -> std::result::Result<Parsed, Attempt> {
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

/// Incremental Server-Sent-Events parser: bytes in, `data:` payloads out (one per event,
/// multi-line data joined with `\n`). Handles `\n`, `\r\n` and chunk boundaries anywhere.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes; returns the payloads of the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        out
    }

    /// Flushes a final event not terminated by a blank line.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).to_string();
            self.line(rest.trim_end_matches('\r'), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(self.data.join("\n"));
                self.data.clear();
            }
        } else if let Some(rest) = line.strip_prefix("data:") {
            self.data
                .push(rest.strip_prefix(' ').unwrap_or(rest).to_string());
        }
        // `event:`, `id:`, `retry:` and `:` comments are ignored.
    }
}

/// Assembles streamed chunks into one answer.
#[derive(Default)]
struct StreamAccumulator {
    parsed: Parsed,
    /// Tool calls by stream index: (id, name, arguments).
    calls: BTreeMap<usize, (String, String, String)>,
    saw_chunk: bool,
}

impl StreamAccumulator {
    /// Feeds one event payload; returns true on `[DONE]`.
    fn feed(&mut self, data: &str) -> std::result::Result<bool, Attempt> {
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

    fn finish(mut self) -> std::result::Result<Parsed, Attempt> {
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
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_and_is_capped_and_jittered() {
        let p = RetryPolicy {
            max_retries: 5,
            base_delay_ms: 100,
            max_delay_ms: 1000,
            max_retry_after_ms: 10_000,
        };
        for _ in 0..50 {
            let d1 = p.backoff(1).as_millis();
            assert!((50..=100).contains(&d1), "{d1}");
            let d3 = p.backoff(3).as_millis();
            assert!((200..=400).contains(&d3), "{d3}");
            let d10 = p.backoff(10).as_millis();
            assert!((500..=1000).contains(&d10), "{d10}");
        }
    }

    #[test]
    fn sse_parser_handles_split_chunks_and_crlf() {
        let mut p = SseParser::default();
        let mut out = p.push(b"data: {\"a\":1}\r\n\r\ndata: par");
        out.extend(p.push(b"t1\ndata: part2\n\n: comment\nevent: x\ndata: [DONE]"));
        out.extend(p.finish());
        assert_eq!(out, vec!["{\"a\":1}", "part1\npart2", "[DONE]"]);
    }

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

    #[test]
    fn scrub_removes_key() {
        assert_eq!(
            scrub_secret("bad key sk-abcdef given", Some("sk-abcdef")),
            "bad key [redacted] given"
        );
        assert_eq!(scrub_secret("abc", Some("ab")), "abc");
    }

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

    #[test]
    fn bad_configs_are_explained() {
        let e = ChatClient::new(ClientConfig::new("localhost:8000", "m")).unwrap_err();
        assert!(e.to_string().contains("http://"), "{e}");
        let e =
            ChatClient::new(ClientConfig::new("http://h/v1/chat/completions", "m")).unwrap_err();
        assert!(e.to_string().contains("must not include"), "{e}");
        let e = ChatClient::new(ClientConfig::new("http://h/v1", " ")).unwrap_err();
        assert!(e.to_string().contains("no model name"), "{e}");
    }
}
