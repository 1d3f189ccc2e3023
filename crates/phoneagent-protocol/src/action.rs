//! The one internal action type (SPEC A1, A3, A6).
//!
//! Both model front ends — OpenAI tool calls and the `do(...)` text grammar — parse into
//! [`Action`]. Coordinates stay as the model emitted them ([`ModelPoint`], in the frozen
//! coordinate space); the `CoordinateMapper` turns them into runtime and device points.

use serde::{Deserialize, Serialize};

use crate::geometry::ModelPoint;

/// Maximum length, in chars, of `screen_description` and `reason` (SPEC A3).
pub const MAX_META_CHARS: usize = 4000;

/// One item of the model's task board (SPEC F1), kept through `note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct TaskItem {
    /// Short sub-goal text.
    pub text: String,
    /// Whether the model has checked it off.
    pub done: bool,
}

/// What the model asked for. Serialized with an `action` tag in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ActionKind {
    /// Tap at `element` (gated, SPEC S2).
    Tap {
        /// Target in model space.
        element: ModelPoint,
    },
    /// Two taps in quick succession at `element` (gated as Tap in the `do` front end).
    DoubleTap {
        /// Target in model space.
        element: ModelPoint,
    },
    /// Press and hold at `element` (gated).
    LongPress {
        /// Target in model space.
        element: ModelPoint,
        /// Hold time in ms; `None` uses the runtime default.
        duration_ms: Option<u32>,
    },
    /// Finger moves from `start` to `end` (direction = finger motion on the screenshot, SPEC A5).
    /// The `scroll` tool is parsed into a swipe.
    Swipe {
        /// Start in model space.
        start: ModelPoint,
        /// End in model space.
        end: ModelPoint,
        /// Gesture time in ms; `None` uses the runtime default.
        duration_ms: Option<u32>,
    },
    /// Type `text` into the focused field (gated). The text is kept exactly.
    Type {
        /// The text, any Unicode.
        text: String,
    },
    /// Back keyevent.
    Back,
    /// Home keyevent.
    Home,
    /// Wait, bounded by the configured maximum.
    Wait {
        /// Seconds to wait (`0 < seconds <= max`).
        seconds: f64,
    },
    /// Ask the human to operate the phone (interrupts in every mode).
    TakeOver {
        /// What the human should do.
        message: String,
    },
    /// Ask the human a question (the `do` grammar's `Interact`); the answer returns verbatim.
    AskUser {
        /// The question.
        question: String,
    },
    /// Record a note / update the task board; touches nothing.
    Note {
        /// Free text.
        message: String,
        /// The model's checklist of sub-goals, when it sends one.
        task_board: Option<Vec<TaskItem>>,
    },
    /// Claim the task is done. First call returns a review package; `confirm=true` finalizes
    /// (SPEC F1). Never touches the device.
    Finish {
        /// The result / answer for the user.
        message: String,
        /// Second stage of the two-stage finish.
        confirm: bool,
    },
    /// Launch an app by its visible name; only when the app-launcher capability is on (D5).
    LaunchApp {
        /// The app name as the user would say it.
        name: String,
    },
}

/// Names ([`ActionKind::name`]) of the executing tools the safety gate looks at (SPEC S2): the
/// only tools an approval request can be about.
pub const GATED_TOOLS: [&str; 5] = ["tap", "double_tap", "long_press", "type_text", "launch_app"];

impl ActionKind {
    /// Stable name of the action type (`tap`, `double_tap`, …, `finish`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Tap { .. } => "tap",
            Self::DoubleTap { .. } => "double_tap",
            Self::LongPress { .. } => "long_press",
            Self::Swipe { .. } => "swipe",
            Self::Type { .. } => "type_text",
            Self::Back => "back",
            Self::Home => "home",
            Self::Wait { .. } => "wait",
            Self::TakeOver { .. } => "take_over",
            Self::AskUser { .. } => "ask_user",
            Self::Note { .. } => "note",
            Self::Finish { .. } => "finish",
            Self::LaunchApp { .. } => "launch_app",
        }
    }

    /// True for the executing tools the safety gate looks at (SPEC S2): tap, double tap,
    /// long press, type, launch_app.
    pub fn is_gated(&self) -> bool {
        matches!(
            self,
            Self::Tap { .. }
                | Self::DoubleTap { .. }
                | Self::LongPress { .. }
                | Self::Type { .. }
                | Self::LaunchApp { .. }
        )
    }

    /// True when dispatching this action sends a command to the device.
    pub fn touches_device(&self) -> bool {
        matches!(
            self,
            Self::Tap { .. }
                | Self::DoubleTap { .. }
                | Self::LongPress { .. }
                | Self::Swipe { .. }
                | Self::Type { .. }
                | Self::Back
                | Self::Home
                | Self::LaunchApp { .. }
        )
    }
}

/// One parsed, schema-valid model action with its planning metadata (SPEC A3, A6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct Action {
    /// What to do.
    #[serde(flatten)]
    pub kind: ActionKind,
    /// The model's description of the current screen (≤ 4000 chars). Missing is tolerated.
    pub screen_description: Option<String>,
    /// Why this action (≤ 4000 chars). Missing is tolerated. May only *raise* a risk tier.
    pub reason: Option<String>,
    /// What the model says it is pointing at (tools front end), used as gate target text.
    pub target_description: Option<String>,
    /// The model confirms an irreversible call after a warning receipt (SPEC S6).
    pub confirm_irreversible: bool,
    /// The model self-declares the call risky (SPEC S3: → hard).
    pub sensitive: bool,
}

impl Action {
    /// A bare action with no metadata and both flags false.
    pub fn new(kind: ActionKind) -> Self {
        Self {
            kind,
            screen_description: None,
            reason: None,
            target_description: None,
            confirm_irreversible: false,
            sensitive: false,
        }
    }
}
