//! `phoneagent web` (SPEC C3, issue #13 item 3): the desktop app's UI and session API in a
//! browser. The console (crate `phoneagent-console`, the desktop app's Tauri-free backend) is
//! opened on the app's data directory, so the browser sees the same settings, keys (OS keyring)
//! and history as the app; `phoneagent-web` serves it over HTTP and a WebSocket on loopback,
//! behind a random per-start token printed once, in the URL.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use phoneagent_console::Console;
use phoneagent_web::{Backend, BackendError, BackendEvent, MirrorSink, Picture, Token};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::Global;

/// `phoneagent web`
#[derive(Debug, clap::Args)]
pub struct WebArgs {
    /// Serve on ADDR (an IP, or IP:PORT) instead of 127.0.0.1 — e.g. 0.0.0.0 for every network
    /// interface. Anything but a loopback address exposes the console to the network (a warning
    /// says what); the token is still required.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Port (default: a free one, chosen at start; a port in --listen wins).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Open the URL in the default browser.
    #[arg(long)]
    pub open: bool,
    /// The built UI, a directory with index.html (default: $PHONEAGENT_UI_DIR, the installed
    /// share/phoneagent/ui, else this source tree's ui/dist).
    #[arg(long, value_name = "DIR")]
    pub ui_dir: Option<PathBuf>,
    /// Start the built-in virtual phone at once and select it (the app's "Start virtual
    /// phone"; its port: PHONEAGENT_APP_SIM_PORT, default a free one).
    #[arg(long)]
    pub virtual_phone: bool,
}

/// The address to bind: `--listen` (IP or IP:PORT) with `--port`, default 127.0.0.1.
fn bind_addr(listen: Option<&str>, port: Option<u16>) -> anyhow::Result<SocketAddr> {
    let Some(l) = listen.map(str::trim) else {
        return Ok(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            port.unwrap_or(0),
        ));
    };
    if let Ok(a) = l.parse::<SocketAddr>() {
        return Ok(a);
    }
    let ip = l.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = ip.parse().map_err(|_| {
        anyhow::anyhow!(
            "--listen {l:?} is not an address: give an IP (0.0.0.0, 192.168.1.20, ::) or IP:PORT"
        )
    })?;
    Ok(SocketAddr::new(ip, port.unwrap_or(0)))
}

/// What `--listen` on a non-loopback address exposes (printed before the URL).
fn exposure_warning(addr: &SocketAddr) -> String {
    format!(
        "warning: --listen {addr} exposes this PhoneAgent console to every device that can reach this \
         computer on that address. Whoever has the URL's token can watch your phone's screen \
         live, start tasks on it, answer the safety gate's approvals of irreversible actions \
         (orders, payments, messages, deletions), take over the phone, read the history of every past run with its \
         screenshots, change settings and store or delete API keys. The connection is plain HTTP, \
         not encrypted: others on the network can read the token and the screens. Use it only on a \
         network you trust, and stop it (Ctrl-C) when done."
    )
}

/// The console as the web server's backend.
struct ConsoleBackend {
    console: Arc<Console>,
    events: broadcast::Sender<BackendEvent>,
}

impl ConsoleBackend {
    /// Wraps `console`; its events are re-sent to the web server's subscribers until `stop`.
    fn new(console: Arc<Console>, stop: CancellationToken) -> Self {
        let (events, _) = broadcast::channel(phoneagent_console::events::CONSOLE_EVENT_CAPACITY);
        let mut rx = console.subscribe();
        let tx = events.clone();
        tokio::spawn(async move {
            loop {
                let e = tokio::select! {
                    _ = stop.cancelled() => break,
                    e = rx.recv() => e,
                };
                match e {
                    Ok(e) => {
                        let _ = tx.send(BackendEvent {
                            name: e.name,
                            payload: e.payload,
                        });
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(
                            missed = n,
                            "the web server fell behind the console's events"
                        );
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        Self { console, events }
    }
}

fn backend_error(e: phoneagent_console::AppError) -> BackendError {
    BackendError {
        code: e.code,
        message: e.message,
    }
}

#[async_trait::async_trait]
impl Backend for ConsoleBackend {
    async fn dispatch(&self, cmd: &str, args: Value) -> Result<Value, BackendError> {
        if !phoneagent_console::COMMANDS.contains(&cmd) {
            return Err(BackendError::new(
                "unknown_command",
                format!("no command `{cmd}` (see ui/src/lib/api.ts for the commands the UI sends)"),
            ));
        }
        self.console
            .dispatch(cmd, args)
            .await
            .map_err(backend_error)
    }

    fn subscribe(&self) -> broadcast::Receiver<BackendEvent> {
        self.events.subscribe()
    }

    async fn start_mirror(&self, send: MirrorSink) -> Result<(), BackendError> {
        self.console
            .start_mirror(move |m| match serde_json::to_value(&m) {
                Ok(v) => send(v),
                Err(_) => true,
            })
            .await
            .map_err(backend_error)
    }

    fn stop_mirror(&self) {
        self.console.stop_mirror();
    }

    async fn picture(&self, path: &str) -> Picture {
        let console = self.console.clone();
        let path = path.to_string();
        // Decoding and scaling a stored screenshot takes tens of ms: not on the async threads.
        match tokio::task::spawn_blocking(move || console.picture(&path)).await {
            Ok(p) => Picture {
                status: p.status,
                content_type: Some(p.content_type),
                bytes: p.bytes,
            },
            Err(_) => Picture {
                status: 500,
                content_type: None,
                bytes: vec![],
            },
        }
    }
}

/// Open `url` in the default browser (best effort; says so when it cannot).
fn open_browser(url: &str) {
    #[cfg(target_os = "macos")]
    let cmd = ("open", vec![url]);
    #[cfg(target_os = "windows")]
    let cmd = ("cmd", vec!["/c", "start", "", url]);
    #[cfg(not(any(target_os = "macos", target_os = "windows")))]
    let cmd = ("xdg-open", vec![url]);
    let spawned = std::process::Command::new(cmd.0)
        .args(&cmd.1)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        super::out::note(&format!(
            "could not start {} to open a browser: open the URL above yourself",
            cmd.0
        ));
    }
}

/// `phoneagent web`: serve until Ctrl-C (or SIGTERM); a task still running is stopped first.
pub async fn web(_g: &Global, a: WebArgs) -> anyhow::Result<u8> {
    let ui_dir = phoneagent_web::find_ui_dir(a.ui_dir.as_deref())?;
    let addr = bind_addr(a.listen.as_deref(), a.port)?;
    let db_path = phoneagent_store::default_db_path().context("cannot find the data directory")?;
    let console = Console::open(
        db_path.clone(),
        phoneagent_console::console::default_export_dir(&db_path),
    )
    .map_err(|e| anyhow::anyhow!("cannot open the data store: {}", e.message))?;
    // The virtual phone in its own process (this binary again: `main` serves it first thing).
    if let Ok(p) = phoneagent_console::virtual_phone::VirtualPhoneProcess::this_binary() {
        console.set_virtual_phone_process(p);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let token = Token::generate()?;
    let stop = CancellationToken::new();
    let backend = Arc::new(ConsoleBackend::new(console.clone(), stop.clone()));
    let router = phoneagent_web::router(
        backend,
        phoneagent_web::WebOptions {
            ui_dir,
            token: token.clone(),
        },
        local,
    );
    if a.virtual_phone {
        match console
            .dispatch("start_virtual_phone", Value::Object(Default::default()))
            .await
        {
            Ok(v) => super::out::note(&format!(
                "virtual phone: {} (selected)",
                v.get("serial")
                    .and_then(Value::as_str)
                    .unwrap_or("virtual-phone-1")
            )),
            Err(e) => {
                super::out::note(&format!("could not start the virtual phone: {}", e.message))
            }
        }
    }
    let exposed = phoneagent_web::exposure_of(&local) == phoneagent_web::Exposure::Network;
    if exposed {
        super::out::note(&exposure_warning(&local));
    }
    // The URL a browser on this computer opens; with an unspecified address (0.0.0.0, ::) that
    // is loopback.
    let shown = if local.ip().is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), local.port())
    } else {
        local
    };
    let url = format!("http://{shown}/?token={}", token.expose());
    outln!(
        "PhoneAgent web console — open this URL (only it works: every request without its token is refused):"
    );
    outln!("  {url}");
    if exposed && local.ip().is_unspecified() {
        outln!(
            "  (from another device: the same URL with this computer's network address instead of {})",
            shown.ip()
        );
    }
    outln!(
        "data: {}   Ctrl-C stops the server.",
        phoneagent_protocol::text::inert_line(&db_path.display().to_string())
    );
    if a.open {
        open_browser(&url);
    }
    let server = tokio::spawn(phoneagent_web::serve(listener, router, stop.clone()));
    let signal = super::out::stop_signal().await;
    super::out::note(&format!("{signal}: stopping"));
    // A task still running is cancelled the normal way (no further device command; the phone's
    // keyboard restored), and given a moment to record its end.
    if console.dispatch("stop_run", Value::Null).await.is_ok() {
        for _ in 0..50 {
            if matches!(
                console.dispatch("active_run", Value::Null).await,
                Ok(Value::Null)
            ) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    console.stop_mirror();
    stop.cancel();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), server).await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            bind_addr(None, None).unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            bind_addr(None, Some(8080)).unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            bind_addr(Some("0.0.0.0"), Some(9000)).unwrap(),
            "0.0.0.0:9000".parse().unwrap()
        );
        assert_eq!(
            bind_addr(Some("192.168.1.20:7000"), Some(9000)).unwrap(),
            "192.168.1.20:7000".parse().unwrap()
        );
        assert_eq!(
            bind_addr(Some("[::]"), None).unwrap(),
            "[::]:0".parse().unwrap()
        );
        assert!(bind_addr(Some("my-laptop"), None).is_err());
    }

    #[test]
    fn the_warning_says_what_is_exposed() {
        let w = exposure_warning(&"0.0.0.0:8080".parse().unwrap());
        for what in [
            "approvals",
            "screen",
            "API keys",
            "not encrypted",
            "history",
            "token",
        ] {
            assert!(
                w.contains(what) || w.contains(&what.to_lowercase()),
                "{what}: {w}"
            );
        }
    }
}
