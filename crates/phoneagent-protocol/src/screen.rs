//! What the screen shows around a gated action, read from the planning frame's pixels by an OCR
//! engine (SPEC S10, S11, P6).
//!
//! The vision crate produces a [`ScreenReading`] for every gated action (tap, double tap, long
//! press, type_text) from the frame the model planned on; the safety gate treats each text field
//! as one more classification source that can only raise a tier. Nothing here is shown to the
//! planning model (SPEC P1): it is the gate's own reading, recorded in the gate's audit event.
//!
//! Coordinates are device pixels of the planning frame (`px`, origin top left).

use serde::{Deserialize, Serialize};

/// An axis-aligned box in device pixels of the frame it was read from (`px`, inclusive left/top,
/// exclusive right/bottom).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct PxRect {
    /// Left edge, px.
    pub left: u32,
    /// Top edge, px.
    pub top: u32,
    /// Right edge (exclusive), px.
    pub right: u32,
    /// Bottom edge (exclusive), px.
    pub bottom: u32,
}

impl PxRect {
    /// True when the point `(x, y)` (px) lies inside the box.
    pub fn contains(&self, x: u32, y: u32) -> bool {
        x >= self.left && x < self.right && y >= self.top && y < self.bottom
    }
    /// Width in px (0 for a degenerate box).
    pub fn width(&self) -> u32 {
        self.right.saturating_sub(self.left)
    }
    /// Height in px (0 for a degenerate box).
    pub fn height(&self) -> u32 {
        self.bottom.saturating_sub(self.top)
    }
}

/// A modal dialog (a card over a dimmed screen) that contains the target (SPEC S10: a bare
/// 确定 / OK / Yes takes its meaning from the dialog it sits in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct DialogReading {
    /// The card's box, px (all zero when the reader did not report one).
    #[serde(default)]
    pub bounds: PxRect,
    /// The dialog's title (its first text line), when one was read.
    #[serde(default)]
    pub title: Option<String>,
    /// The dialog's body text (the lines between the title and the button row).
    #[serde(default)]
    pub body: Option<String>,
    /// The labels of the dialog's buttons, left to right.
    #[serde(default)]
    pub buttons: Vec<String>,
    /// True when the target is the dialog's primary (affirmative, usually rightmost or filled)
    /// button.
    #[serde(default)]
    pub target_is_primary: bool,
}

/// How the control under the tap point looks (SPEC S11 and the "shape of a commitment").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct TargetStyle {
    /// A filled button in a saturated colour (the screen's primary call to action).
    #[serde(default)]
    pub filled: bool,
    /// A red/destructive fill or text colour.
    #[serde(default)]
    pub destructive: bool,
}

/// The gate's own reading of the planning frame around one gated action (SPEC S10, S11).
///
/// Every text is as read (not normalized, not redacted); the gate normalizes it before matching
/// and redacts it before it stores or shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct ScreenReading {
    /// The text of the element under the tap point (a button's label, a list row's text).
    #[serde(default)]
    pub target_text: Option<String>,
    /// The element under the tap point, px, when one was found.
    #[serde(default)]
    pub target_bounds: Option<PxRect>,
    /// True when something is drawn under the tap point but no text could be read from it (an
    /// icon, an image button): the gate cannot classify it by text (SPEC S11).
    #[serde(default)]
    pub target_unreadable: bool,
    /// How the target looks.
    #[serde(default)]
    pub target_style: TargetStyle,
    /// The texts of the other elements a touch at this point may hit: when the point lies on
    /// no element's ink (the edge of a top bar's Send button, the padding between two
    /// controls), every element whose ink is within a touch target of it — 1/12 of the frame's
    /// short side above or below (≈ 34 dp on a 1080 px wide phone), twice that to the side,
    /// px — nearest first, at most 3. Empty when
    /// the point is on the target's ink or inside a bounded control that is all one target
    /// (SPEC S10: the gate classifies each like the target; they can only raise the tier).
    #[serde(default)]
    pub nearby_texts: Vec<String>,
    /// True when one of those nearby elements is drawn but reads as no text (an icon-only
    /// Send beside the point): the touch may hit an icon whose meaning was not read (SPEC S11;
    /// the gate treats it like an unreadable target).
    #[serde(default)]
    pub nearby_unreadable: bool,
    /// The dialog the target sits in, if any.
    #[serde(default)]
    pub dialog: Option<DialogReading>,
    /// The page's title (the top bar's text).
    #[serde(default)]
    pub page_title: Option<String>,
    /// The other labels on the target's row (siblings of a button in a bottom bar).
    #[serde(default)]
    pub button_row: Vec<String>,
    /// For `type_text`: the label or hint of the focused field (what the last tap focused),
    /// e.g. "密码" / "Password" (SPEC P6, S3 password-field rule).
    #[serde(default)]
    pub field_label: Option<String>,
    /// The rest of the screen's text lines, top to bottom, bounded by the reader (screen-level
    /// context: a compose screen, a checkout, a danger zone).
    #[serde(default)]
    pub screen_lines: Vec<String>,
    /// The engine that read it (`tesseract 5.3.0`, …).
    #[serde(default)]
    pub engine: String,
    /// Time the reading took, ms.
    #[serde(default)]
    pub elapsed_ms: u32,
}

impl ScreenReading {
    /// Every text of the reading with the field it came from, in a stable order: target,
    /// nearby elements, dialog title, dialog body, dialog buttons, page title, button row, field label, screen
    /// lines. Empty texts are skipped.
    pub fn texts(&self) -> Vec<(ScreenField, &str)> {
        fn push<'a>(out: &mut Vec<(ScreenField, &'a str)>, f: ScreenField, s: &'a str) {
            if !s.trim().is_empty() {
                out.push((f, s));
            }
        }
        let mut out = Vec::new();
        if let Some(t) = &self.target_text {
            push(&mut out, ScreenField::Target, t);
        }
        for t in &self.nearby_texts {
            push(&mut out, ScreenField::Nearby, t);
        }
        if let Some(d) = &self.dialog {
            if let Some(t) = &d.title {
                push(&mut out, ScreenField::DialogTitle, t);
            }
            if let Some(b) = &d.body {
                push(&mut out, ScreenField::DialogBody, b);
            }
            for b in &d.buttons {
                push(&mut out, ScreenField::DialogButton, b);
            }
        }
        if let Some(t) = &self.page_title {
            push(&mut out, ScreenField::PageTitle, t);
        }
        for b in &self.button_row {
            push(&mut out, ScreenField::ButtonRow, b);
        }
        if let Some(l) = &self.field_label {
            push(&mut out, ScreenField::FieldLabel, l);
        }
        for l in &self.screen_lines {
            push(&mut out, ScreenField::ScreenLine, l);
        }
        out
    }
}

/// Which part of a [`ScreenReading`] a text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ScreenField {
    /// The element under the tap point.
    Target,
    /// An element next to a tap point that lies on no element (`nearby_texts`).
    Nearby,
    /// The dialog's title.
    DialogTitle,
    /// The dialog's body.
    DialogBody,
    /// One of the dialog's buttons.
    DialogButton,
    /// The page title.
    PageTitle,
    /// A sibling on the target's row.
    ButtonRow,
    /// The focused field's label.
    FieldLabel,
    /// Any other line of the screen.
    ScreenLine,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_lists_every_field_in_order_and_skips_blanks() {
        let r = ScreenReading {
            target_text: Some("确定".into()),
            nearby_texts: vec!["发送".into()],
            dialog: Some(DialogReading {
                title: Some("删除账号".into()),
                body: Some("此操作不可撤销".into()),
                buttons: vec!["取消".into(), "确定".into()],
                ..Default::default()
            }),
            page_title: Some(" ".into()),
            screen_lines: vec!["设置".into()],
            ..Default::default()
        };
        let fields: Vec<_> = r.texts().into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            vec![
                ScreenField::Target,
                ScreenField::Nearby,
                ScreenField::DialogTitle,
                ScreenField::DialogBody,
                ScreenField::DialogButton,
                ScreenField::DialogButton,
                ScreenField::ScreenLine
            ]
        );
    }

    #[test]
    fn rect_contains_is_half_open() {
        let r = PxRect {
            left: 10,
            top: 20,
            right: 30,
            bottom: 40,
        };
        assert!(r.contains(10, 20));
        assert!(!r.contains(30, 20));
        assert!(!r.contains(10, 40));
        assert_eq!((r.width(), r.height()), (20, 20));
    }
}
