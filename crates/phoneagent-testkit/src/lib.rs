//! # phoneagent-testkit
//!
//! PhoneAgent's test kit: the **scripted model server** (SPEC V5) — an OpenAI-compatible HTTP
//! server on 127.0.0.1 that every end-to-end test and the offline demo use as "the model".
//! It answers from a script, or (oracle mode) from the calibration probe image it received, can
//! resolve `{{center:LABEL}}` placeholders against the virtual phone's ground truth, injects
//! faults (429 with `Retry-After`, 500, 503, delays, malformed bodies, missing fields, truncated
//! responses), and records every request so tests can assert on what reached the model (SPEC P1:
//! no package name, activity or UI tree ever does).
//!
//! ## Use it from a test
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use phoneagent_testkit::{ScriptEntry, ScriptedModel, ScriptedModelConfig};
//! let model = ScriptedModel::start(ScriptedModelConfig::with_entries(vec![
//!     ScriptEntry::text(r#"do(action="Home")"#),
//!     ScriptEntry::text(r#"finish(message="done")"#),
//! ]))
//! .await?;
//! let base_url = model.base_url(); // http://127.0.0.1:PORT/v1 — give it to the client
//! // … run the agent …
//! for r in model.chat_requests() {
//!     assert!(!r.body_text_without_images().contains("com.android"));
//! }
//! model.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Or as a process: `scripted-model --port 0 --script steps.jsonl --sim-port 15037
//! --record requests.jsonl` prints `scripted model listening on http://127.0.0.1:P/v1` and
//! serves until Ctrl-C / SIGTERM. `--oracle-sim-port Q` turns on oracle mode and reads ground
//! truth from the sim on port `Q`; `--space image_pixels` switches the answer space;
//! `--oracle-error-px N` and `--bad` make the oracle inaccurate or wrong.
//!
//! ## Endpoints
//!
//! | Endpoint | What |
//! |---|---|
//! | `POST /v1/chat/completions` | the next scripted answer; JSON, or SSE when `"stream": true` |
//! | `GET /v1/models` | `{"object":"list","data":[{"id":…}]}` of the configured model ids |
//! | `GET /__requests` | JSON array of [`RecordedRequest`] (model paths only) |
//! | `DELETE /__requests` | forget them |
//! | `POST /__script` | replace or append the script (below) |
//! | `GET /__health` | `{"status":"ok","pending":{queue: n},"requests":n,…}` |
//!
//! Streaming (`"stream": true`) sends `data: {chunk}` events: first a delta with
//! `role: "assistant"`, then `reasoning_content` deltas, `content` deltas (each
//! [`ScriptedModelConfig::stream_chunk_chars`] characters), per tool call a delta with `index`,
//! `id`, `type`, `function.name` and empty `arguments` followed by argument fragments, a chunk with
//! an empty delta and the `finish_reason`, a usage chunk with `choices: []` (always sent unless the
//! entry says `"usage": null`), then `data: [DONE]`.
//!
//! ## Script format (JSONL)
//!
//! One JSON object per line; blank lines and lines starting with `#` or `//` are ignored. Each
//! line is a [`ScriptEntry`] (fields below, all optional) or a directive (`rule`,
//! `on_exhausted`).
//!
//! ```text
//! # queues are picked by the [phoneagent-role: NAME] marker or by rules
//! {"rule": {"queue": "verifier", "system_contains": "finish verifier"}}
//! {"on_exhausted": "error"}
//! {"content": "<think>open the shop</think>do(action=\"Tap\", element={{center:商城}})"}
//! {"status": 429, "retry_after": 1}
//! {"tool_calls": [{"name": "tap", "arguments": {"element": "{{center:加入购物车}}", "reason": "add it"}}]}
//! {"content": "finish(message=\"ordered\")", "usage": {"prompt_tokens": 1200, "completion_tokens": 9}}
//! {"queue": "verifier", "content": "{\"verdict\": \"complete\"}"}
//! {"delay_ms": 5000, "content": "too late"}
//! {"malformed_body": true}
//! {"missing_fields": ["choices"]}
//! {"truncated": true, "content": "do(action=\"Back\")"}
//! ```
//!
//! Entry fields:
//! * answer: `content`, `reasoning_content`, `tool_calls` (`[{"id"?, "name", "arguments"}]`,
//!   arguments a JSON object or a verbatim string), `finish_reason` (default `tool_calls` when there
//!   are tool calls, else `stop`), `usage` (absent = a deterministic estimate of 4 chars/token and
//!   765 tokens/image; `null` = no usage; an object = sent, `total_tokens` filled in);
//! * routing: `queue` (default `"default"`), `space` (`relative_0_999` | `image_pixels`, for this
//!   entry's placeholders);
//! * faults: `status` (any HTTP status; an OpenAI-style `{"error": {...}}` body) with
//!   `retry_after` (seconds, `Retry-After` header), `retry_after_ms` (`retry-after-ms` header) and
//!   `error_message`; `delay_ms` (before anything is sent); `chunk_delay_ms` (between SSE
//!   chunks); `malformed_body` (`true` or the exact invalid body; in a stream one `data:` line is
//!   invalid JSON); `missing_fields` (dotted paths such as `"choices"`, `"usage"`,
//!   `"choices.0.message"`, removed from the response or every chunk); `truncated` (the connection
//!   closes halfway: a `Content-Length` for the whole body but half of it sent; a stream stops
//!   halfway with no `finish_reason` and no `[DONE]`).
//!
//! ### Queues: which entry answers which request
//!
//! Entries are consumed in order **within their queue**. A request goes to the first of:
//! 1. the first `rule` whose `system_contains` is a substring of the system prompt (the text of
//!    all `system`/`developer` messages joined by `\n`) and whose `contains` (if given) is a
//!    substring of any message text;
//! 2. the queue named by the `x-phoneagent-role` request header;
//! 3. the queue named by the marker **`[phoneagent-role: NAME]`** in the system prompt — the
//!    product's prompts carry it for `actor`, `verifier`, `safety_reviewer`, `auto_reviewer`
//!    and `calibration`;
//! 4. `"default"`.
//!
//! A queue the script never had entries for falls back to `"default"` (so a plain script with no
//! `queue` fields answers everything in order). When a queue that had entries runs dry, the
//! `on_exhausted` policy decides: `error` (default: HTTP 500, code `script_exhausted`, message
//! naming the queue) or `repeat_last` (serve the last entry again, faults included).
//!
//! `POST /__script` takes either a JSON object `{"mode": "replace"|"append", "entries": [...],
//! "rules": [...], "on_exhausted": ...}` or a JSONL body (with `?mode=append` to append);
//! the default mode is `replace`.
//!
//! ### Label placeholders
//!
//! `{{center:LABEL}}`, `{{x:LABEL}}`, `{{y:LABEL}}` in `content`, `reasoning_content` or tool-call
//! arguments are resolved at answer time against the ground truth of the virtual phone
//! (`phoneagent-sim`, read through its sim-only `host:sim-state` service), in the configured
//! coordinate space — see [`placeholder`] for the exact rules. A placeholder that cannot be
//! resolved makes the server answer HTTP 500 with code `placeholder_unresolved` and a message
//! naming the label, the screen and the visible labels.
//!
//! ### Oracle mode and the calibration probe contract
//!
//! With [`ScriptedModelConfig::oracle`] set, a request whose last image is a calibration probe —
//! **an image with one saturated red disc on a plain background; the right answer is a tap at
//! its centre** — is answered by locating the disc, in `do` text form or as a `tap` tool call
//! depending on whether the request carried `tools`. Everything else falls through to the script.
//! See [`oracle`] for the exact contract, the spaces and the `error_px` / `bad` switches.
//!
//! ## Recording
//!
//! Every request on a model path is kept as a [`RecordedRequest`]: method, path, headers without
//! any credential header (`authorization_present` says whether one was sent; its value is never
//! stored), the body, the queue, who answered, the status and the outcome (`completed`,
//! `truncated`, `client_disconnected`). With [`ScriptedModelConfig::record_file`] each one is also
//! appended to a JSONL file when it completes.

pub mod demo;
pub mod oracle;
pub mod placeholder;
pub mod request;
pub mod script;
pub mod serve;

mod openai;
mod server;

pub use oracle::OracleConfig;
pub use request::RecordedRequest;
pub use script::{MalformedBody, OnExhausted, QueueRule, Script, ScriptEntry, ScriptToolCall};
pub use server::{ScriptedModel, ScriptedModelConfig, SimTarget};

/// Errors of the scripted model server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A script line, entry or rule is invalid.
    #[error("script {at}: {message}")]
    Script {
        /// `line N` of a JSONL file, `entry N` of an in-memory script, or `rules`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The script file could not be read.
    #[error("cannot read the script file {path}: {source}")]
    ScriptFile {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The record file could not be opened for appending.
    #[error("cannot open the record file {path} for appending: {source}")]
    RecordFile {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The listening socket could not be bound.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source} (pick another port or 0 for an ephemeral one)"
    )]
    Bind {
        /// The requested port.
        port: u16,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration is not usable.
    #[error("invalid scripted model configuration: {0}")]
    Config(String),
    /// A `{{…:LABEL}}` placeholder could not be resolved.
    #[error("placeholder {{{{…:{placeholder}}}}}: {message}")]
    Placeholder {
        /// The label part of the placeholder.
        placeholder: String,
        /// Why.
        message: String,
    },
    /// The virtual phone's ground truth could not be read.
    #[error("virtual phone on 127.0.0.1:{port}: {message}")]
    GroundTruth {
        /// The sim's port.
        port: u16,
        /// Why.
        message: String,
    },
    /// An image in the request could not be read.
    #[error("image in the request: {0}")]
    Image(String),
    /// The oracle could not answer a calibration request.
    #[error("oracle: {0}")]
    Oracle(String),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Script {
    /// Read a JSONL script file (see the crate docs for the format).
    ///
    /// Errors: [`Error::ScriptFile`] when unreadable, [`Error::Script`] naming the bad line.
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ScriptFile {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_jsonl(&text)
    }
}
