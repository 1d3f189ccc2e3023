//! The web server against a fake console: token, Host and Origin checks, commands, errors,
//! pictures, files and the WebSocket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use phoneagent_web::{Backend, BackendError, BackendEvent, MirrorSink, Picture, Token, WebOptions};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tower::ServiceExt;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

struct Fake {
    events: broadcast::Sender<BackendEvent>,
    calls: Mutex<Vec<(String, Value)>>,
    mirror: Mutex<Option<MirrorSink>>,
}

#[async_trait::async_trait]
impl Backend for Fake {
    async fn dispatch(&self, cmd: &str, args: Value) -> Result<Value, BackendError> {
        self.calls.lock().unwrap().push((cmd.into(), args.clone()));
        match cmd {
            "list_runs" => Ok(json!([{"id": "r1"}])),
            "answer_request" => Err(BackendError::new(
                "unknown_request",
                "this request was already answered",
            )),
            "select_device" if args.get("serial").is_none() => {
                Err(BackendError::new("invalid_input", "missing serial"))
            }
            "select_device" => Ok(json!({"serial": args["serial"]})),
            _ => Err(BackendError::new(
                "unknown_command",
                format!("no command {cmd}"),
            )),
        }
    }
    fn subscribe(&self) -> broadcast::Receiver<BackendEvent> {
        self.events.subscribe()
    }
    async fn start_mirror(&self, send: MirrorSink) -> Result<(), BackendError> {
        *self.mirror.lock().unwrap() = Some(send);
        Ok(())
    }
    fn stop_mirror(&self) {
        self.mirror.lock().unwrap().take();
    }
    async fn picture(&self, path: &str) -> Picture {
        if path == "thumb/".to_string() + &"a".repeat(64) {
            Picture {
                status: 200,
                content_type: Some("image/jpeg".into()),
                bytes: vec![0xff, 0xd8],
            }
        } else {
            Picture {
                status: 404,
                content_type: None,
                bytes: b"not found".to_vec(),
            }
        }
    }
}

fn fake() -> Arc<Fake> {
    Arc::new(Fake {
        events: broadcast::channel(16).0,
        calls: Mutex::new(vec![]),
        mirror: Mutex::new(None),
    })
}

struct Setup {
    router: axum::Router,
    fake: Arc<Fake>,
    _ui: tempfile::TempDir,
}

fn setup_at(addr: &str) -> Setup {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(
        ui.path().join("index.html"),
        "<!doctype html><title>PA</title>",
    )
    .unwrap();
    std::fs::create_dir(ui.path().join("assets")).unwrap();
    std::fs::write(ui.path().join("assets/app-1.js"), "console.log(1)").unwrap();
    let fake = fake();
    let router = phoneagent_web::router(
        fake.clone(),
        WebOptions {
            ui_dir: ui.path().to_path_buf(),
            token: Token::from_string(TOKEN),
        },
        addr.parse::<SocketAddr>().unwrap(),
    );
    Setup {
        router,
        fake,
        _ui: ui,
    }
}

fn setup() -> Setup {
    setup_at("127.0.0.1:4000")
}

async fn send(
    router: &axum::Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let r = router.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    (status, headers, body.to_vec())
}

fn post(path: &str) -> axum::http::request::Builder {
    Request::post(path)
        .header(header::HOST, "127.0.0.1:4000")
        .header(header::CONTENT_TYPE, "application/json")
}

fn json_of(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

#[tokio::test]
async fn every_request_without_the_token_is_refused() {
    let s = setup();
    for (path, method) in [
        ("/api/call/list_runs", "POST"),
        ("/", "GET"),
        ("/index.html", "GET"),
        ("/assets/app-1.js", "GET"),
        (&*format!("/pa/thumb/{}", "a".repeat(64)), "GET"),
        ("/api/ws", "GET"),
    ] {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1:4000")
            .body(Body::empty())
            .unwrap();
        let (status, headers, body) = send(&s.router, req).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
        assert_eq!(json_of(&body)["code"], "unauthorized");
        assert!(
            json_of(&body)["message"]
                .as_str()
                .unwrap()
                .contains("token")
        );
        assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
    }
    // A wrong token (same length, one digit off) is refused too.
    let wrong = format!("{}0", &TOKEN[..63]);
    let req = post("/api/call/list_runs")
        .header(header::AUTHORIZATION, format!("Bearer {wrong}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::UNAUTHORIZED);
    assert!(
        s.fake.calls.lock().unwrap().is_empty(),
        "no call reached the console"
    );
}

#[tokio::test]
async fn api_calls_take_the_token_as_bearer_only() {
    let s = setup();
    let ok = post("/api/call/list_runs")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from("{}"))
        .unwrap();
    let (status, headers, body) = send(&s.router, ok).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body), json!([{"id": "r1"}]));
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    // The page's cookie or a ?token= does not authorize a command (CSRF: a cookie is sent by
    // the browser on its own).
    let by_cookie = post("/api/call/list_runs")
        .header(header::COOKIE, format!("pa_token_4000={TOKEN}"))
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(send(&s.router, by_cookie).await.0, StatusCode::UNAUTHORIZED);
    let by_query = post(&format!("/api/call/list_runs?token={TOKEN}"))
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(send(&s.router, by_query).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_page_sets_a_strict_cookie_its_files_and_pictures_use() {
    let s = setup();
    let req = Request::get(format!("/?token={TOKEN}"))
        .header(header::HOST, "localhost:4000")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = send(&s.router, req).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("<title>PA</title>"));
    let cookie = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.starts_with(&format!("pa_token_4000={TOKEN};")),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("ws://localhost:4000"),
        "{csp}"
    );
    assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    for path in [
        "/assets/app-1.js".to_string(),
        format!("/pa/thumb/{}", "a".repeat(64)),
    ] {
        let req = Request::get(&path)
            .header(header::HOST, "127.0.0.1:4000")
            .header(header::COOKIE, format!("other=1; pa_token_4000={TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let (status, headers, _) = send(&s.router, req).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(headers.get(header::SET_COOKIE).is_none());
        assert!(
            headers[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("immutable")
        );
    }
    // An unknown picture is a 404; a path outside the UI is refused.
    let req = Request::get(format!("/pa/shot/zz?token={TOKEN}"))
        .header(header::HOST, "127.0.0.1:4000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::NOT_FOUND);
    let req = Request::get(format!("/assets/../../etc/passwd?token={TOKEN}"))
        .header(header::HOST, "127.0.0.1:4000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::NOT_FOUND);
    // Percent-encoded dots are not decoded into a path: a name that does not exist (the page).
    let req = Request::get(format!("/assets/%2e%2e/%2e%2e/etc/passwd?token={TOKEN}"))
        .header(header::HOST, "127.0.0.1:4000")
        .body(Body::empty())
        .unwrap();
    let (_, _, body) = send(&s.router, req).await;
    assert!(!String::from_utf8_lossy(&body).contains("root:"));
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_on_loopback() {
    let s = setup();
    // DNS rebinding: evil.example resolves to 127.0.0.1; the browser sends Host: evil.example.
    let req = Request::get(format!("/?token={TOKEN}"))
        .header(header::HOST, "evil.example:4000")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&s.router, req).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(json_of(&body)["code"], "forbidden_host");
    // Another port of loopback is another origin.
    let req = post("/api/call/list_runs")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::ORIGIN, "http://127.0.0.1:5173")
        .body(Body::from("{}"))
        .unwrap();
    let (status, _, body) = send(&s.router, req).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(json_of(&body)["code"], "forbidden_origin");
    // The page's own origin passes.
    let req = post("/api/call/list_runs")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::ORIGIN, "http://127.0.0.1:4000")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_exposed_server_takes_any_host_but_still_the_token() {
    let s = setup_at("0.0.0.0:4000");
    let req = Request::get(format!("/?token={TOKEN}"))
        .header(header::HOST, "192.168.1.20:4000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::OK);
    let req = Request::get("/")
        .header(header::HOST, "192.168.1.20:4000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn bad_commands_and_bad_args_are_json_errors() {
    let s = setup();
    let call = |path: &str, body: &'static str| {
        post(path)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::from(body))
            .unwrap()
    };
    let (status, _, body) = send(&s.router, call("/api/call/no_such_command", "{}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["code"], "unknown_command");
    let (status, _, body) = send(&s.router, call("/api/call/Drop%20Table", "{}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["code"], "unknown_command");
    let (status, _, body) = send(&s.router, call("/api/call/select_device", "{not json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&body)["code"], "invalid_input");
    let (status, _, body) = send(&s.router, call("/api/call/select_device", "[1]")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&body)["code"], "invalid_input");
    let (status, _, body) = send(&s.router, call("/api/call/select_device", "{}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&body)["message"], "missing serial");
    let (status, _, body) = send(&s.router, call("/api/call/answer_request", "{}")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(json_of(&body)["code"], "unknown_request");
    let (status, _, body) = send(
        &s.router,
        call(
            "/api/call/select_device",
            r#"{"adbAddr":"a","serial":"s1"}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body), json!({"serial": "s1"}));
    // Args reach the console as sent (camelCase), and a GET of a command is not a call.
    assert_eq!(
        s.fake.calls.lock().unwrap().last().unwrap().1,
        json!({"adbAddr": "a", "serial": "s1"})
    );
    let req = Request::get("/api/call/list_runs")
        .header(header::HOST, "127.0.0.1:4000")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&s.router, req).await.0, StatusCode::METHOD_NOT_ALLOWED);
}

async fn serve(
    fake: Arc<Fake>,
) -> (
    SocketAddr,
    tokio_util::sync::CancellationToken,
    tempfile::TempDir,
) {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<html>").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = phoneagent_web::router(
        fake,
        WebOptions {
            ui_dir: ui.path().to_path_buf(),
            token: Token::from_string(TOKEN),
        },
        addr,
    );
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(phoneagent_web::serve(listener, router, stop.clone()));
    (addr, stop, ui)
}

#[tokio::test]
async fn the_websocket_needs_the_token_and_carries_events_and_mirror_frames() {
    use tokio_tungstenite::tungstenite;
    let fake = fake();
    let (addr, stop, _ui) = serve(fake.clone()).await;

    // Refused before the upgrade without the token, with a wrong one, from another site.
    for url in [
        format!("ws://{addr}/api/ws"),
        format!("ws://{addr}/api/ws?token={}", "f".repeat(64)),
    ] {
        match tokio_tungstenite::connect_async(&url).await {
            Err(tungstenite::Error::Http(r)) => assert_eq!(r.status(), 401, "{url}"),
            other => panic!("{url}: not refused: {:?}", other.map(|_| ())),
        }
    }
    let mut foreign = tungstenite::client::IntoClientRequest::into_client_request(format!(
        "ws://{addr}/api/ws?token={TOKEN}"
    ))
    .unwrap();
    foreign
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    match tokio_tungstenite::connect_async(foreign).await {
        Err(tungstenite::Error::Http(r)) => assert_eq!(r.status(), 403),
        other => panic!("a foreign origin was not refused: {:?}", other.map(|_| ())),
    }

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/ws?token={TOKEN}"))
        .await
        .unwrap();
    assert_eq!(next(&mut ws).await, json!({"type": "ready"}));
    fake.events
        .send(BackendEvent {
            name: "agent-event".into(),
            payload: json!({"seq": 1}),
        })
        .unwrap();
    assert_eq!(
        next(&mut ws).await,
        json!({"type": "event", "name": "agent-event", "payload": {"seq": 1}})
    );

    // mirror_start over HTTP: the console's mirror sends into every open WebSocket.
    let r = raw_post(addr, "/api/call/mirror_start", "{}").await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let sent = (fake.mirror.lock().unwrap().as_ref().unwrap())(json!({"type": "frame", "seq": 7}));
    assert!(sent, "a page listens");
    assert_eq!(
        next(&mut ws).await,
        json!({"type": "mirror", "message": {"type": "frame", "seq": 7}})
    );
    let r = raw_post(addr, "/api/call/mirror_stop", "{}").await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(fake.mirror.lock().unwrap().is_none());
    stop.cancel();
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> Value {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        if let Message::Text(t) = ws.next().await.unwrap().unwrap() {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

async fn raw_post(addr: SocketAddr, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}
