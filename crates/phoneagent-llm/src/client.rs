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
//!
//! Layout: `request` builds the JSON body, `retry` is the request loop with backoff and
//! `Retry-After`, `sse` frames the event stream, `response` parses answers (plain and streamed),
//! `errors` classifies failed attempts into [`LlmError`]s.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::{LlmError, Result, TimeoutPhase};
use crate::keystore::ApiKey;
use crate::types::{ChatRequest, ChatResponse};

mod errors;
mod request;
mod response;
mod retry;
mod sse;

pub use errors::scrub_secret;
pub use retry::{RetryPolicy, parse_retry_after};
pub use sse::SseParser;

use errors::{Attempt, classify_reqwest, error_detail, status_hint};
use response::{Parsed, StreamAccumulator, parse_completion};

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

#[cfg(test)]
mod tests {
    use super::*;

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
