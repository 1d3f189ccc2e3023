//! Task guards (SPEC F4, source 003): rule sentinels activated only by matching tasks.
//!
//! Three layers per guard: a prompt section added at task start, a record of real action
//! attempts, and a finish interception that blocks a premature `finish` with a corrective message
//! naming what is missing. The compose guard also blocks a Send tap the task did not ask for.

use phoneagent_protocol::{Action, ActionKind};

/// Guards active for one task.
#[derive(Debug, Clone, Default)]
pub struct TaskGuards {
    compose: Option<ComposeGuard>,
    search: Option<SearchGuard>,
    text_only: Option<TextOnlyGuard>,
}

#[derive(Debug, Clone)]
struct ComposeGuard {
    may_send: bool,
    typed_fields: u32,
}

#[derive(Debug, Clone)]
struct SearchGuard {
    query: String,
    typed_query: bool,
    submitted_after_typing: bool,
}

#[derive(Debug, Clone)]
struct TextOnlyGuard {
    dispatched: u32,
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn contains_any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| hay.contains(n))
}

/// Words that say "send" in a target or reason.
const SEND_WORDS: &[&str] = &["send", "发送", "寄出", "发出"];
/// Phrases that forbid sending.
const NO_SEND: &[&str] = &[
    "don't send",
    "do not send",
    "dont send",
    "without sending",
    "not send",
    "不要发送",
    "别发送",
    "不发送",
    "先不要发",
    "不要发出",
    "只写草稿",
    "草稿",
];

impl TaskGuards {
    /// Decide which guards a task activates.
    pub fn from_task(task: &str) -> Self {
        let t = lower(task);
        let mail = contains_any(&t, &["email", "e-mail", "mail", "邮件", "邮箱"]);
        let compose_verb = contains_any(
            &t,
            &[
                "write",
                "compose",
                "draft",
                "send",
                "reply",
                "写",
                "起草",
                "撰写",
                "发送",
                "发一封",
                "回复",
            ],
        );
        let compose = (mail && compose_verb).then(|| ComposeGuard {
            may_send: contains_any(&t, &["send", "发送", "发给", "发一封"])
                && !contains_any(&t, NO_SEND),
            typed_fields: 0,
        });
        let search = search_query(task).map(|query| SearchGuard {
            query,
            typed_query: false,
            submitted_after_typing: false,
        });
        let needs_phone = contains_any(
            &t,
            &[
                "open", "tap", "buy", "order", "add", "send", "write", "compose", "draft",
                "search", "turn", "set", "enable", "disable", "delete", "log in", "login",
                "sign in", "go to", "find", "打开", "点击", "购买", "买", "下单", "加入", "发送",
                "写", "搜索", "设置", "开启", "关闭", "删除", "登录", "进入", "查找",
            ],
        );
        let text_only = needs_phone.then_some(TextOnlyGuard { dispatched: 0 });
        Self {
            compose,
            search,
            text_only,
        }
    }

    /// Names of the active guards (for `guard_active` events).
    pub fn active(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.compose.is_some() {
            v.push("compose_message");
        }
        if self.search.is_some() {
            v.push("in_app_search");
        }
        if self.text_only.is_some() {
            v.push("text_only_completion");
        }
        v
    }

    /// Rule sections for the system prompt.
    pub fn prompt_sections(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.compose {
            let mut s = String::from(
                "## Task guard: compose message\n\
                 - Open the mail app and its compose screen; fill recipient, subject and body with real type actions.\n\
                 - If the user named no recipient, leave it empty but still fill subject and body.\n\
                 - Before finishing, make sure the draft is visible on the compose screen.\n",
            );
            if c.may_send {
                s.push_str("- The user asked to send: press Send only after the draft is complete and visible.\n");
            } else {
                s.push_str("- Never press Send: the user did not ask you to send this message. Leave it as a visible draft.\n");
            }
            out.push(s);
        }
        if let Some(q) = &self.search {
            out.push(format!(
                "## Task guard: in-app search\n\
                 - Really type the query \"{}\" into the app's search box and submit it, then read the results on screen.\n\
                 - Never claim a search result from memory.\n",
                q.query
            ));
        }
        if self.text_only.is_some() {
            out.push(
                "## Task guard: act on the phone\n\
                 - This task needs the phone: you cannot finish by only writing an answer; perform the actions on screen first.\n"
                    .into(),
            );
        }
        out
    }

    /// Zero-touch block for a call a guard forbids (the compose guard's unrequested Send).
    /// Returns the corrective message for the model.
    pub fn blocks(&self, action: &Action) -> Option<String> {
        let c = self.compose.as_ref()?;
        if c.may_send
            || !matches!(
                action.kind,
                ActionKind::Tap { .. }
                    | ActionKind::DoubleTap { .. }
                    | ActionKind::LongPress { .. }
            )
        {
            return None;
        }
        let text = format!(
            "{} {}",
            action.target_description.as_deref().unwrap_or(""),
            action.reason.as_deref().unwrap_or("")
        );
        let text = lower(&text);
        let mentions_send = contains_any(&text, SEND_WORDS)
            && !contains_any(&text, &["not send", "不发送", "don't send"]);
        mentions_send.then(|| {
            "Blocked (not executed): the user did not ask to send this message. Leave it as a visible draft and finish; \
             do not press Send."
                .to_string()
        })
    }

    /// Record a real attempt at acting on the phone (source 003 `recordToolAttempt`): an
    /// executing call that reached the gate counts even when it was rejected or blocked.
    pub fn record_attempt(&mut self) {
        if let Some(t) = &mut self.text_only {
            t.dispatched += 1;
        }
    }

    /// Record that a human operated the phone and handed it back after a `take_over`: the
    /// task was acted on (by the human), so a later finish is not text-only.
    pub fn record_human_operation(&mut self) {
        if let Some(t) = &mut self.text_only {
            t.dispatched += 1;
        }
    }

    /// Record an action that was really dispatched to the device.
    pub fn record_dispatched(&mut self, action: &Action) {
        if let Some(t) = &mut self.text_only {
            t.dispatched += 1;
        }
        if let Some(c) = &mut self.compose
            && matches!(action.kind, ActionKind::Type { .. })
        {
            c.typed_fields += 1;
        }
        if let Some(s) = &mut self.search {
            match &action.kind {
                ActionKind::Type { text } if lower(text).contains(&lower(&s.query)) => {
                    s.typed_query = true;
                    s.submitted_after_typing = text.ends_with('\n');
                }
                ActionKind::Tap { .. } | ActionKind::DoubleTap { .. } if s.typed_query => {
                    s.submitted_after_typing = true;
                }
                _ => {}
            }
        }
    }

    /// Check a finish: `Some((guard, message))` when a guard blocks it.
    pub fn check_finish(&self) -> Option<(&'static str, String)> {
        if let Some(t) = &self.text_only
            && t.dispatched == 0
        {
            return Some((
                "text_only_completion",
                "Finish blocked: this task needs the phone and no action has been performed on it yet. \
                 Carry out the task on screen first."
                    .into(),
            ));
        }
        if let Some(s) = &self.search {
            if !s.typed_query {
                return Some((
                    "in_app_search",
                    format!(
                        "Finish blocked: you have not typed the search query \"{}\" yet. Type it into the app's search box, \
                         submit it and read the results; never report results from memory.",
                        s.query
                    ),
                ));
            }
            if !s.submitted_after_typing {
                return Some((
                    "in_app_search",
                    "Finish blocked: the query was typed but not submitted. Submit the search and look at the results.".into(),
                ));
            }
        }
        if let Some(c) = &self.compose
            && c.typed_fields == 0
        {
            return Some((
                "compose_message",
                "Finish blocked: no part of the message has been typed yet. Open the compose screen, fill the subject \
                 and body, and leave the draft visible before finishing."
                    .into(),
            ));
        }
        None
    }
}

/// Extract the search query of an in-app search task ("search X for Y", "search for Y in X",
/// "在X搜索Y", "搜索Y").
pub fn search_query(task: &str) -> Option<String> {
    let t = task.trim();
    let lower_t = lower(t);
    let strip = |s: &str| {
        s.trim()
            .trim_matches(|c: char| {
                c == '"'
                    || c == '\''
                    || c == '“'
                    || c == '”'
                    || c == '「'
                    || c == '」'
                    || c == '。'
                    || c == '.'
            })
            .trim()
            .to_string()
    };
    if let Some(i) = lower_t.find("search for ") {
        let rest = &t[i + "search for ".len()..];
        let end = [" in ", " on ", " and ", ",", "，"]
            .iter()
            .filter_map(|sep| lower(rest).find(sep))
            .min()
            .unwrap_or(rest.len());
        let q = strip(&rest[..end]);
        return (!q.is_empty()).then_some(q);
    }
    if let Some(i) = lower_t.find("search ")
        && let Some(j) = lower_t[i..].find(" for ")
    {
        let rest = &t[i + j + " for ".len()..];
        let end = [" and ", ",", "，"]
            .iter()
            .filter_map(|sep| lower(rest).find(sep))
            .min()
            .unwrap_or(rest.len());
        let q = strip(&rest[..end]);
        return (!q.is_empty()).then_some(q);
    }
    if let Some(i) = t.rfind("搜索") {
        let rest = &t[i + "搜索".len()..];
        let end = ["，", ",", "。", "并", "然后"]
            .iter()
            .filter_map(|sep| rest.find(sep))
            .min()
            .unwrap_or(rest.len());
        let q = strip(&rest[..end]);
        return (!q.is_empty()).then_some(q);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use phoneagent_protocol::ModelPoint;

    fn tap(target: &str) -> Action {
        let mut a = Action::new(ActionKind::Tap {
            element: ModelPoint { x: 1.0, y: 1.0 },
        });
        a.target_description = Some(target.into());
        a
    }

    #[test]
    fn compose_guard_activates_only_for_mail_writing() {
        assert!(
            TaskGuards::from_task("Write an email saying I will be late today")
                .active()
                .contains(&"compose_message")
        );
        assert!(
            !TaskGuards::from_task("Write a short apology note")
                .active()
                .contains(&"compose_message")
        );
        assert!(
            TaskGuards::from_task("给张三写一封邮件，不要发送")
                .active()
                .contains(&"compose_message")
        );
    }

    #[test]
    fn compose_guard_blocks_unrequested_send() {
        let g =
            TaskGuards::from_task("Draft an email to bob@example.com about lunch, don't send it");
        assert!(g.blocks(&tap("Send button")).is_some());
        assert!(g.blocks(&tap("Subject field")).is_none());
        let g = TaskGuards::from_task("Send an email to bob@example.com saying hi");
        assert!(g.blocks(&tap("Send button")).is_none());
    }

    #[test]
    fn compose_guard_blocks_finish_without_typing() {
        let mut g = TaskGuards::from_task("Draft an email to bob about lunch, don't send it");
        g.record_dispatched(&tap("Mail app"));
        assert_eq!(g.check_finish().map(|x| x.0), Some("compose_message"));
        g.record_dispatched(&Action::new(ActionKind::Type {
            text: "Lunch".into(),
        }));
        assert_eq!(g.check_finish(), None);
    }

    #[test]
    fn search_guard_needs_typed_and_submitted_query() {
        assert_eq!(
            search_query("Search the Search app for rust programming").as_deref(),
            Some("rust programming")
        );
        assert_eq!(
            search_query("search for \"耳机\" in the shop").as_deref(),
            Some("耳机")
        );
        assert_eq!(
            search_query("在搜索应用里搜索天气，然后告诉我结果").as_deref(),
            Some("天气")
        );
        let mut g = TaskGuards::from_task("Search the Search app for weather");
        g.record_dispatched(&tap("search box"));
        assert_eq!(g.check_finish().map(|x| x.0), Some("in_app_search"));
        g.record_dispatched(&Action::new(ActionKind::Type {
            text: "Weather".into(),
        }));
        assert!(g.check_finish().unwrap().1.contains("not submitted"));
        g.record_dispatched(&tap("search button"));
        assert_eq!(g.check_finish(), None);
    }

    #[test]
    fn text_only_guard_needs_an_action() {
        let g = TaskGuards::from_task("Open settings and turn on Wi-Fi");
        assert_eq!(g.check_finish().map(|x| x.0), Some("text_only_completion"));
        let g = TaskGuards::from_task("What time is it on the status bar?");
        assert_eq!(g.check_finish(), None);
    }
}
