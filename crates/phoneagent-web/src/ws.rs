//! `GET /api/ws`: the events the UI listens to and the mirror's messages, to one page.

use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::Ctx;

pub(crate) async fn upgrade(State(ctx): State<Arc<Ctx>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| forward(ctx, socket))
}

async fn send(tx: &mut futures::stream::SplitSink<WebSocket, Message>, v: &Value) -> bool {
    tx.send(Message::Text(v.to_string().into())).await.is_ok()
}

/// Forward until the page goes away. Subscribed before `ready` is sent, so a page that waits
/// for `ready` misses nothing it asks for afterwards (the mirror, a run).
async fn forward(ctx: Arc<Ctx>, socket: WebSocket) {
    let mut events = ctx.backend.subscribe();
    let mut mirror = ctx.mirror.subscribe();
    let (mut tx, mut rx) = socket.split();
    if !send(&mut tx, &json!({"type": "ready"})).await {
        return;
    }
    loop {
        let out = tokio::select! {
            e = events.recv() => match e {
                Ok(e) => json!({"type": "event", "name": e.name, "payload": e.payload}),
                Err(RecvError::Lagged(n)) => json!({"type": "lagged", "missed": n}),
                Err(RecvError::Closed) => break,
            },
            m = mirror.recv() => match m {
                Ok(m) => json!({"type": "mirror", "message": m}),
                // Only the newest frame matters: skip the ones this page was too slow for.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            },
            incoming = rx.next() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                // Pings are answered by the WebSocket layer; the page sends nothing else.
                Some(Ok(_)) => continue,
            },
        };
        if !send(&mut tx, &out).await {
            break;
        }
    }
    let _ = tx.close().await;
}
