//! What a console pushes to its clients: [`ConsoleEvent`]s on [`Console::subscribe`]'s stream.
//! The desktop app forwards each as a Tauri event (`app.emit(name, payload)`), `phoneagent web`
//! as a server-sent event; the names are the ones the UI `listen`s to (`ui/src/lib/api.ts`).
//!
//! [`Console::subscribe`]: crate::Console::subscribe

use serde::Serialize;

pub use crate::dto::event_names;

/// Capacity of the console's event stream: a client further behind gets `Lagged` and skips
/// events (the store still has every agent event).
pub const CONSOLE_EVENT_CAPACITY: usize = 4096;

/// One event for the UI: its name ([`event_names`]) and its JSON payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsoleEvent {
    /// `agent-event` (payload: an `EventEnvelope`) or `run-ended` (payload: a
    /// [`crate::dto::RunEnded`]).
    pub name: String,
    /// The payload, serialized exactly as the UI receives it.
    pub payload: serde_json::Value,
}

impl ConsoleEvent {
    /// The event `name` with `payload` serialized (`null` if it cannot be, which the types
    /// sent here never are).
    pub fn new(name: &str, payload: &impl Serialize) -> Self {
        Self {
            name: name.to_string(),
            payload: serde_json::to_value(payload).unwrap_or_else(|e| {
                tracing::warn!(error = %e, event = name, "could not serialize an event");
                serde_json::Value::Null
            }),
        }
    }
}
