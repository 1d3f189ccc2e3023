//! Task guards (SPEC F4, source 003): rule sentinels activated only by matching tasks.
//!
//! Three layers per guard: a prompt section added at task start, a record of real action
//! attempts, and a finish interception that blocks a premature `finish` with a corrective message
//! naming what is missing. The compose guard also blocks a Send tap the task did not ask for.
//!
//! The search guard counts a search as submitted only when the pixels show it: after the query
//! was typed, an action (a tap, a further `type`, or the typing itself when it ends in a
//! newline) must change the screen *outside the rows where the typed text appeared* (results,
//! or a "no results" line, below the box). A trailing `\n` alone proves nothing: in a
//! single-line box ADB Keyboard's newline submits nothing. Known limit without OCR: an
//! autocomplete list that appears while typing a query ending in `\n`, or a tap after typing
//! that leaves the screen, also changes rows outside the text.

use image::RgbaImage;
use phoneagent_protocol::{Action, ActionKind};

use crate::pixels::{SAMPLE_STRIDE, changed_rows};

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
    /// Rows `y0..=y1` (device px) the typing of the query changed: where the typed text shows.
    typed_rows: Option<(u32, u32)>,
    /// The screen showed the submission (see the module docs).
    submitted: bool,
}

/// The top part of the screen ignored by the search guard's pixel evidence (the status bar's
/// clock and icons change on their own), as a fraction of the frame height.
const STATUS_BAR_FRAC: f64 = 0.05;

/// Group ascending sampled rows into bands `(y0, y1)`; rows at most `gap` px apart join.
fn bands(rows: &[u32], gap: u32) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &y in rows {
        match out.last_mut() {
            Some((_, y1)) if y <= *y1 + gap => *y1 = y,
            _ => out.push((y, y)),
        }
    }
    out
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
            typed_rows: None,
            submitted: false,
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
        if let Some(s) = &mut self.search
            && let ActionKind::Type { text } = &action.kind
            && lower(text).contains(&lower(&s.query))
        {
            // A (re)typed query is a new search: it counts once the screen shows it submitted.
            s.typed_query = true;
            s.typed_rows = None;
            s.submitted = false;
        }
    }

    /// Record what a dispatched action did to the screen: `before` and `after` are the frames
    /// around it (device px, the planning or last frame and the verification frame). Feeds the
    /// search guard's pixel evidence of a submitted search (SPEC F4, see the module docs).
    pub fn record_screen_effect(&mut self, action: &Action, before: &RgbaImage, after: &RgbaImage) {
        let Some(s) = &mut self.search else {
            return;
        };
        if !s.typed_query || s.submitted {
            return;
        }
        let h = after.height();
        let top = (f64::from(h) * STATUS_BAR_FRAC) as u32;
        let rows: Vec<u32> = changed_rows(before, after)
            .into_iter()
            .filter(|&y| y >= top)
            .collect();
        let line_gap = SAMPLE_STRIDE * 2;
        match &action.kind {
            ActionKind::Type { text } if lower(text).contains(&lower(&s.query)) => {
                let found = bands(&rows, line_gap);
                s.typed_rows = found.first().copied();
                // Typed text is one band of rows; results below it are another.
                s.submitted = text.ends_with('\n') && found.len() > 1;
            }
            ActionKind::Tap { .. } | ActionKind::DoubleTap { .. } | ActionKind::Type { .. } => {
                let margin = line_gap.max(h / 100);
                s.submitted = match s.typed_rows {
                    Some((y0, y1)) => rows.iter().any(|&y| y + margin < y0 || y > y1 + margin),
                    None => !rows.is_empty(),
                };
            }
            _ => {}
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
            if !s.submitted {
                return Some((
                    "in_app_search",
                    "Finish blocked: the query was typed but not submitted: the screen shows no results below the search box. \
                     Submit the search (tap the search button) and look at the results."
                        .into(),
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
        let (blank, typed, results) = frames();
        g.record_dispatched(&tap("search box"));
        g.record_screen_effect(&tap("search box"), &blank, &blank);
        assert_eq!(g.check_finish().map(|x| x.0), Some("in_app_search"));
        let ty = Action::new(ActionKind::Type {
            text: "Weather".into(),
        });
        g.record_dispatched(&ty);
        g.record_screen_effect(&ty, &blank, &typed);
        assert!(g.check_finish().unwrap().1.contains("not submitted"));
        // A tap that changes nothing outside the typed text is no submission…
        g.record_dispatched(&tap("search box"));
        g.record_screen_effect(&tap("search box"), &typed, &typed);
        assert!(g.check_finish().unwrap().1.contains("not submitted"));
        // …results below the box are.
        g.record_dispatched(&tap("search button"));
        g.record_screen_effect(&tap("search button"), &typed, &results);
        assert_eq!(g.check_finish(), None);
    }

    /// A blank 200x400 frame, the same with typed text in rows 100..120, and with results in
    /// rows 200..300 as well.
    fn frames() -> (RgbaImage, RgbaImage, RgbaImage) {
        let blank = RgbaImage::from_pixel(200, 400, image::Rgba([250, 250, 250, 255]));
        let mut typed = blank.clone();
        for y in 100..120 {
            for x in 20..80 {
                typed.put_pixel(x, y, image::Rgba([20, 20, 20, 255]));
            }
        }
        let mut results = typed.clone();
        for y in 200..300 {
            for x in 20..180 {
                results.put_pixel(x, y, image::Rgba([200, 30, 30, 255]));
            }
        }
        (blank, typed, results)
    }

    #[test]
    fn a_trailing_newline_counts_only_when_results_appear() {
        let (blank, typed, results) = frames();
        let ty = Action::new(ActionKind::Type {
            text: "weather\n".into(),
        });
        let mut g = TaskGuards::from_task("Search the Search app for weather");
        g.record_dispatched(&ty);
        g.record_screen_effect(&ty, &blank, &typed);
        assert!(g.check_finish().unwrap().1.contains("not submitted"));
        let mut g = TaskGuards::from_task("Search the Search app for weather");
        g.record_dispatched(&ty);
        g.record_screen_effect(&ty, &blank, &results);
        assert_eq!(g.check_finish(), None);
        // Typing the query again is a new search, not yet submitted.
        let again = Action::new(ActionKind::Type {
            text: "weather tomorrow".into(),
        });
        g.record_dispatched(&again);
        g.record_screen_effect(&again, &results, &results);
        assert!(g.check_finish().is_some());
    }

    #[test]
    fn text_only_guard_needs_an_action() {
        let g = TaskGuards::from_task("Open settings and turn on Wi-Fi");
        assert_eq!(g.check_finish().map(|x| x.0), Some("text_only_completion"));
        let g = TaskGuards::from_task("What time is it on the status bar?");
        assert_eq!(g.check_finish(), None);
    }
}
