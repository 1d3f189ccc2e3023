//! What the gate looks at: one tool call with the model's metadata and the task (SPEC S2, S3).

use std::str::FromStr;

use phoneagent_protocol::{Action, ActionKind, ScreenReading};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The tool of a call, by the names of the `tools` front end (SPEC A1). The `do` front end's
/// names (`Tap`, `Double Tap`, `Long Press`, `Type`, `Launch`, `Swipe`, …) parse too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// Tap (gated).
    Tap,
    /// Double tap (gated like tap).
    DoubleTap,
    /// Long press (gated).
    LongPress,
    /// Type text into the focused field (gated).
    TypeText,
    /// Launch an app by name (gated; only with the app-launcher capability, SPEC D5).
    LaunchApp,
    /// Swipe (not gated).
    Swipe,
    /// Scroll (not gated).
    Scroll,
    /// Back key (not gated).
    Back,
    /// Home key (not gated).
    Home,
    /// Wait (not gated).
    Wait,
    /// Ask the human (interrupts in every mode; not gated here).
    AskUser,
    /// Hand over to the human (interrupts in every mode; not gated here).
    TakeOver,
    /// Note / task board (not gated).
    Note,
    /// Finish (not gated; finish acceptance is separate, SPEC F1).
    Finish,
}

impl Tool {
    /// The stable tool name (`tap`, `double_tap`, `long_press`, `type_text`, `launch_app`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tap => "tap",
            Self::DoubleTap => "double_tap",
            Self::LongPress => "long_press",
            Self::TypeText => "type_text",
            Self::LaunchApp => "launch_app",
            Self::Swipe => "swipe",
            Self::Scroll => "scroll",
            Self::Back => "back",
            Self::Home => "home",
            Self::Wait => "wait",
            Self::AskUser => "ask_user",
            Self::TakeOver => "take_over",
            Self::Note => "note",
            Self::Finish => "finish",
        }
    }

    /// True for the executing tools the gate classifies (SPEC S2): tap, double tap, long press,
    /// type_text, launch_app. Everything else is tier `none`.
    pub fn is_gated(self) -> bool {
        matches!(
            self,
            Self::Tap | Self::DoubleTap | Self::LongPress | Self::TypeText | Self::LaunchApp
        )
    }

    /// True for the coordinate tools whose target is a point on the screen (tap, double tap,
    /// long press).
    pub fn is_touch(self) -> bool {
        matches!(self, Self::Tap | Self::DoubleTap | Self::LongPress)
    }

    /// The tool of a parsed [`ActionKind`].
    pub fn of_action(kind: &ActionKind) -> Self {
        match kind {
            ActionKind::Tap { .. } => Self::Tap,
            ActionKind::DoubleTap { .. } => Self::DoubleTap,
            ActionKind::LongPress { .. } => Self::LongPress,
            ActionKind::Swipe { .. } => Self::Swipe,
            ActionKind::Type { .. } => Self::TypeText,
            ActionKind::Back => Self::Back,
            ActionKind::Home => Self::Home,
            ActionKind::Wait { .. } => Self::Wait,
            ActionKind::TakeOver { .. } => Self::TakeOver,
            ActionKind::AskUser { .. } => Self::AskUser,
            ActionKind::Note { .. } => Self::Note,
            ActionKind::Finish { .. } => Self::Finish,
            ActionKind::LaunchApp { .. } => Self::LaunchApp,
        }
    }
}

impl FromStr for Tool {
    type Err = Error;
    /// Accepts the `tools` names and the `do` names, case-insensitively, with spaces, hyphens or
    /// underscores (`Long Press`, `long-press`, `long_press`), plus `type` and `launch`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s
            .trim()
            .chars()
            .map(|c| match c {
                ' ' | '-' => '_',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        Ok(match key.as_str() {
            "tap" | "click" => Self::Tap,
            "double_tap" | "doubletap" => Self::DoubleTap,
            "long_press" | "longpress" => Self::LongPress,
            "type_text" | "type" | "type_name" => Self::TypeText,
            "launch_app" | "launch" => Self::LaunchApp,
            "swipe" => Self::Swipe,
            "scroll" => Self::Scroll,
            "back" => Self::Back,
            "home" => Self::Home,
            "wait" => Self::Wait,
            "ask_user" | "interact" => Self::AskUser,
            "take_over" | "takeover" => Self::TakeOver,
            "note" => Self::Note,
            "finish" => Self::Finish,
            _ => return Err(Error::UnknownTool(s.to_string())),
        })
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Language of receipts and console notices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// Chinese, the wording of source 000 § 预警文案.
    #[default]
    Zh,
    /// English.
    En,
}

impl FromStr for Lang {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zh" | "zh-cn" | "zh_cn" | "cn" | "chinese" => Ok(Self::Zh),
            "en" | "en-us" | "en_us" | "english" => Ok(Self::En),
            _ => Err(Error::UnknownLang(s.to_string())),
        }
    }
}

/// One call as the gate sees it (SPEC S3). Every text field is optional; missing text is simply
/// not evidence. Nothing here can lower a tier: each text source is classified on its own and the
/// tier is the maximum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateInput {
    /// The tool called.
    pub tool: Tool,
    /// What the model says it is pointing at (tools front end), e.g. `"「确认支付」按钮"`.
    #[serde(default)]
    pub target_description: Option<String>,
    /// The tool's text argument: the text of `type_text`, the app name of `launch_app`.
    #[serde(default)]
    pub text: Option<String>,
    /// The model's `reason` for the call.
    #[serde(default)]
    pub reason: Option<String>,
    /// The user's task, read for negated boundaries such as "不要发送" (SPEC S4).
    #[serde(default)]
    pub task: Option<String>,
    /// The model self-declared the call risky (`sensitive=true`, SPEC S3: hard before any branch).
    #[serde(default)]
    pub sensitive: bool,
    /// The model re-sent the call after a warning receipt (SPEC S6; read by [`crate::decide`] only).
    #[serde(default)]
    pub confirm_irreversible: bool,
    /// Whether the focused field is a password field, when the device or the virtual phone knows
    /// (`None` = unknown). `Some(true)` makes `type_text` hard.
    #[serde(default)]
    pub target_is_password_field: Option<bool>,
    /// Text read from the pixels around the target by an OCR engine, when one is configured
    /// (SPEC S3 "beyond the sources"). It can only raise the tier.
    #[serde(default)]
    pub ocr_text: Option<String>,
    /// The gate's own reading of the planning frame around the target (SPEC S10, S11), when
    /// the runtime has a screen reader. Every text in it is a classification source that can
    /// only raise the tier; see `docs/safety.md` § Screen reading.
    #[serde(default)]
    pub screen: Option<ScreenReading>,
}

impl GateInput {
    /// A call of `tool` with no text and both flags false.
    pub fn new(tool: Tool) -> Self {
        Self {
            tool,
            target_description: None,
            text: None,
            reason: None,
            task: None,
            sensitive: false,
            confirm_irreversible: false,
            target_is_password_field: None,
            ocr_text: None,
            screen: None,
        }
    }

    /// The gate input of a parsed model action under `task`: tool, target description, typed
    /// text or app name, reason and both flags. Password-field knowledge and OCR text are for the
    /// caller to add
    /// (`screen`: the runtime's screen reading, SPEC S10).
    pub fn from_action(action: &Action, task: Option<&str>) -> Self {
        let text = match &action.kind {
            ActionKind::Type { text } => Some(text.clone()),
            ActionKind::LaunchApp { name } => Some(name.clone()),
            _ => None,
        };
        Self {
            tool: Tool::of_action(&action.kind),
            target_description: action.target_description.clone(),
            text,
            reason: action.reason.clone(),
            task: task.map(str::to_string),
            sensitive: action.sensitive,
            confirm_irreversible: action.confirm_irreversible,
            target_is_password_field: None,
            ocr_text: None,
            screen: None,
        }
    }

    /// Builder: set the target description.
    pub fn target(mut self, s: impl Into<String>) -> Self {
        self.target_description = Some(s.into());
        self
    }

    /// Builder: set the text argument (typed text / app name).
    pub fn with_text(mut self, s: impl Into<String>) -> Self {
        self.text = Some(s.into());
        self
    }

    /// Builder: set the reason.
    pub fn with_reason(mut self, s: impl Into<String>) -> Self {
        self.reason = Some(s.into());
        self
    }

    /// Builder: set the task.
    pub fn with_task(mut self, s: impl Into<String>) -> Self {
        self.task = Some(s.into());
        self
    }

    /// Builder: set the screen reading (SPEC S10).
    pub fn with_screen(mut self, screen: ScreenReading) -> Self {
        self.screen = Some(screen);
        self
    }
}
