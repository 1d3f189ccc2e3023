//! Per-run settings of the two action front ends (SPEC A1, A3, A5, D5, M4).

use serde::{Deserialize, Serialize};

use crate::action::MAX_META_CHARS;

/// Bounds and capabilities the parsers validate against. One value per run: the coordinate
/// bounds come from the frozen coordinate contract (SPEC M4), the rest from the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseOptions {
    /// Largest valid x in the frozen model coordinate space, inclusive (`999` for
    /// `relative_0_999`, image width − 1 for `image_pixels`). Larger values are rejected,
    /// never clamped (SPEC M5).
    pub coord_max_x: f64,
    /// Largest valid y, inclusive (`999` for `relative_0_999`).
    pub coord_max_y: f64,
    /// Longest `Wait`, in seconds (SPEC A3). A wait must be `> 0` and `<=` this.
    pub max_wait_secs: f64,
    /// Longest long-press / swipe gesture, in ms.
    pub max_gesture_ms: u32,
    /// Longest `Type` text, in chars.
    pub max_text_chars: usize,
    /// Longest message (`finish`, `Note`, `Take_over`, `Interact`, `Launch` app name), in chars.
    pub max_message_chars: usize,
    /// The opt-in app-launcher capability (SPEC D5): `Launch` / `launch_app` are only accepted
    /// when this is on.
    pub app_launcher: bool,
    /// The user's task, when known: a swipe direction named in it must agree with every swipe
    /// (SPEC A5).
    pub task: Option<String>,
}

impl Default for ParseOptions {
    /// `relative_0_999` bounds, waits up to 30 s, gestures up to 10 s, texts up to 4000 chars,
    /// app launcher off, no task.
    fn default() -> Self {
        Self {
            coord_max_x: 999.0,
            coord_max_y: 999.0,
            max_wait_secs: 30.0,
            max_gesture_ms: 10_000,
            max_text_chars: MAX_META_CHARS,
            max_message_chars: MAX_META_CHARS,
            app_launcher: false,
            task: None,
        }
    }
}

impl ParseOptions {
    /// Defaults for the `relative_0_999` space (`0..=999` on both axes).
    pub fn relative_0_999() -> Self {
        Self::default()
    }

    /// Defaults for the `image_pixels` / `display_pixels` spaces of a `width` × `height` px
    /// image: `0..=width-1`, `0..=height-1`.
    pub fn pixels(width: u32, height: u32) -> Self {
        Self {
            coord_max_x: f64::from(width.saturating_sub(1)),
            coord_max_y: f64::from(height.saturating_sub(1)),
            ..Self::default()
        }
    }

    /// Same options with the user's task set (for the SPEC A5 direction check).
    pub fn with_task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Same options with the app-launcher capability switched on or off.
    pub fn with_app_launcher(mut self, on: bool) -> Self {
        self.app_launcher = on;
        self
    }
}

/// What the tool schemas offer and describe (SPEC A1, D5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOptions {
    /// Include `launch_app` (SPEC D5; off by default).
    pub app_launcher: bool,
    /// Largest valid x, inclusive, written into the coordinate descriptions.
    pub coord_max_x: f64,
    /// Largest valid y, inclusive.
    pub coord_max_y: f64,
    /// Longest wait in seconds, written into the `wait` schema.
    pub max_wait_secs: f64,
    /// Longest long-press / swipe gesture in ms, written into the gesture schemas.
    pub max_gesture_ms: u32,
}

impl Default for ToolOptions {
    fn default() -> Self {
        ToolOptions::from(&ParseOptions::default())
    }
}

impl From<&ParseOptions> for ToolOptions {
    fn from(o: &ParseOptions) -> Self {
        Self {
            app_launcher: o.app_launcher,
            coord_max_x: o.coord_max_x,
            coord_max_y: o.coord_max_y,
            max_wait_secs: o.max_wait_secs,
            max_gesture_ms: o.max_gesture_ms,
        }
    }
}

/// Formats a bound for messages and prompts: `999`, not `999.0`.
pub(crate) fn fmt_num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        #[allow(clippy::cast_possible_truncation)]
        let i = v as i64;
        i.to_string()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_options_use_last_pixel_as_bound() {
        let o = ParseOptions::pixels(1080, 2400);
        assert_eq!(o.coord_max_x, 1079.0);
        assert_eq!(o.coord_max_y, 2399.0);
        assert!(!o.app_launcher);
    }

    #[test]
    fn fmt_num_prints_integers_without_fraction() {
        assert_eq!(fmt_num(999.0), "999");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(0.1), "0.1");
    }
}
