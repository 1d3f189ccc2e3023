//! The scripted model's endpoints besides chat: `GET /v1/models`, the fallback for unknown
//! routes, and the test-control endpoints `/__requests` (list, clear), `/__script` (replace,
//! append, push entries) and `/__health`.

use super::*;

pub(super) async fn models(
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

pub(super) async fn fallback(
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

pub(super) async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    let reqs = lock(&shared.requests).clone();
    json_response(StatusCode::OK, &json!(reqs))
}

pub(super) async fn clear_requests(State(shared): State<Arc<Shared>>) -> Response {
    lock(&shared.requests).clear();
    json_response(StatusCode::OK, &json!({"cleared": true}))
}

#[derive(Debug, Deserialize)]
pub(super) struct ScriptQuery {
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

pub(super) async fn update_script(
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

pub(super) async fn health(State(shared): State<Arc<Shared>>) -> Response {
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
