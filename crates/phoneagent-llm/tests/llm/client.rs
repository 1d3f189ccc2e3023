//! The chat client against HTTP servers on loopback: retries, Retry-After, timeouts,
//! cancellation, malformed bodies, streaming. Each test asserts the message the user sees.

use std::time::{Duration, Instant};

use phoneagent_llm::{
    ApiKey, ChatClient, ChatMessage, ChatRequest, ClientConfig, ContentPart, LlmError, ModelClient,
    RetryPolicy, ToolChoice, ToolSpec,
};
use phoneagent_protocol::ErrorCode;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-0123456789";

fn client(server: &MockServer, max_retries: u32) -> ChatClient {
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "test-model");
    cfg.retry = RetryPolicy {
        max_retries,
        base_delay_ms: 10,
        max_delay_ms: 50,
        max_retry_after_ms: 5_000,
    };
    cfg.timeout_ms = 5_000;
    ChatClient::new(cfg).unwrap()
}

fn ok_body(content: &str) -> Value {
    json!({
        "id": "x", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    })
}

fn req() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("hi")],
        ..Default::default()
    }
}

#[tokio::test]
async fn rate_limit_429_with_retry_after_seconds_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "1"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body("done")))
        .mount(&server)
        .await;
    let started = Instant::now();
    let resp = client(&server, 3)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "Retry-After: 1 was not honoured ({:?})",
        started.elapsed()
    );
    assert_eq!(resp.content, "done");
    assert_eq!(resp.attempts, 2);
    assert_eq!(resp.usage.unwrap().total(), 15);
    assert!(resp.latency_ms >= 1000);
}

#[tokio::test]
async fn rate_limit_429_with_http_date_retries() {
    let server = MockServer::start().await;
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", date.as_str()))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body("ok")))
        .mount(&server)
        .await;
    let resp = client(&server, 2)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.attempts, 2);
}

#[tokio::test]
async fn rate_limit_past_retry_budget_is_model_rate_limited() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0"))
        .mount(&server)
        .await;
    let err = client(&server, 2)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelRateLimited);
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "model endpoint {}/v1/chat/completions (model test-model) is rate limiting us (HTTP 429) after 3 attempt(s) (the server asked to wait 0 s more). Wait and retry later, lower the request rate, or raise the provider quota",
            server.uri()
        )
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retry_after_longer_than_the_maximum_fails_at_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "3600"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let err = client(&server, 3)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(err.code(), ErrorCode::ModelRateLimited);
    assert!(
        err.to_string()
            .contains("after 1 attempt(s) (the server asked to wait 3600 s more)"),
        "{err}"
    );
}

#[tokio::test]
async fn server_error_500_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body("recovered")))
        .mount(&server)
        .await;
    let resp = client(&server, 3)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.content, "recovered");
    assert_eq!(resp.attempts, 2);
}

#[tokio::test]
async fn persistent_500_names_endpoint_model_status_and_server_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_json(
            json!({"error": {"message": "CUDA out of memory", "type": "server_error"}}),
        ))
        .mount(&server)
        .await;
    let err = client(&server, 3)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelHttp);
    assert_eq!(
        err.to_string(),
        format!(
            "model endpoint {}/v1/chat/completions (model test-model) answered HTTP 500 after 4 attempt(s): CUDA out of memory. The server failed; try again later or check the server's logs",
            server.uri()
        )
    );
}

#[tokio::test]
async fn unauthorized_never_shows_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
        ))
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "test-model");
    cfg.api_key = Some(ApiKey::new(KEY));
    cfg.key_source = "keyring entry \"openai\"".into();
    let c = ChatClient::new(cfg).unwrap();
    let err = c.chat(req(), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelConfig);
    let msg = err.to_string();
    assert!(
        !msg.contains(KEY) && !format!("{err:?}").contains(KEY),
        "{msg}"
    );
    assert!(!format!("{c:?}").contains(KEY));
    assert!(
        msg.contains(
            "answered HTTP 401 after 1 attempt(s): Incorrect API key provided: [redacted]"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("rejected the credentials (keyring entry \"openai\")"),
        "{msg}"
    );
}

#[tokio::test]
async fn total_timeout_is_model_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(ok_body("late"))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "test-model");
    cfg.timeout_ms = 300;
    let started = Instant::now();
    let err = ChatClient::new(cfg)
        .unwrap()
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(err.code(), ErrorCode::ModelTimeout);
    assert_eq!(
        err.to_string(),
        format!(
            "model endpoint {}/v1/chat/completions (model test-model) timed out waiting for the answer after 300 ms. Raise timeout_ms in the profile or check the server load",
            server.uri()
        )
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_explained() {
    // A port nobody listens on: bind, read the port, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = ClientConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    cfg.retry = RetryPolicy {
        max_retries: 2,
        base_delay_ms: 5,
        max_delay_ms: 10,
        max_retry_after_ms: 1000,
    };
    let err = ChatClient::new(cfg)
        .unwrap()
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelHttp);
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "could not reach model endpoint http://127.0.0.1:{port}/v1/chat/completions (model m) after 3 attempt(s): "
        )),
        "{msg}"
    );
    assert!(
        msg.ends_with(
            "Check that the server is running and that base_url (including /v1) is right"
        ),
        "{msg}"
    );
}

#[tokio::test]
async fn cancel_mid_request_returns_promptly_and_drops_the_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<Duration>();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = Vec::new();
        // Read the request, never answer, and report when the client closes the socket.
        loop {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        assert!(String::from_utf8_lossy(&got).starts_with("POST /v1/chat/completions"));
        let _ = closed_tx.send(Duration::ZERO);
    });
    let c = ChatClient::new(ClientConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        "m",
    ))
    .unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = c.chat(req(), &cancel).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, LlmError::Cancelled { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert_eq!(
        err.to_string(),
        format!("model call to http://127.0.0.1:{port}/v1/chat/completions cancelled")
    );
    assert!(took < Duration::from_millis(1000), "cancel took {took:?}");
    tokio::time::timeout(Duration::from_secs(2), closed_rx)
        .await
        .expect("the server never saw the connection close")
        .unwrap();
}

#[tokio::test]
async fn cancel_during_backoff_is_prompt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("Retry-After", "4"))
        .mount(&server)
        .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = client(&server, 3).chat(req(), &cancel).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_json_body_is_a_clear_error_and_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/json")
                .set_body_string("{\"choices\": [{\"message\": {\"content\": \"do(act"),
        )
        .mount(&server)
        .await;
    let err = client(&server, 3)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelHttp);
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "model endpoint {}/v1/chat/completions (model test-model) sent a malformed response: invalid JSON at line 1 column 44: EOF while parsing a string. Check",
            server.uri()
        )),
        "{msg}"
    );
    assert!(
        msg.contains("Check that base_url points at an OpenAI-compatible /v1 API"),
        "{msg}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    // A JSON body without choices (an HTML proxy page would fail the same way).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"object": "list"})))
        .mount(&server)
        .await;
    let err = client(&server, 0)
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("sent a malformed response: no `choices` field"),
        "{err}"
    );
}

#[tokio::test]
async fn streaming_assembles_reasoning_content_tool_calls_and_usage() {
    let server = MockServer::start().await;
    let events = [
        json!({"model": "glm", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "The button "}}]}),
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "is top right."}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "<think>extra</think>Tapping "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "now."}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "tap", "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"element\": [81"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "2, 95]}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 1234, "completion_tokens": 56}}),
    ];
    let mut body = String::new();
    for e in &events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    body.push_str(": keep-alive\n\ndata: [DONE]\n\n");
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(body)
                .insert_header("content-type", "text/event-stream"),
        )
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "glm");
    cfg.stream = true;
    let c = ChatClient::new(cfg).unwrap();
    let request = ChatRequest {
        messages: vec![
            ChatMessage::system("You operate a phone."),
            ChatMessage::user_parts(vec![
                ContentPart::text("Open settings"),
                ContentPart::image("data:image/jpeg;base64,/9j/AA=="),
            ]),
        ],
        tools: vec![ToolSpec {
            name: "tap".into(),
            description: "Tap".into(),
            parameters: json!({"type": "object"}),
        }],
        tool_choice: Some(ToolChoice::Auto),
        temperature: Some(0.0),
        max_tokens: Some(512),
        stream: None,
    };
    let resp = c.chat(request, &CancellationToken::new()).await.unwrap();
    assert_eq!(resp.content, "Tapping now.");
    assert_eq!(
        resp.reasoning.as_deref(),
        Some("The button is top right.\n\nextra")
    );
    assert_eq!(resp.tool_calls.len(), 1);
    assert_eq!(resp.tool_calls[0].id, "call_1");
    assert_eq!(resp.tool_calls[0].name, "tap");
    assert_eq!(resp.tool_calls[0].arguments, "{\"element\": [812, 95]}");
    assert_eq!(resp.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(resp.usage.unwrap().prompt_tokens, 1234);
    assert_eq!(resp.model.as_deref(), Some("glm"));

    // What went over the wire.
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["model"], "glm");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(sent["messages"][1]["content"][1]["type"], "image_url");
    assert_eq!(
        sent["messages"][1]["content"][1]["image_url"]["url"],
        "data:image/jpeg;base64,/9j/AA=="
    );
    assert_eq!(sent["tools"][0]["type"], "function");
    assert_eq!(sent["tools"][0]["function"]["name"], "tap");
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(sent["max_tokens"], 512);
}

#[tokio::test]
async fn stream_requested_but_server_answers_json() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body("plain")))
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "m");
    cfg.stream = true;
    let resp = ChatClient::new(cfg)
        .unwrap()
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.content, "plain");
}

#[tokio::test]
async fn malformed_stream_event_is_explained() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(
                    "data: {\"choices\": [{\"delta\": {\"content\": \"a\"}}]}\n\ndata: {oops}\n\n",
                )
                .insert_header("content-type", "text/event-stream"),
        )
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "m");
    cfg.stream = true;
    let err = ChatClient::new(cfg)
        .unwrap()
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "sent a malformed response: invalid JSON in a stream event at line 1 column 2"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn stream_with_a_wrong_content_type_is_still_parsed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            "data: {\"choices\": [{\"delta\": {\"content\": \"do(action=\\\"Back\\\")\"}, \"finish_reason\": \"stop\"}]}\n\ndata: [DONE]\n\n",
        ))
        .mount(&server)
        .await;
    let mut cfg = ClientConfig::new(format!("{}/v1", server.uri()), "m");
    cfg.stream = true;
    let resp = ChatClient::new(cfg)
        .unwrap()
        .chat(req(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.content, "do(action=\"Back\")");
    assert_eq!(resp.finish_reason.as_deref(), Some("stop"));
}
