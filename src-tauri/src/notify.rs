//! Native desktop notifications for human requests (SPEC U4).
//!
//! An approval shows a notification with **Approve** / **Reject** actions (where the
//! notification server supports actions); `ask_user` and `take_over` show a notification that
//! points at the app. Each notification waits for its action on its own OS thread (the blocking
//! notify-rust API over libdbus; ENVIRONMENT.md: its async API panics with that backend),
//! and answers through [`PendingApprovals::answer`], the same validated path as the in-app
//! dialog. Whichever answers first wins: the loser gets `unknown_request`, and when the request
//! is resolved (by the dialog, expiry or cancel) [`Notifier::withdraw`] closes the notification.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use phoneagent_protocol::event::{HumanRequestKind, HumanResponse};
use phoneagent_runtime::PendingApprovals;

/// Shows and withdraws notifications; cheap to clone.
#[derive(Clone, Default)]
pub struct Notifier {
    /// request id → notification id of the server.
    shown: Arc<Mutex<HashMap<String, u32>>>,
}

/// Body text of a notification for `kind`.
pub fn notification_text(kind: &HumanRequestKind) -> (String, String) {
    match kind {
        HumanRequestKind::Approval {
            tool, target, tier, ..
        } => (
            "PhoneAgent needs your approval".to_string(),
            format!(
                "{tool} “{target}” ({} risk). Approve to run it, Reject to skip it.",
                tier_name(*tier)
            ),
        ),
        HumanRequestKind::AskUser { question } => (
            "PhoneAgent has a question".to_string(),
            format!("{question}\nAnswer it in the PhoneAgent window."),
        ),
        HumanRequestKind::TakeOver { message } => (
            "PhoneAgent asks you to take over".to_string(),
            format!("{message}\nUse the mirror in the PhoneAgent window, then press Hand back."),
        ),
    }
}

fn tier_name(t: phoneagent_protocol::RiskTier) -> &'static str {
    use phoneagent_protocol::RiskTier as R;
    match t {
        R::None => "no",
        R::Soft => "soft",
        R::Reviewer => "reviewer",
        R::Hard => "hard",
    }
}

/// Maps a notification action name to a response (None for close / default click).
pub fn response_for_action(action: &str) -> Option<HumanResponse> {
    match action {
        "approve" => Some(HumanResponse::Approve),
        "reject" => Some(HumanResponse::Reject {
            note: Some("rejected from the desktop notification".into()),
        }),
        _ => None,
    }
}

impl Notifier {
    /// A notifier with nothing shown.
    pub fn new() -> Self {
        Self::default()
    }

    /// Show a notification for request `id` on a background thread; answers go to `approvals`.
    /// Failures (no notification server) are logged and otherwise ignored: the in-app dialog
    /// is always there.
    pub fn show(&self, id: String, kind: HumanRequestKind, approvals: PendingApprovals) {
        let shown = self.shown.clone();
        let spawned = std::thread::Builder::new().name("approval-notification".into()).spawn(move || {
            let (summary, body) = notification_text(&kind);
            let mut n = notify_rust::Notification::new();
            n.appname("PhoneAgent").summary(&summary).body(&body).timeout(notify_rust::Timeout::Never);
            if matches!(kind, HumanRequestKind::Approval { .. }) {
                n.action("approve", "Approve").action("reject", "Reject");
            }
            let handle = match n.show() {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(error = %e, "could not show a desktop notification; use the in-app dialog");
                    return;
                }
            };
            {
                let mut map = shown.lock().unwrap_or_else(|p| p.into_inner());
                // The request may have been answered while the notification was being shown.
                if approvals.pending().iter().all(|r| r.id != id) {
                    drop(map);
                    handle.close();
                    return;
                }
                map.insert(id.clone(), handle.id());
            }
            handle.wait_for_action(|action| {
                if let Some(resp) = response_for_action(action) {
                    match approvals.answer(&id, resp) {
                        Ok(()) => tracing::info!(request = %id, action, "answered from the notification"),
                        Err(e) => tracing::info!(request = %id, error = %e, "notification answer lost the race"),
                    }
                }
            });
            shown.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start the notification thread");
        }
    }

    /// Close the notification of request `id`, if one is shown (the request was resolved).
    pub fn withdraw(&self, id: &str) {
        let nid = self
            .shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(nid) = nid {
            let spawned = std::thread::Builder::new()
                .name("notification-close".into())
                .spawn(move || {
                    // Closing by id: replace the notification (same id) and close the replacement.
                    let mut n = notify_rust::Notification::new();
                    n.appname("PhoneAgent")
                        .summary("PhoneAgent: request answered")
                        .id(nid);
                    match n.show() {
                        Ok(h) => h.close(),
                        Err(e) => tracing::debug!(error = %e, "could not withdraw notification"),
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "could not start the notification thread");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_map_to_responses() {
        assert_eq!(response_for_action("approve"), Some(HumanResponse::Approve));
        assert!(matches!(
            response_for_action("reject"),
            Some(HumanResponse::Reject { .. })
        ));
        assert_eq!(response_for_action("__closed"), None);
        assert_eq!(response_for_action("default"), None);
    }

    #[test]
    fn approval_text_names_tool_and_target() {
        let (s, b) = notification_text(&HumanRequestKind::Approval {
            tool: "tap".into(),
            target: "提交订单".into(),
            tier: phoneagent_protocol::RiskTier::Hard,
            reasons: vec![],
            screen: None,
            model_reason: None,
        });
        assert!(s.contains("approval"));
        assert!(b.contains("tap") && b.contains("提交订单") && b.contains("hard"));
    }
}
