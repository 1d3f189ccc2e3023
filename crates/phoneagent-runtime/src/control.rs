//! Pause and resume (SPEC R2, U2 "Start / Pause / Stop"): a cheap, cloneable handle a front end
//! (the app's Pause button, a CLI key, a test) keeps while a run goes on.
//!
//! A paused agent finishes the device command in flight, then sends no further device command
//! (no screenshot, no input) until it is resumed; its run state (step, memory, budgets, pending
//! review package) is kept. A model call in flight is allowed to finish, but its action waits.
//! Cancellation still works while paused and ends the run in `cancelled` at once. Time spent
//! paused does not count toward the run's wall-time limit (R7). While paused the agent's phase is
//! [`phoneagent_protocol::Phase::Paused`]; on resume it returns to the phase it paused in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Pause/resume switch of one [`crate::Agent`]. Clones share the switch.
#[derive(Debug, Clone)]
pub struct PauseHandle {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for PauseHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl PauseHandle {
    /// A handle in the running (not paused) position.
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Ask the agent to pause before its next device command. Idempotent.
    pub fn pause(&self) {
        self.tx.send_replace(true);
    }

    /// Let a paused agent continue. Idempotent.
    pub fn resume(&self) {
        self.tx.send_replace(false);
    }

    /// True while a pause is requested.
    pub fn is_paused(&self) -> bool {
        *self.tx.borrow()
    }

    /// Wait while paused. Returns how long it waited (zero when not paused), or `None` when
    /// `cancel` fired first.
    pub(crate) async fn wait_resumed(&self, cancel: &CancellationToken) -> Option<Duration> {
        let t0 = Instant::now();
        let mut rx = self.tx.subscribe();
        tokio::select! {
            r = rx.wait_for(|paused| !*paused) => {
                // The sender lives in `self`, so the channel cannot close while we wait.
                let _ = r;
                Some(t0.elapsed())
            }
            _ = cancel.cancelled() => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn not_paused_passes_paused_waits_for_resume_and_cancel_wins() {
        let h = PauseHandle::new();
        let cancel = CancellationToken::new();
        assert!(!h.is_paused());
        assert!(h.wait_resumed(&cancel).await.unwrap() < Duration::from_millis(50));

        h.pause();
        assert!(h.clone().is_paused(), "clones share the switch");
        let h2 = h.clone();
        let resumer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            h2.resume();
        });
        let waited = h.wait_resumed(&cancel).await.unwrap();
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        resumer.await.unwrap();

        h.pause();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c2.cancel();
        });
        assert_eq!(h.wait_resumed(&cancel).await, None);
        assert!(h.is_paused(), "cancel does not resume");
    }
}
