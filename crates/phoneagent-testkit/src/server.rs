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

async fn models(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let (seq, _, _) = record(&shared, &method, &uri, &headers, &Bytes::new());
    let guard = OutcomeGuard {
        shared: shared.clone(),
        seq,
        armed: true,
    };
    if !auth_ok(&shared, &headers) {
        return server_error(
            &shared,
            guard,
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect or missing API key (the scripted model was started with a required key)."
                .into(),
        );
    }
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(
            |m| json!({"id": m, "object": "model", "created": 0, "owned_by": "phoneagent-testkit"}),
        )
        .collect();
    shared.update(seq, |r| {
        r.answered_by = Some("control".into());
        r.response_status = 200;
    });
    guard.done("completed");
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

async fn fallback(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (seq, _, _) = record(&shared, &method, &uri, &headers, &body);
    let guard = OutcomeGuard {
        shared: shared.clone(),
        seq,
        armed: true,
    };
    server_error(
        &shared,
        guard,
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "Unknown path {method} {}: the scripted model serves POST /v1/chat/completions and GET /v1/models (base URL http://127.0.0.1:PORT/v1)",
            uri.path()
        ),
    )
}

async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    let reqs = lock(&shared.requests).clone();
    json_response(StatusCode::OK, &json!(reqs))
}

async fn clear_requests(State(shared): State<Arc<Shared>>) -> Response {
    lock(&shared.requests).clear();
    json_response(StatusCode::OK, &json!({"cleared": true}))
}

#[derive(Debug, Deserialize)]
struct ScriptQuery {
    mode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptUpdate {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    entries: Vec<ScriptEntry>,
    #[serde(default)]
    rules: Vec<script::QueueRule>,
    #[serde(default)]
    on_exhausted: Option<OnExhausted>,
}

async fn update_script(
    State(shared): State<Arc<Shared>>,
    Query(q): Query<ScriptQuery>,
    body: Bytes,
) -> Response {
    let text = String::from_utf8_lossy(&body);
    let structured = serde_json::from_str::<Value>(&text).ok().filter(|v| {
        v.as_object()
            .is_some_and(|o| o.contains_key("entries") || o.contains_key("mode"))
    });
    let (mode, script) = match structured {
        Some(v) => match serde_json::from_value::<ScriptUpdate>(v) {
            Ok(u) => {
                let mode = u.mode.or(q.mode);
                (
                    mode,
                    Script {
                        entries: u.entries,
                        rules: u.rules,
                        on_exhausted: u.on_exhausted.unwrap_or_default(),
                    },
                )
            }
            Err(e) => {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &openai::error_body(400, &format!("bad script update: {e}"), None),
                );
            }
        },
        None => match Script::parse_jsonl(&text) {
            Ok(s) => (q.mode, s),
            Err(e) => {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &openai::error_body(400, &e.to_string(), None),
                );
            }
        },
    };
    if let Err(e) = script.validate() {
        return json_response(
            StatusCode::BAD_REQUEST,
            &openai::error_body(400, &e.to_string(), None),
        );
    }
    let n = script.entries.len();
    let mode = mode.unwrap_or_else(|| "replace".into());
    let mut queues = lock(&shared.queues);
    match mode.as_str() {
        "replace" => queues.replace(script),
        "append" => queues.append(script),
        other => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &openai::error_body(
                    400,
                    &format!("unknown mode {other:?}: use replace or append"),
                    None,
                ),
            );
        }
    }
    json_response(
        StatusCode::OK,
        &json!({"mode": mode, "entries": n, "pending": queues.pending_counts()}),
    )
}

async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let pending = lock(&shared.queues).pending_counts();
    let n = lock(&shared.requests).len();
    json_response(
        StatusCode::OK,
        &json!({
            "status": "ok",
            "space": shared.config.space.as_str(),
            "oracle": shared.config.oracle.is_some(),
            "sim_port": shared.config.sim.as_ref().map(|s| s.port),
            "pending": pending,
            "requests": n,
        }),
    )
}

/// What the chat handler decided to send.
enum Plan {
    Error {
        status: u16,
        message: String,
        retry_after: Option<u64>,
        retry_after_ms: Option<u64>,
    },
    Answer {
        answer: Answer,
        entry: Box<ScriptEntry>,
    },
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (seq, req, is_json) = record(&shared, &method, &uri, &headers, &body);
    let guard = OutcomeGuard {
        shared: shared.clone(),
        seq,
        armed: true,
    };
    if !auth_ok(&shared, &headers) {
        return server_error(
            &shared,
            guard,
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect or missing API key (the scripted model was started with a required key)."
                .into(),
        );
    }
    if !is_json || req.get("messages").and_then(Value::as_array).is_none() {
        return server_error(
            &shared,
            guard,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "The request body must be a JSON chat-completions request with a `messages` array."
                .into(),
        );
    }
    let system = request::system_text(&req);
    let all = request::all_text(&req);
    let role_header = headers
        .get(script::ROLE_HEADER)
        .and_then(|v| v.to_str().ok());
    let routed = {
        let q = lock(&shared.queues);
        script::route(&q.rules, role_header, &system, &all)
    };
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let images = request::image_urls(&req);
    let model = req
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| shared.config.models.first().cloned())
        .unwrap_or_else(|| "scripted-model".into());
    let meta = Meta {
        id: format!("chatcmpl-scripted-{seq}"),
        model,
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };

    // Oracle first: a calibration probe is answered from the image.
    let mut decoded_image: Option<(u32, u32)> = None;
    if let (Some(cfg), Some(url)) = (shared.config.oracle, images.last()) {
        match oracle_answer(&shared, &req, url, &routed, &cfg, seq) {
            Ok((Some(answer), _)) => {
                shared.update(seq, |r| {
                    r.queue = Some(routed.clone());
                    r.answered_by = Some("oracle".into());
                    r.response_status = 200;
                });
                return respond_answer(
                    &shared,
                    guard,
                    &meta,
                    answer,
                    &ScriptEntry::default(),
                    stream,
                )
                .await;
            }
            Ok((None, size)) => decoded_image = Some(size),
            Err(e) if routed == "calibration" => {
                return server_error(
                    &shared,
                    guard,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "oracle_failed",
                    e.to_string(),
                );
            }
            Err(e) => tracing::debug!("oracle: request #{seq} is not a probe: {e}"),
        }
    }

    let queue = {
        let q = lock(&shared.queues);
        q.effective_queue(&routed)
    };
    shared.update(seq, |r| r.queue = Some(queue.clone()));
    let taken = lock(&shared.queues).take(&queue);
    let entry = match taken {
        Take::Entry(e) => *e,
        Take::Exhausted(msg) => {
            let msg = if shared.config.oracle.is_some() {
                format!(
                    "{msg}. (Oracle mode answers only coordinate probes: one saturated red disc on a plain background.)"
                )
            } else {
                msg
            };
            return server_error(
                &shared,
                guard,
                StatusCode::INTERNAL_SERVER_ERROR,
                "script_exhausted",
                msg,
            );
        }
    };
    let plan = match plan_entry(&shared, &req, &entry, &images, decoded_image, seq).await {
        Ok(p) => p,
        Err(e) => {
            return server_error(
                &shared,
                guard,
                StatusCode::INTERNAL_SERVER_ERROR,
                "placeholder_unresolved",
                e.to_string(),
            );
        }
    };
    match plan {
        Plan::Error {
            status,
            message,
            retry_after,
            retry_after_ms,
        } => {
            shared.update(seq, |r| {
                r.answered_by = Some("script".into());
                r.response_status = status;
            });
            if let Some(ms) = entry.delay_ms {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = json_response(code, &openai::error_body(status, &message, None));
            if let Some(s) = retry_after
                && let Ok(v) = HeaderValue::from_str(&s.to_string())
            {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            if let Some(ms) = retry_after_ms
                && let Ok(v) = HeaderValue::from_str(&ms.to_string())
            {
                resp.headers_mut().insert("retry-after-ms", v);
            }
            guard.done("completed");
            resp
        }
        Plan::Answer { answer, entry } => {
            shared.update(seq, |r| {
                r.answered_by = Some("script".into());
                r.response_status = 200;
            });
            respond_answer(&shared, guard, &meta, answer, &entry, stream).await
        }
    }
}

/// Try to answer as the oracle. `Ok((None, size))` = not a probe.
fn oracle_answer(
    shared: &Shared,
    req: &Value,
    url: &str,
    routed: &str,
    cfg: &OracleConfig,
    seq: u64,
) -> Result<(Option<Answer>, (u32, u32))> {
    let bytes = oracle::decode_data_url(url)?;
    let img = oracle::decode_image(&bytes)?;
    let size = img.dimensions();
    let forced = routed == "calibration";
    let Some(target) = oracle::find_target(&img) else {
        if forced {
            return Err(Error::Oracle(format!(
                "calibration request #{seq}: the image ({}x{}) has no saturated red target",
                size.0, size.1
            )));
        }
        return Ok((None, size));
    };
    if !target.is_probe(forced) {
        if forced {
            return Err(Error::Oracle(format!(
                "calibration request #{seq}: no single distinct red disc (largest red area {} px, second {} px)",
                target.area, target.second_area
            )));
        }
        return Ok((None, size));
    }
    let (x, y) = oracle::answer_point(&target, shared.config.space, cfg)?;
    let answer = match oracle::tap_form(req) {
        TapForm::DoText => Answer {
            content: Some(format!("do(action=\"Tap\", element=[{x},{y}])")),
            reasoning: None,
            tool_calls: vec![],
            finish_reason: "stop".into(),
            usage: None,
        },
        TapForm::Tool { name, shape } => Answer {
            content: None,
            reasoning: None,
            tool_calls: vec![(
                format!("call_{seq}_0"),
                name,
                oracle::tap_arguments(shape, x, y).to_string(),
            )],
            finish_reason: "tool_calls".into(),
            usage: None,
        },
    };
    let usage = estimated_usage(req, &answer);
    Ok((
        Some(Answer {
            usage: Some(usage),
            ..answer
        }),
        size,
    ))
}

fn estimated_usage(req: &Value, a: &Answer) -> Value {
    let prompt = openai::estimate_tokens(
        request::all_text(req).chars().count(),
        request::image_urls(req).len(),
    );
    let out_chars = a.content.as_deref().map_or(0, |s| s.chars().count())
        + a.reasoning.as_deref().map_or(0, |s| s.chars().count())
        + a.tool_calls
            .iter()
            .map(|(_, n, args)| n.len() + args.chars().count())
            .sum::<usize>();
    let completion = openai::estimate_tokens(out_chars, 0);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// Read the current screen's ground truth through `phoneagent_sim::client::fetch_state` (the
/// sim-only `host:sim-state` service), bounded to 5 s.
async fn fetch_truth(target: &SimTarget) -> Result<ScreenTruth> {
    let err = |message: String| Error::GroundTruth {
        port: target.port,
        message,
    };
    let gt = tokio::time::timeout(
        Duration::from_secs(5),
        phoneagent_sim::client::fetch_state(target.port, target.serial.as_deref()),
    )
    .await
    .map_err(|_| err("host:sim-state did not answer within 5 s".into()))?
    .map_err(|e| {
        err(format!(
            "cannot read the ground truth: {e} (is `phoneagent sim serve` running on this port?)"
        ))
    })?;
    let v = serde_json::to_value(&gt)
        .map_err(|e| err(format!("ground truth does not serialize: {e}")))?;
    ScreenTruth::from_ground_truth(&v, target.port)
}

async fn plan_entry(
    shared: &Shared,
    req: &Value,
    entry: &ScriptEntry,
    images: &[String],
    decoded_image: Option<(u32, u32)>,
    seq: u64,
) -> Result<Plan> {
    if let Some(status) = entry.status {
        return Ok(Plan::Error {
            status,
            message: entry
                .error_message
                .clone()
                .unwrap_or_else(|| openai::default_error_message(status)),
            retry_after: entry.retry_after,
            retry_after_ms: entry.retry_after_ms,
        });
    }
    let needs = entry.content.as_deref().is_some_and(has_placeholders)
        || entry
            .reasoning_content
            .as_deref()
            .is_some_and(has_placeholders)
        || entry
            .tool_calls
            .iter()
            .any(|t| has_placeholders(&t.arguments.to_string()));
    let space = match entry.space.as_deref() {
        Some("image_pixels") => CoordinateSpace::ImagePixels,
        Some(_) => CoordinateSpace::Relative0999,
        None => shared.config.space,
    };
    let mut truth = None;
    let mut image_size = decoded_image;
    if needs {
        if let Some(t) = &shared.config.sim {
            truth = Some(fetch_truth(t).await?);
        }
        if image_size.is_none()
            && let Some(url) = images.last()
        {
            image_size = Some(oracle::image_size(&oracle::decode_data_url(url)?)?);
        }
    }
    let ctx = ResolveContext {
        truth: truth.as_ref(),
        space,
        image_size,
    };
    let content = entry
        .content
        .as_deref()
        .map(|c| ctx.resolve_text(c))
        .transpose()?;
    let reasoning = entry
        .reasoning_content
        .as_deref()
        .map(|c| ctx.resolve_text(c))
        .transpose()?;
    let mut tool_calls = Vec::new();
    for (i, tc) in entry.tool_calls.iter().enumerate() {
        let args = match &tc.arguments {
            Value::String(s) => ctx.resolve_text(s)?,
            other => ctx.resolve_value(other)?.to_string(),
        };
        tool_calls.push((
            tc.id.clone().unwrap_or_else(|| format!("call_{seq}_{i}")),
            tc.name.clone(),
            args,
        ));
    }
    let finish_reason = entry.finish_reason.clone().unwrap_or_else(|| {
        if tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    let mut answer = Answer {
        content,
        reasoning,
        tool_calls,
        finish_reason,
        usage: None,
    };
    answer.usage = match &entry.usage {
        None => Some(estimated_usage(req, &answer)),
        Some(Value::Null) => None,
        Some(u) => Some(openai::complete_usage(u.clone())),
    };
    Ok(Plan::Answer {
        answer,
        entry: Box::new(entry.clone()),
    })
}

async fn respond_answer(
    shared: &Arc<Shared>,
    guard: OutcomeGuard,
    meta: &Meta,
    answer: Answer,
    entry: &ScriptEntry,
    stream: bool,
) -> Response {
    if let Some(ms) = entry.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if stream {
        return stream_response(shared, guard, meta, &answer, entry);
    }
    let body = if let Some(m) = &entry.malformed_body
        && entry.is_malformed()
    {
        match m {
            script::MalformedBody::Body(s) => s.clone(),
            script::MalformedBody::Flag(_) => openai::BROKEN_BODY.to_string(),
        }
    } else {
        let mut v = openai::completion(meta, &answer);
        openai::remove_paths(&mut v, &entry.missing_fields);
        v.to_string()
    };
    if entry.truncated {
        let full_len = body.len();
        let mut cut = full_len / 2;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        let half = Bytes::from(body.as_bytes()[..cut].to_vec());
        // Send the first half, give the socket time to flush it, then abort the connection.
        let parts = futures::stream::unfold(0u8, move |step| {
            let half = half.clone();
            async move {
                match step {
                    0 => Some((Ok(half), 1)),
                    1 => {
                        tokio::time::sleep(TRUNCATION_FLUSH).await;
                        Some((
                            Err(std::io::Error::new(
                                std::io::ErrorKind::ConnectionAborted,
                                "scripted truncation",
                            )),
                            2,
                        ))
                    }
                    _ => None,
                }
            }
        });
        guard.done("truncated");
        let mut resp = Response::new(Body::from_stream(parts));
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Ok(v) = HeaderValue::from_str(&full_len.to_string()) {
            h.insert(header::CONTENT_LENGTH, v);
        }
        return resp;
    }
    guard.done("completed");
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn stream_response(
    shared: &Arc<Shared>,
    guard: OutcomeGuard,
    meta: &Meta,
    answer: &Answer,
    entry: &ScriptEntry,
) -> Response {
    let chunks = openai::stream_chunks(meta, answer, shared.config.stream_chunk_chars);
    let mut lines: Vec<String> = chunks
        .into_iter()
        .map(|mut c| {
            openai::remove_paths(&mut c, &entry.missing_fields);
            format!("data: {c}\n\n")
        })
        .collect();
    if entry.is_malformed() {
        let broken = match &entry.malformed_body {
            Some(script::MalformedBody::Body(s)) => s.clone(),
            _ => r#"{"id":"chatcmpl-broken","choices":[{"delta":{"content":"do(act"#.to_string(),
        };
        let mid = lines.len() / 2;
        lines.insert(mid, format!("data: {broken}\n\n"));
    }
    let truncated = entry.truncated;
    if truncated {
        let keep = (lines.len() / 2).max(1);
        lines.truncate(keep);
    } else {
        lines.push("data: [DONE]\n\n".to_string());
    }
    let delay = entry.chunk_delay_ms.map(Duration::from_millis);
    struct St {
        lines: std::collections::VecDeque<String>,
        guard: Option<OutcomeGuard>,
        delay: Option<Duration>,
        truncated: bool,
        first: bool,
    }
    let st = St {
        lines: lines.into(),
        guard: Some(guard),
        delay,
        truncated,
        first: true,
    };
    let s = futures::stream::unfold(st, |mut st| async move {
        if let Some(line) = st.lines.pop_front() {
            if !st.first
                && let Some(d) = st.delay
            {
                tokio::time::sleep(d).await;
            }
            st.first = false;
            return Some((Ok::<Bytes, std::io::Error>(Bytes::from(line)), st));
        }
        let g = st.guard.take()?;
        if st.truncated {
            g.done("truncated");
            tokio::time::sleep(TRUNCATION_FLUSH).await;
            Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "scripted truncation",
                )),
                st,
            ))
        } else {
            g.done("completed");
            None
        }
    });
    let mut resp = Response::new(Body::from_stream(s));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}
