//! What the console's integration suites share (`mod support;` in each): a recorder of what the
//! console pushes to the UI, and the scripted model's order script.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use phoneagent_console::dto::RunEnded;
use phoneagent_console::events::event_names;
use phoneagent_console::{Console, ConsoleEvent};
use phoneagent_protocol::EventEnvelope;
use phoneagent_testkit::ScriptEntry;

/// What the console pushed to the UI (as the webview gets it), in order.
pub struct Recorder {
    /// Every `agent-event`.
    pub events: Mutex<Vec<EventEnvelope>>,
    /// Every `run-ended`.
    pub ended: Mutex<Vec<RunEnded>>,
    /// How long [`Recorder::wait`] waits.
    limit: Duration,
}

impl Recorder {
    /// Record what `console` pushes from now on; [`Recorder::wait`] gives up after `limit`. An
    /// event name the UI does not listen to fails the test.
    pub fn follow(console: &Console, limit: Duration) -> Arc<Self> {
        let rec = Arc::new(Self {
            events: Mutex::default(),
            ended: Mutex::default(),
            limit,
        });
        let mut rx = console.subscribe();
        let r = rec.clone();
        tokio::spawn(async move {
            while let Ok(ConsoleEvent { name, payload }) = rx.recv().await {
                if name == event_names::AGENT_EVENT {
                    let env: EventEnvelope = serde_json::from_value(payload).unwrap();
                    r.events.lock().unwrap().push(env);
                } else if name == event_names::RUN_ENDED {
                    r.ended
                        .lock()
                        .unwrap()
                        .push(serde_json::from_value(payload).unwrap());
                } else {
                    panic!("an event the UI does not listen to: {name}");
                }
            }
        });
        rec
    }

    /// The first `Some` of `f`, polled every 50 ms; panics naming `what` and the events seen.
    pub async fn wait<T>(&self, what: &str, f: impl Fn(&Self) -> Option<T>) -> T {
        let step = Duration::from_millis(50);
        for _ in 0..(self.limit.as_millis() / step.as_millis()).max(1) {
            if let Some(v) = f(self) {
                return v;
            }
            tokio::time::sleep(step).await;
        }
        let kinds: Vec<(String, &'static str)> = self
            .events
            .lock()
            .unwrap()
            .iter()
            .map(|e| (e.run_id.clone(), e.event.kind()))
            .collect();
        panic!("timed out waiting for {what}; events: {kinds:?}");
    }

    /// The newest `run-ended`.
    pub fn last_ended(&self) -> Option<RunEnded> {
        self.ended.lock().unwrap().last().cloned()
    }
}

/// The scripted model's answers for "submit the order": the tap, then the two-stage finish.
pub fn order_script() -> Vec<ScriptEntry> {
    vec![
        ScriptEntry::text(
            r#"do(action="Tap", element={{center:提交订单}}, target_description="提交订单")"#,
        ),
        ScriptEntry::text(r#"finish(message="Order submitted")"#),
        ScriptEntry::text(r#"finish(message="Order submitted", confirm=True)"#),
    ]
}
