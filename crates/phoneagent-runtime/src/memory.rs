//! Task memory and the pure-vision context (SPEC P1, R6).
//!
//! The goal and notes are stored once; every completed step keeps its action type, the model's
//! `screen_description` and `reason`, and a sanitized result for the whole task. Coordinates of
//! old screenshots are never kept (an old coordinate is meaningless on a new screen). Only the
//! current user turn carries an image. The oldest whole turns are dropped only when the
//! input-token budget requires it. Consecutive rejected actions collapse into one
//! non-executable summary so the planner changes strategy instead of copying them.

use phoneagent_protocol::{Action, ActionKind, TaskItem};
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// One completed (or rejected) step as the planner will remember it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Step number.
    pub step: u32,
    /// Action without coordinates, e.g. `tap (target: "Cart")`.
    pub action: String,
    /// The model's screen description at the time.
    pub screen_description: Option<String>,
    /// The model's reason.
    pub reason: Option<String>,
    /// Sanitized result text (what the model is told happened).
    pub result: String,
    /// True when the action was not executed (gate, stale, guard, protocol).
    pub rejected: bool,
    /// How many consecutive rejections this turn summarizes (≥ 1 when `rejected`).
    pub rejected_count: u32,
}

/// The planner's memory of one task.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// The user's goal, stored once.
    pub goal: String,
    /// Explicit notes from `note`.
    pub notes: Vec<String>,
    /// The model's task board.
    pub task_board: Vec<TaskItem>,
    /// The user's answers (`ask_user`) and approvals, verbatim.
    pub human_answers: Vec<String>,
    turns: Vec<Turn>,
}

impl Memory {
    /// Memory for a new task.
    pub fn new(goal: &str) -> Self {
        Self {
            goal: goal.to_string(),
            ..Self::default()
        }
    }

    /// Remembered turns, oldest first.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// Add a turn. A rejected turn following a rejected turn is merged into one summary.
    pub fn push(&mut self, mut turn: Turn) {
        turn.result = sanitize_text(&turn.result);
        if turn.rejected {
            turn.rejected_count = turn.rejected_count.max(1);
            if let Some(last) = self.turns.last_mut()
                && last.rejected
            {
                let n = last.rejected_count + 1;
                *last = Turn {
                    step: turn.step,
                    action: format!(
                        "{n} consecutive actions were rejected (not executed); last: {}",
                        turn.action
                    ),
                    screen_description: turn.screen_description,
                    reason: None,
                    result: format!(
                        "{} Do not repeat these actions; change strategy, or use ask_user / take_over.",
                        turn.result
                    ),
                    rejected: true,
                    rejected_count: n,
                };
                return;
            }
        }
        self.turns.push(turn);
    }

    /// Drop the oldest whole turn (for the input-token budget). Returns false when empty.
    pub fn drop_oldest(&mut self) -> bool {
        if self.turns.is_empty() {
            false
        } else {
            self.turns.remove(0);
            true
        }
    }
}

/// A short, coordinate-free description of an action for history.
pub fn summarize_action(a: &Action) -> String {
    let target = a
        .target_description
        .as_deref()
        .map(|t| format!(" (target: {t:?})"))
        .unwrap_or_default();
    match &a.kind {
        ActionKind::Tap { .. } => format!("tap{target}"),
        ActionKind::DoubleTap { .. } => format!("double_tap{target}"),
        ActionKind::LongPress { duration_ms, .. } => {
            format!(
                "long_press{target}{}",
                duration_ms
                    .map(|d| format!(" for {d} ms"))
                    .unwrap_or_default()
            )
        }
        ActionKind::Swipe { start, end, .. } => {
            let (dx, dy) = (end.x - start.x, end.y - start.y);
            let dir = if dx.abs() >= dy.abs() {
                if dx < 0.0 { "left" } else { "right" }
            } else if dy < 0.0 {
                "up"
            } else {
                "down"
            };
            format!("swipe {dir} (finger motion)")
        }
        ActionKind::Type { text } => format!("type_text({text:?})"),
        ActionKind::Back => "back".into(),
        ActionKind::Home => "home".into(),
        ActionKind::Wait { seconds } => format!("wait {seconds} s"),
        ActionKind::TakeOver { message } => format!("take_over({message:?})"),
        ActionKind::AskUser { question } => format!("ask_user({question:?})"),
        ActionKind::Note { message, .. } => format!("note({message:?})"),
        ActionKind::Finish { message, confirm } => {
            format!("finish({message:?}, confirm={confirm})")
        }
        ActionKind::LaunchApp { name } => format!("launch_app({name:?})"),
    }
}

/// Keys that carry Android semantics and must never reach a model (SPEC P1).
const SEMANTIC_KEYS: &[&str] = &[
    "package",
    "package_name",
    "packagename",
    "activity",
    "current_activity",
    "current_app",
    "app_package",
    "installed_apps",
    "app_list",
    "packages",
    "ui_tree",
    "ui_hierarchy",
    "hierarchy",
    "accessibility",
    "accessibility_tree",
    "a11y",
    "window",
    "windows",
    "window_manager",
    "focused_window",
    "mcurrentfocus",
    "mfocusedapp",
    "launch_result",
    "resource_id",
    "view_id",
];

static PACKAGE_LIKE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // com.example.app, com.android.settings/.Settings, org.foo.bar.MainActivity
    Regex::new(r"\b(?:com|org|net|android|cn|io|me|tv)(?:\.[A-Za-z_][A-Za-z0-9_]*){1,}(?:/[.A-Za-z0-9_$]+)?").ok()
});
static ACTIVITY_WORDS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(mCurrentFocus|mFocusedApp|ActivityRecord|topActivity)\b[^\n]*").ok()
});

/// Remove Android-semantic content from free text: package/activity names and window-manager
/// dumps become `[removed]`. Applied to every text that enters a model context.
pub fn sanitize_text(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(re) = ACTIVITY_WORDS.as_ref() {
        out = re.replace_all(&out, "[removed]").into_owned();
    }
    if let Some(re) = PACKAGE_LIKE.as_ref() {
        out = re.replace_all(&out, "[removed]").into_owned();
    }
    out
}

/// Remove Android-semantic fields from structured evidence, recursively, and sanitize every
/// string left (SPEC P1: defensively, even when a caller passes them in).
pub fn strip_semantics(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !SEMANTIC_KEYS.contains(&k.to_ascii_lowercase().as_str()));
            for (_, child) in map.iter_mut() {
                strip_semantics(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_semantics),
        Value::String(s) => *s = sanitize_text(s),
        _ => {}
    }
}

/// Rough token estimate of a text (≈ 3 chars per token for mixed CJK/English).
pub fn estimate_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(step: u32, rejected: bool) -> Turn {
        Turn {
            step,
            action: format!("tap {step}"),
            screen_description: None,
            reason: None,
            result: "r".into(),
            rejected,
            rejected_count: 0,
        }
    }

    #[test]
    fn consecutive_rejections_collapse() {
        let mut m = Memory::new("g");
        m.push(turn(1, false));
        m.push(turn(2, true));
        m.push(turn(3, true));
        m.push(turn(4, true));
        assert_eq!(m.turns().len(), 2);
        let last = &m.turns()[1];
        assert_eq!(last.rejected_count, 3);
        assert!(last.action.contains("3 consecutive"));
        assert!(last.result.contains("Do not repeat"));
        m.push(turn(5, false));
        assert_eq!(m.turns().len(), 3);
    }

    #[test]
    fn sanitize_removes_package_and_window_names() {
        let s = sanitize_text(
            "opened com.android.settings/.Settings; mCurrentFocus=Window{abc u0 com.shop.app/.Main}",
        );
        assert!(!s.contains("com.android.settings"), "{s}");
        assert!(!s.contains("com.shop"), "{s}");
        assert!(!s.contains("mCurrentFocus"), "{s}");
        assert_eq!(
            sanitize_text("Tapped 提交订单, screen changed"),
            "Tapped 提交订单, screen changed"
        );
    }

    #[test]
    fn strip_semantics_drops_keys_recursively() {
        let mut v = serde_json::json!({
            "result": "ok",
            "package": "com.shop.app",
            "nested": {"activity": ".Main", "ui_tree": "<node/>", "note": "in com.shop.app"},
            "list": [{"installed_apps": ["a"]}]
        });
        strip_semantics(&mut v);
        let s = v.to_string();
        for bad in [
            "package",
            "activity",
            "ui_tree",
            "installed_apps",
            "com.shop.app",
        ] {
            assert!(!s.contains(bad), "{bad} leaked: {s}");
        }
        assert!(s.contains("\"result\":\"ok\""));
    }

    #[test]
    fn summaries_have_no_coordinates() {
        let mut a = Action::new(ActionKind::Swipe {
            start: phoneagent_protocol::ModelPoint { x: 500.0, y: 800.0 },
            end: phoneagent_protocol::ModelPoint { x: 500.0, y: 200.0 },
            duration_ms: None,
        });
        a.reason = Some("scroll".into());
        let s = summarize_action(&a);
        assert_eq!(s, "swipe up (finger motion)");
        assert!(!s.contains("500"));
    }
}
