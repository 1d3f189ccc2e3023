//! The HTTP server: routes, request handling, recording, faults.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use phoneagent_protocol::CoordinateSpace;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::openai::{self, Answer, Meta};
use crate::oracle::{self, OracleConfig, TapForm};
use crate::placeholder::{ResolveContext, ScreenTruth, has_placeholders};
use crate::request::{self, CREDENTIAL_HEADERS, RecordedRequest};
use crate::script::{self, OnExhausted, Queues, Script, ScriptEntry, Take};
use crate::{Error, Result};

mod admin;
mod chat;
mod respond;

use admin::{clear_requests, fallback, health, list_requests, models, update_script};
use chat::chat;
use respond::respond_answer;

/// Largest request body accepted (screenshots travel as base64 inside the JSON), bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// How long a truncated response waits after its last bytes before aborting the connection,
/// so the bytes reach the client first.
const TRUNCATION_FLUSH: Duration = Duration::from_millis(50);

/// Where the virtual phone's ground truth is read from (for placeholders).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimTarget {
    /// Port of the `phoneagent-sim` ADB server on 127.0.0.1.
    pub port: u16,
    /// Device serial; `None` = the only device.
    pub serial: Option<String>,
}

/// Configuration of a [`ScriptedModel`].
#[derive(Debug, Clone)]
pub struct ScriptedModelConfig {
    /// The script (may be empty, e.g. in pure oracle mode or when filled later through
    /// `POST /__script`).
    pub script: Script,
    /// Answer space for placeholders and oracle answers: `Relative0999` (default) or
    /// `ImagePixels`. Other spaces are refused at start.
    pub space: CoordinateSpace,
    /// Virtual phone for `{{center:LABEL}}` placeholders.
    pub sim: Option<SimTarget>,
    /// Oracle mode: answer calibration probes from the image (see [`crate::oracle`]).
    pub oracle: Option<OracleConfig>,
    /// Model ids listed by `GET /v1/models`; the first is the default `model` of responses
    /// when the request names none. Default `["scripted-model"]`.
    pub models: Vec<String>,
    /// When set, requests must carry `Authorization: Bearer <key>`, else 401. The key is never
    /// recorded or logged.
    pub require_api_key: Option<String>,
    /// Append every recorded request as one JSON line to this file (images included).
    pub record_file: Option<PathBuf>,
    /// Characters per SSE content/argument delta. Default 8.
    pub stream_chunk_chars: usize,
    /// Port on 127.0.0.1; 0 = ephemeral (default).
    pub port: u16,
}

impl Default for ScriptedModelConfig {
    fn default() -> Self {
        Self {
            script: Script::default(),
            space: CoordinateSpace::Relative0999,
            sim: None,
            oracle: None,
            models: vec!["scripted-model".into()],
            require_api_key: None,
            record_file: None,
            stream_chunk_chars: 8,
            port: 0,
        }
    }
}

impl ScriptedModelConfig {
    /// A config answering from `entries` in order, everything else default.
    pub fn with_entries(entries: Vec<ScriptEntry>) -> Self {
        Self {
            script: Script::from_entries(entries),
            ..Self::default()
        }
    }
}

struct Shared {
    config: ScriptedModelConfig,
    queues: Mutex<Queues>,
    requests: Mutex<Vec<RecordedRequest>>,
    record_file: Option<Mutex<std::fs::File>>,
    seq: AtomicU64,
    started: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn update(&self, seq: u64, f: impl FnOnce(&mut RecordedRequest)) {
        let mut reqs = lock(&self.requests);
        if let Some(r) = reqs.iter_mut().rev().find(|r| r.seq == seq) {
            f(r);
        }
    }

    /// Set the final outcome and append the record to the record file.
    fn finish(&self, seq: u64, outcome: &str) {
        let line = {
            let mut reqs = lock(&self.requests);
            let Some(r) = reqs.iter_mut().rev().find(|r| r.seq == seq) else {
                return;
            };
            if r.outcome != "pending" {
                return;
            }
            r.outcome = outcome.to_string();
            serde_json::to_string(r).ok()
        };
        if let (Some(f), Some(line)) = (&self.record_file, line) {
            let mut f = lock(f);
            if let Err(e) = writeln!(f, "{line}").and_then(|()| f.flush()) {
                tracing::warn!("scripted model: could not append to the record file: {e}");
            }
        }
    }
}

/// Marks a recorded request `client_disconnected` if dropped before [`OutcomeGuard::done`].
struct OutcomeGuard {
    shared: Arc<Shared>,
    seq: u64,
    armed: bool,
}

impl OutcomeGuard {
    fn done(mut self, outcome: &str) {
        self.armed = false;
        self.shared.finish(self.seq, outcome);
    }
}

impl Drop for OutcomeGuard {
    fn drop(&mut self) {
        if self.armed {
            self.shared.finish(self.seq, "client_disconnected");
        }
    }
}

/// A running scripted model server on 127.0.0.1 (SPEC V5).
///
/// Dropping the handle stops the server (without waiting); prefer [`ScriptedModel::shutdown`].
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// Bind 127.0.0.1:`config.port` and serve in a background tokio task.
    ///
    /// Errors: [`Error::Config`] for an unsupported space, [`Error::Script`] for an invalid
    /// script, [`Error::RecordFile`] when the record file cannot be created, [`Error::Bind`]
    /// when the port is taken.
    pub async fn start(config: ScriptedModelConfig) -> Result<Self> {
        if !matches!(
            config.space,
            CoordinateSpace::Relative0999 | CoordinateSpace::ImagePixels
        ) {
            return Err(Error::Config(format!(
                "coordinate space {} is not one the scripted model answers in: use relative_0_999 or image_pixels",
                config.space
            )));
        }
        config.script.validate()?;
        let record_file = match &config.record_file {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|source| Error::RecordFile {
                        path: p.clone(),
                        source,
                    })?,
            )),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|source| Error::Bind {
                port: config.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            port: config.port,
            source,
        })?;
        let shared = Arc::new(Shared {
            queues: Mutex::new(Queues::new(config.script.clone())),
            config,
            requests: Mutex::new(Vec::new()),
            record_file,
            seq: AtomicU64::new(0),
            started: Instant::now(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .route("/__requests", get(list_requests).delete(clear_requests))
            .route("/__script", post(update_script))
            .route("/__health", get(health))
            .fallback(fallback)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(shared.clone());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop_rx.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!("scripted model server stopped with an error: {e}");
            }
        });
        tracing::info!("scripted model listening on http://{addr}/v1");
        Ok(Self {
            addr,
            shared,
            stop: Some(stop_tx),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:P/v1` — the base URL an OpenAI client takes.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received on a model path so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The `POST /v1/chat/completions` requests only.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/chat/completions"))
            .collect()
    }

    /// Forget the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Replace the whole script (queues, rules, policy).
    pub fn replace_script(&self, script: Script) -> Result<()> {
        script.validate()?;
        lock(&self.shared.queues).replace(script);
        Ok(())
    }

    /// Append entries (and rules) to the running script.
    pub fn append_script(&self, script: Script) -> Result<()> {
        script.validate()?;
        lock(&self.shared.queues).append(script);
        Ok(())
    }

    /// Append entries to their queues.
    pub fn push_entries(&self, entries: Vec<ScriptEntry>) -> Result<()> {
        self.append_script(Script::from_entries(entries))
    }

    /// Entries not yet served, per queue.
    pub fn pending(&self) -> BTreeMap<String, usize> {
        lock(&self.shared.queues).pending_counts()
    }

    /// Stop accepting, let in-flight answers finish for up to 1 s, then stop hard.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn record(
    shared: &Arc<Shared>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> (u64, Value, bool) {
    let seq = shared.seq.fetch_add(1, Ordering::SeqCst) + 1;
    let mut hdrs = BTreeMap::new();
    let mut auth = false;
    for (name, value) in headers {
        let n = name.as_str().to_ascii_lowercase();
        if CREDENTIAL_HEADERS.contains(&n.as_str()) {
            auth = true;
            continue;
        }
        hdrs.insert(n, String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    let (value, is_json) = match serde_json::from_slice::<Value>(body) {
        Ok(v) => (v, true),
        Err(_) if body.is_empty() => (Value::Null, false),
        Err(_) => (
            Value::String(String::from_utf8_lossy(body).into_owned()),
            false,
        ),
    };
    let rec = RecordedRequest {
        seq,
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string()),
        headers: hdrs,
        authorization_present: auth,
        body: value.clone(),
        body_is_json: is_json,
        queue: None,
        answered_by: None,
        response_status: 0,
        outcome: "pending".into(),
        error: None,
        received_at_ms: shared.started.elapsed().as_millis() as u64,
    };
    lock(&shared.requests).push(rec);
    (seq, value, is_json)
}

fn auth_ok(shared: &Shared, headers: &HeaderMap) -> bool {
    let Some(key) = &shared.config.require_api_key else {
        return true;
    };
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|v| v.trim() == key)
}

/// Answer with a server-side error (recorded as such).
fn server_error(
    shared: &Arc<Shared>,
    guard: OutcomeGuard,
    status: StatusCode,
    code: &str,
    message: String,
) -> Response {
    tracing::warn!("scripted model request #{}: {message}", guard.seq);
    shared.update(guard.seq, |r| {
        r.answered_by = Some("error".into());
        r.response_status = status.as_u16();
        r.error = Some(message.clone());
    });
    guard.done("completed");
    json_response(
        status,
        &openai::error_body(status.as_u16(), &message, Some(code)),
    )
}
