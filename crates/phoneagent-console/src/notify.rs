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
use phoneagent_runtime::{Lang, PendingApprovals};

/// Shows and withdraws notifications; cheap to clone.
#[derive(Clone, Default)]
pub struct Notifier {
    /// request id → notification id of the server.
    shown: Arc<Mutex<HashMap<String, u32>>>,
}

/// Summary and body of a notification for `kind`, in the app's language (issue #14 item 6).
pub fn notification_text(kind: &HumanRequestKind, lang: Lang) -> (String, String) {
    let zh = lang == Lang::Zh;
    match kind {
        HumanRequestKind::Approval {
            tool, target, tier, ..
        } => {
            let tier = tier_name(*tier, lang);
            if zh {
                (
                    "PhoneAgent 需要你批准".to_string(),
                    format!("{tool}“{target}”（{tier}风险）。批准则执行，拒绝则跳过。"),
                )
            } else {
                (
                    "PhoneAgent needs your approval".to_string(),
                    format!(
                        "{tool} “{target}” ({tier} risk). Approve to run it, Reject to skip it."
                    ),
                )
            }
        }
        HumanRequestKind::AskUser { question } => {
            if zh {
                (
                    "PhoneAgent 有个问题".to_string(),
                    format!("{question}\n请在 PhoneAgent 窗口中回答。"),
                )
            } else {
                (
                    "PhoneAgent has a question".to_string(),
                    format!("{question}\nAnswer it in the PhoneAgent window."),
                )
            }
        }
        HumanRequestKind::TakeOver { message } => {
            if zh {
                (
                    "PhoneAgent 请你接管".to_string(),
                    format!("{message}\n请在 PhoneAgent 窗口的镜像中操作，然后点“交还控制”。"),
                )
            } else {
                (
                    "PhoneAgent asks you to take over".to_string(),
                    format!(
                        "{message}\nUse the mirror in the PhoneAgent window, then press Hand back."
                    ),
                )
            }
        }
    }
}

/// What replaces a notification once its request is answered (summary, body).
pub fn answered_text(lang: Lang) -> (&'static str, &'static str) {
    match lang {
        Lang::Zh => (
            "PhoneAgent：请求已处理",
            "已在 PhoneAgent 中回答，无需再操作。",
        ),
        _ => (
            "PhoneAgent: request answered",
            "It was answered in PhoneAgent; nothing more to do here.",
        ),
    }
}

/// The labels of the Approve / Reject actions.
fn action_labels(lang: Lang) -> (&'static str, &'static str) {
    match lang {
        Lang::Zh => ("批准", "拒绝"),
        _ => ("Approve", "Reject"),
    }
}

fn tier_name(t: phoneagent_protocol::RiskTier, lang: Lang) -> &'static str {
    use phoneagent_protocol::RiskTier as R;
    let zh = lang == Lang::Zh;
    match t {
        R::None => {
            if zh {
                "无"
            } else {
                "no"
            }
        }
        R::Soft => {
            if zh {
                "轻度"
            } else {
                "soft"
            }
        }
        R::Reviewer => {
            if zh {
                "待审"
            } else {
                "reviewer"
            }
        }
        R::Hard => {
            if zh {
                "严格"
            } else {
                "hard"
            }
        }
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
    pub fn show(
        &self,
        id: String,
        kind: HumanRequestKind,
        approvals: PendingApprovals,
        lang: Lang,
    ) {
        let shown = self.shown.clone();
        let spawned = std::thread::Builder::new().name("approval-notification".into()).spawn(move || {
            let (summary, body) = notification_text(&kind, lang);
            let mut n = notify_rust::Notification::new();
            n.appname("PhoneAgent").summary(&summary).body(&body).timeout(notify_rust::Timeout::Never);
            if matches!(kind, HumanRequestKind::Approval { .. }) {
                let (approve, reject) = action_labels(lang);
                n.action("approve", approve).action("reject", reject);
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
    pub fn withdraw(&self, id: &str, lang: Lang) {
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
                    let (summary, body) = answered_text(lang);
                    n.appname("PhoneAgent").summary(summary).body(body).id(nid);
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
        let kind = HumanRequestKind::Approval {
            tool: "tap".into(),
            target: "提交订单".into(),
            tier: phoneagent_protocol::RiskTier::Hard,
            reasons: vec![],
            screen: None,
            model_reason: None,
        };
        let (s, b) = notification_text(&kind, Lang::En);
        assert!(s.contains("approval"));
        assert!(b.contains("tap") && b.contains("提交订单") && b.contains("hard"));
        // In Chinese, nothing English is left but the tool's name.
        let (s, b) = notification_text(&kind, Lang::Zh);
        assert!(
            s.contains("批准") && b.contains("提交订单") && b.contains("严格"),
            "{s} / {b}"
        );
        let english = |t: &str| {
            t.replace("PhoneAgent", "")
                .replace("tap", "")
                .chars()
                .any(|c| c.is_ascii_alphabetic())
        };
        assert!(!english(&s) && !english(&b), "{s} / {b}");
        // The replacement after an answer has a body (it was empty), in both languages.
        for lang in [Lang::En, Lang::Zh] {
            let (s, b) = answered_text(lang);
            assert!(!s.is_empty() && !b.is_empty());
        }
    }
}
