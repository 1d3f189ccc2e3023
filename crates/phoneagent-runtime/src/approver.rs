//! Human interrupts (SPEC S8): the [`Approver`] trait front ends implement, and the
//! [`PendingApprovals`] registry that validates answers against the pending request id and its
//! expiry (ARCHITECTURE "Seams").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A question put to a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanRequest {
    /// Unique id; answers must name it.
    pub id: String,
    /// What is asked.
    pub kind: HumanRequestKind,
    /// Expiry, ms since epoch; an expired request is answered by the configured default.
    pub expires_at_ms: u64,
    /// The task of the run, for context.
    pub task: String,
    /// The receipt / explanation shown with the request.
    pub detail: String,
}

/// How humans are asked: the terminal in the CLI, notifications + dialog in the app.
/// Implementations must return when `cancel` fires (with a `Reject`).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Make `request` answerable *before* it is announced (the runtime calls this, then emits
    /// `human_requested`, then [`Approver::ask`]): a front end that answers the moment it sees
    /// the event always finds it (issue #13). The default does nothing.
    fn register(&self, request: &HumanRequest) {
        let _ = request;
    }

    /// Ask and wait for the answer.
    async fn ask(&self, request: &HumanRequest, cancel: &CancellationToken) -> HumanResponse;
}

/// Free-text mapping for approve/reject interrupts only (SPEC S8): approve / yes / y / 同意 /
/// 确认 / ok → approve, anything else → reject. `ask_user` answers are never mapped.
pub fn map_free_text(answer: &str) -> HumanResponse {
    let a = answer.trim().to_lowercase();
    if matches!(a.as_str(), "approve" | "yes" | "y" | "同意" | "确认" | "ok") {
        HumanResponse::Approve
    } else {
        HumanResponse::Reject {
            note: if a.is_empty() {
                None
            } else {
                Some(answer.trim().to_string())
            },
        }
    }
}

/// An approver that answers every request the same way without asking anyone: used with no
/// terminal (`--on-approval approve|reject`). `ask_user` gets an empty answer and `take_over`
/// is rejected.
#[derive(Debug, Clone, Copy)]
pub struct PolicyApprover {
    /// Approve approvals (true) or reject them (false).
    pub approve: bool,
}

#[async_trait]
impl Approver for PolicyApprover {
    async fn ask(&self, request: &HumanRequest, _cancel: &CancellationToken) -> HumanResponse {
        match &request.kind {
            HumanRequestKind::Approval { .. } if self.approve => HumanResponse::Approve,
            HumanRequestKind::AskUser { .. } => HumanResponse::Answer {
                text: "(no human is available to answer; continue without this information)".into(),
            },
            _ => HumanResponse::Reject {
                note: Some("no human available (policy)".into()),
            },
        }
    }
}

/// Errors answering a pending request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No request with that id is pending (already answered, withdrawn or never existed).
    #[error("no pending request with id {0}: it was already answered or withdrawn")]
    UnknownRequest(String),
    /// The request expired.
    #[error("request {0} has expired")]
    Expired(String),
    /// The response does not fit the request (e.g. a text answer to an approval).
    #[error("response does not fit request {0}: {1}")]
    Mismatch(String, String),
}

struct Pending {
    request: HumanRequest,
    /// `None` once answered while [`Approver::ask`] had not taken `rx` yet: the answer waits in
    /// `rx` and the request is no longer pending.
    tx: Option<oneshot::Sender<HumanResponse>>,
    /// The receiving end until [`Approver::ask`] takes it (registered ahead).
    rx: Option<oneshot::Receiver<HumanResponse>>,
}

/// A registry of pending human requests that several front ends (an in-app dialog, a desktop
/// notification, a web console, a test) can answer; the first valid answer wins and the others get
/// [`AnswerError::UnknownRequest`]. Implements [`Approver`].
#[derive(Clone, Default)]
pub struct PendingApprovals {
    inner: Arc<Mutex<HashMap<String, Pending>>>,
    notify: Arc<tokio::sync::Notify>,
}

impl PendingApprovals {
    /// A new, empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<HumanRequest> {
        let map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<HumanRequest> = map
            .values()
            .filter(|p| p.tx.is_some())
            .map(|p| p.request.clone())
            .collect();
        v.sort_by_key(|r| r.expires_at_ms);
        v
    }

    /// Wait until at least one request is pending and return it (for front ends and tests).
    pub async fn next_pending(&self) -> HumanRequest {
        loop {
            let notified = self.notify.notified();
            if let Some(r) = self.pending().into_iter().next() {
                return r;
            }
            notified.await;
        }
    }

    /// Answer request `id`. Validated against the pending id, its expiry and its kind.
    pub fn answer(&self, id: &str, response: HumanResponse) -> Result<(), AnswerError> {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = map.get(id).filter(|p| p.tx.is_some()) else {
            return Err(AnswerError::UnknownRequest(id.to_string()));
        };
        if crate::now_ms() > p.request.expires_at_ms {
            map.remove(id);
            return Err(AnswerError::Expired(id.to_string()));
        }
        let allowed = p.request.kind.allowed_responses();
        if !allowed.contains(&response.kind_name()) {
            return Err(AnswerError::Mismatch(
                id.to_string(),
                format!(
                    "a `{}` answer; this request takes {}",
                    response.kind_name(),
                    allowed.join(" or ")
                ),
            ));
        }
        // Answered before `ask` took the receiver (the front end answered the moment the
        // request was announced): the answer waits in the receiver, which stays in the entry for
        // `ask`. Removing the entry here dropped the receiver with the answer in it, and the run
        // waited for the request to expire.
        let early = p.rx.is_some();
        if early {
            if let Some(tx) = map.get_mut(id).and_then(|p| p.tx.take()) {
                let _ = tx.send(response);
            }
        } else if let Some(tx) = map.remove(id).and_then(|p| p.tx) {
            let _ = tx.send(response);
        }
        Ok(())
    }
}

#[async_trait]
impl Approver for PendingApprovals {
    fn register(&self, request: &HumanRequest) {
        let (tx, rx) = oneshot::channel();
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).insert(
            request.id.clone(),
            Pending {
                request: request.clone(),
                tx: Some(tx),
                rx: Some(rx),
            },
        );
        self.notify.notify_waiters();
    }

    async fn ask(&self, request: &HumanRequest, cancel: &CancellationToken) -> HumanResponse {
        let registered = self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&request.id)
            .and_then(|p| p.rx.take());
        let rx = match registered {
            Some(rx) => rx,
            // Not registered ahead (or already answered: then the entry is gone and this
            // waits for nothing until expiry — the runtime always registers first).
            None => {
                let (tx, rx) = oneshot::channel();
                self.inner.lock().unwrap_or_else(|e| e.into_inner()).insert(
                    request.id.clone(),
                    Pending {
                        request: request.clone(),
                        tx: Some(tx),
                        rx: None,
                    },
                );
                rx
            }
        };
        self.notify.notify_waiters();
        let wait_ms = request.expires_at_ms.saturating_sub(crate::now_ms());
        let out = tokio::select! {
            r = rx => r.unwrap_or(HumanResponse::Reject { note: Some("request withdrawn".into()) }),
            _ = cancel.cancelled() => HumanResponse::Reject { note: Some("run cancelled".into()) },
            _ = tokio::time::sleep(std::time::Duration::from_millis(wait_ms)) => {
                HumanResponse::Reject { note: Some("request expired without an answer".into()) }
            }
        };
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer given after `register` and before `ask` (a front end answering the moment the
    /// request is announced) reaches `ask` at once (it was lost, and `ask` waited for expiry).
    #[tokio::test]
    async fn an_answer_before_ask_reaches_ask() {
        let reg = PendingApprovals::new();
        let req = HumanRequest {
            id: "r1".into(),
            kind: HumanRequestKind::AskUser {
                question: "size?".into(),
            },
            expires_at_ms: crate::now_ms() + 60_000,
            task: "t".into(),
            detail: String::new(),
        };
        reg.register(&req);
        assert_eq!(reg.pending().len(), 1);
        assert_eq!(
            reg.answer("r1", HumanResponse::Reject { note: None }),
            Ok(())
        );
        assert!(
            reg.pending().is_empty(),
            "an answered request is not pending"
        );
        assert!(
            matches!(
                reg.answer("r1", HumanResponse::Reject { note: None }),
                Err(AnswerError::UnknownRequest(_))
            ),
            "a second answer is refused"
        );
        let got = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            reg.ask(&req, &CancellationToken::new()),
        )
        .await
        .expect("ask returns the early answer at once");
        assert_eq!(got, HumanResponse::Reject { note: None });
        assert!(reg.pending().is_empty());
    }

    #[test]
    fn free_text_mapping_follows_s8() {
        for yes in ["approve", "YES", " y ", "同意", "确认", "ok"] {
            assert_eq!(map_free_text(yes), HumanResponse::Approve, "{yes}");
        }
        for no in ["", "no", "okay then", "好", "approve it"] {
            assert!(
                matches!(map_free_text(no), HumanResponse::Reject { .. }),
                "{no}"
            );
        }
    }

    fn req(id: &str, kind: HumanRequestKind, ttl_ms: u64) -> HumanRequest {
        HumanRequest {
            id: id.into(),
            kind,
            expires_at_ms: crate::now_ms() + ttl_ms,
            task: "t".into(),
            detail: String::new(),
        }
    }

    #[tokio::test]
    async fn first_answer_wins_and_second_is_refused() {
        let p = PendingApprovals::new();
        let cancel = CancellationToken::new();
        let approval = HumanRequestKind::Approval {
            tool: "tap".into(),
            target: "提交订单".into(),
            tier: phoneagent_protocol::RiskTier::Hard,
            reasons: vec![],
            screen: None,
            model_reason: None,
        };
        let r = req("a1", approval, 10_000);
        let p2 = p.clone();
        let waiter = tokio::spawn(async move { p2.ask(&r, &CancellationToken::new()).await });
        let pending = p.next_pending().await;
        assert_eq!(pending.id, "a1");
        assert!(matches!(
            p.answer("a1", HumanResponse::Answer { text: "x".into() }),
            Err(AnswerError::Mismatch(..))
        ));
        p.answer("a1", HumanResponse::Approve).unwrap();
        assert_eq!(
            p.answer("a1", HumanResponse::Approve),
            Err(AnswerError::UnknownRequest("a1".into()))
        );
        assert_eq!(waiter.await.unwrap(), HumanResponse::Approve);
        assert!(p.answer("nope", HumanResponse::Approve).is_err());
        drop(cancel);
    }

    #[tokio::test]
    async fn expiry_rejects() {
        let p = PendingApprovals::new();
        let r = req(
            "e",
            HumanRequestKind::AskUser {
                question: "?".into(),
            },
            30,
        );
        let out = p.ask(&r, &CancellationToken::new()).await;
        assert!(matches!(out, HumanResponse::Reject { .. }));
        assert!(p.pending().is_empty());
    }
}
