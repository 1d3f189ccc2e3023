//! # phoneagent-web
//!
//! `phoneagent web` (SPEC C3, issue #13 item 3): the desktop app's Svelte UI (`ui/dist`) and the
//! same session API over HTTP and one WebSocket, so every view works in a browser — watch a run
//! live, answer approvals, see history. Nothing here decides anything: every call goes to a
//! [`Backend`] (the desktop app's Tauri-free console), the same code and the same validation the
//! desktop app's commands use.
//!
//! Routes (see docs/protocol.md "The web transport"):
//! * `POST /api/call/<command>` — a console command by its Tauri name with its camelCase JSON
//!   args; the result as JSON, or `{code, message}` with a 4xx/5xx status.
//! * `GET /api/ws?token=…` — one WebSocket per page: `{"type":"ready"}` once subscribed, then
//!   `{"type":"event","name":…,"payload":…}` (what the desktop UI `listen`s to) and
//!   `{"type":"mirror","message":…}` (the mirror's `MirrorMessage`s).
//! * `GET /pa/<path>` — pictures (`mirror/<seq>`, `thumb/<sha>`, `view/<sha>`, `shot/<sha>`).
//! * everything else — the built UI's files (`index.html` for an unknown path).
//!
//! Security ([`guard`]): a random per-start [`Token`] is required on every request (HTTP 401
//! with a JSON message, a WebSocket is refused before the upgrade) and compared in constant
//! time. API calls take it only as `Authorization: Bearer` (so a cookie alone can never start
//! a task or answer an approval); the WebSocket as `?token=`; the page, its files and pictures
//! also as `?token=` or the `HttpOnly`, `SameSite=Strict` cookie the page load sets (an `<img>`
//! or a `<script>` cannot send a header). On the loopback default the `Host` header must name
//! the loopback address and port (against DNS rebinding); an `Origin` header, when sent, must
//! be the page's own origin (against cross-site requests). Responses forbid framing
//! (clickjacking an Approve button), referrers (the token in a URL) and MIME sniffing.

#![forbid(unsafe_code)]

mod files;
mod guard;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use files::{UiDirError, find_ui_dir};
pub use guard::Token;

/// An error of a console command, as the UI sees it: `{code, message}` (the desktop app's
/// `AppError`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct BackendError {
    /// Stable snake_case code the UI may match on (`busy`, `invalid_input`, `unknown_command`…).
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl BackendError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

/// Something the UI listens to (`agent-event`, `run-ended`, …), with its JSON payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendEvent {
    /// The event name the desktop UI passes to `listen`.
    pub name: String,
    /// Its payload.
    pub payload: Value,
}

/// A picture answered for `GET /pa/<path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// HTTP status (200, 404).
    pub status: u16,
    /// Content type of `bytes` (`image/jpeg`, `image/png`), when found.
    pub content_type: Option<String>,
    /// The picture.
    pub bytes: Vec<u8>,
}

/// Receives the mirror's messages (JSON of `MirrorMessage`); returns `false` when nobody listens
/// any more (the mirror then stops).
pub type MirrorSink = Box<dyn Fn(Value) -> bool + Send + Sync + 'static>;

/// What `phoneagent web` serves: the desktop app's console (crate `phoneagent-console`), or a
/// fake in tests.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Run command `cmd` (a Tauri command name) with its camelCase JSON `args`.
    async fn dispatch(&self, cmd: &str, args: Value) -> Result<Value, BackendError>;
    /// Every event the UI listens to, from now on.
    fn subscribe(&self) -> broadcast::Receiver<BackendEvent>;
    /// Start mirroring the selected phone into `send` (replacing a mirror already going).
    async fn start_mirror(&self, send: MirrorSink) -> Result<(), BackendError>;
    /// Stop the mirror.
    fn stop_mirror(&self);
    /// The picture at `path` (`mirror/<seq>`, `thumb/<sha>`, `view/<sha>`, `shot/<sha>`).
    async fn picture(&self, path: &str) -> Picture;
}

/// Who may reach the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposure {
    /// Loopback only (the default): the `Host` header must name the loopback address.
    Loopback,
    /// Explicitly exposed with `--listen` on another address: any `Host`, the token still
    /// required.
    Network,
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// The built UI (`ui/dist`, with its `index.html`).
    pub ui_dir: PathBuf,
    /// The per-start token.
    pub token: Token,
}

pub(crate) struct Ctx {
    pub backend: Arc<dyn Backend>,
    pub token: Token,
    pub ui_dir: PathBuf,
    /// `None`: any Host (exposed with `--listen`); else the Host values accepted.
    pub allowed_hosts: Option<Vec<String>>,
    pub cookie_name: String,
    pub mirror: broadcast::Sender<Value>,
}

/// The exposure `addr` calls for: loopback addresses keep the `Host` check.
pub fn exposure_of(addr: &SocketAddr) -> Exposure {
    if addr.ip().is_loopback() {
        Exposure::Loopback
    } else {
        Exposure::Network
    }
}

/// The router of a server bound at `local` (its real port: the `Host` check and the cookie name
/// use it).
pub fn router(backend: Arc<dyn Backend>, opts: WebOptions, local: SocketAddr) -> Router {
    let port = local.port();
    let allowed_hosts = match exposure_of(&local) {
        Exposure::Loopback => Some(vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]),
        Exposure::Network => None,
    };
    let (mirror, _) = broadcast::channel(64);
    let ctx = Arc::new(Ctx {
        backend,
        token: opts.token,
        ui_dir: opts.ui_dir,
        allowed_hosts,
        cookie_name: format!("pa_token_{port}"),
        mirror,
    });
    Router::new()
        .route("/api/call/{cmd}", post(call))
        .route("/api/ws", get(ws::upgrade))
        .route("/pa/{*path}", get(picture))
        .fallback(files::serve)
        .layer(axum::middleware::from_fn_with_state(
            ctx.clone(),
            guard::guard,
        ))
        .with_state(ctx)
}

/// Serve `router` on `listener` until `shutdown` fires.
///
/// # Errors
/// The listener failed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

/// The HTTP status of a command error.
fn status_of(code: &str) -> StatusCode {
    match code {
        "unknown_command" | "not_found" => StatusCode::NOT_FOUND,
        "invalid_input" | "bad_request" => StatusCode::BAD_REQUEST,
        "internal" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::CONFLICT,
    }
}

/// A JSON error response.
pub(crate) fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    let mut r = (
        status,
        axum::Json(BackendError::new(code, message.to_string())),
    )
        .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn valid_command(cmd: &str) -> bool {
    !cmd.is_empty() && cmd.len() <= 64 && cmd.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

async fn call(State(ctx): State<Arc<Ctx>>, Path(cmd): Path<String>, body: Bytes) -> Response {
    if !valid_command(&cmd) {
        return error_response(
            StatusCode::NOT_FOUND,
            "unknown_command",
            "no such command: command names are lowercase words joined by _ (see ui/src/lib/api.ts)",
        );
    }
    let args: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        match serde_json::from_slice(&body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_input",
                    "the arguments must be a JSON object",
                );
            }
            Err(e) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_input",
                    &format!("the arguments are not JSON: {e}"),
                );
            }
        }
    };
    let result = match cmd.as_str() {
        // The desktop app hands its mirror a Tauri channel; here the frames go to every open
        // WebSocket. The mirror stops when no page listens any more.
        "mirror_start" => {
            let tx = ctx.mirror.clone();
            let sink: MirrorSink = Box::new(move |m| tx.send(m).is_ok());
            ctx.backend.start_mirror(sink).await.map(|()| Value::Null)
        }
        "mirror_stop" => {
            ctx.backend.stop_mirror();
            Ok(Value::Null)
        }
        _ => ctx.backend.dispatch(&cmd, args).await,
    };
    tracing::debug!(cmd = %cmd, ok = result.is_ok(), "web call");
    match result {
        Ok(v) => {
            let mut r = axum::Json(v).into_response();
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(e) => error_response(status_of(&e.code), &e.code, &e.message),
    }
}

async fn picture(State(ctx): State<Arc<Ctx>>, Path(path): Path<String>) -> Response {
    let p = ctx.backend.picture(&path).await;
    let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (status, p.bytes).into_response();
    let h = r.headers_mut();
    if let Some(ct) = p.content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::CONTENT_TYPE, ct);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if path.starts_with("mirror/") || !status.is_success() {
            "no-store"
        } else {
            // Content-addressed: a hash never changes its picture.
            "private, max-age=31536000, immutable"
        }),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_are_checked() {
        assert!(valid_command("answer_request"));
        assert!(!valid_command(""));
        assert!(!valid_command("../x"));
        assert!(!valid_command("Answer"));
        assert!(!valid_command(&"a".repeat(65)));
    }

    #[test]
    fn error_codes_map_to_statuses() {
        assert_eq!(status_of("unknown_command"), StatusCode::NOT_FOUND);
        assert_eq!(status_of("invalid_input"), StatusCode::BAD_REQUEST);
        assert_eq!(status_of("busy"), StatusCode::CONFLICT);
        assert_eq!(status_of("internal"), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
