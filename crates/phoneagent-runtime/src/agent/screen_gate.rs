//! The gate's own eyes in the loop (SPEC S10, S11, P6).
//!
//! For every gated touch and every `type_text`, [`Run::read_screen`] reads the planning frame
//! around the target with the agent's [`ScreenReader`] (OCR, on a blocking thread): the text of
//! the element under the tap point, its dialog, the page title, its row, the focused field's
//! label. The reading goes to the gate as one more classification source (it can only raise a
//! tier), is recorded as a `screen_read` event, and is shown to a person who is asked.
//!
//! When the gate answers `visual_review` (an unreadable target where an irreversible effect is
//! plausible), [`Run::visual_review`] asks the isolated visual reviewer what the control does —
//! the safety reviewer's model sees the marked frame and a crop, never the conversation — and
//! [`visual_outcome`] turns its answer into run / warn / ask the person, failing closed.

use std::sync::Arc;

use phoneagent_llm::config::Role;
use phoneagent_llm::ledger::CallKind;
use phoneagent_protocol::event::MappedPoint;
use phoneagent_protocol::{
    AccessMode, Action, ActionKind, AgentEvent, ScreenGeometry, ScreenReading,
};
use phoneagent_review::visual::{VisualEffect, VisualReviewError, VisualReviewer, VisualVerdict};
use phoneagent_safety::{EffectKind, TaskAnalysis};
use phoneagent_vision::{ReadPurpose, ScreenReader};

use super::{Agent, Obs, Run};

impl Agent {
    /// Give the gate its own eyes (SPEC S10): every gated action's target is read from the
    /// planning frame with `reader` (Tesseract OCR, see `phoneagent-vision`). `None` leaves
    /// screen reading off (the gate then sees only the model's words; `phoneagent doctor` says
    /// so). Call before the first run; on an agent with a run going this does nothing.
    pub fn with_screen_reader(mut self, reader: Option<Arc<ScreenReader>>) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.screen_reader = reader,
            None => tracing::warn!("screen reader not set: a run holds the agent"),
        }
        self
    }

    /// True when the gate reads the screen (a reader is configured).
    pub fn screen_reading_on(&self) -> bool {
        self.shared.screen_reader.is_some()
    }
}

/// What the isolated visual review leads to (SPEC S11, S12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum VisualOutcome {
    /// The reviewer saw nothing irreversible: run it.
    Run,
    /// An effect the task asked for, not yet confirmed by the model (wary/reviewer): warning
    /// receipt, as for any hard call.
    Warn,
    /// Everything else (an effect the task did not ask for, an unknown effect, no reviewer, a
    /// failure): the person decides.
    AskPerson,
}

/// The safety crate's effect kind of what the visual reviewer saw (`None` for no effect or one
/// it could not name).
fn effect_kind(e: VisualEffect) -> Option<EffectKind> {
    Some(match e {
        VisualEffect::Payment => EffectKind::Payment,
        VisualEffect::Order => EffectKind::Order,
        VisualEffect::Purchase => EffectKind::Purchase,
        VisualEffect::Transfer => EffectKind::Transfer,
        VisualEffect::Send => EffectKind::Send,
        VisualEffect::Publish => EffectKind::Publish,
        VisualEffect::Delete => EffectKind::Delete,
        VisualEffect::Subscribe => EffectKind::Subscribe,
        VisualEffect::Account => EffectKind::Account,
        VisualEffect::Credential => EffectKind::Credential,
        VisualEffect::None | VisualEffect::OtherIrreversible | VisualEffect::Unknown => {
            return None;
        }
    })
}

/// Decide on a visual review's result (SPEC S11, S12): reversible → run; an irreversible
/// effect the task asks for → the model must confirm as for any hard call in wary/reviewer
/// (warning receipt first, then it runs), the person in the other modes; anything else, and
/// every failure, → the person.
pub(super) fn visual_outcome(
    verdict: &Result<VisualVerdict, VisualReviewError>,
    task: &str,
    mode: AccessMode,
    confirmed: bool,
) -> VisualOutcome {
    let v = match verdict {
        Ok(v) => v,
        Err(_) => return VisualOutcome::AskPerson,
    };
    if !v.irreversible && v.effect == VisualEffect::None && v.parsed {
        return VisualOutcome::Run;
    }
    let authorized = effect_kind(v.effect).is_some_and(|k| TaskAnalysis::of(task).authorizes(k));
    match mode {
        AccessMode::Wary | AccessMode::Reviewer if authorized => {
            if confirmed {
                VisualOutcome::Run
            } else {
                VisualOutcome::Warn
            }
        }
        _ => VisualOutcome::AskPerson,
    }
}

/// A short, redacted one-line summary of a reading for the person asked (SPEC S14: the prompt
/// shows the gate's own reading): the target's text (or that it holds none), its dialog.
pub(super) fn summarize(r: &ScreenReading) -> String {
    let cut = |s: &str, n: usize| -> String {
        let s = phoneagent_safety::redact_text(&phoneagent_protocol::text::inert_line(s));
        if s.chars().count() > n {
            format!("{}…", s.chars().take(n).collect::<String>())
        } else {
            s
        }
    };
    let mut out = match (&r.target_text, r.target_unreadable) {
        (Some(t), _) if !t.trim().is_empty() => format!("「{}」", cut(t, 40)),
        (_, true) => "an icon or image with no readable text".to_string(),
        _ => "nothing readable".to_string(),
    };
    if !r.nearby_texts.is_empty() {
        let near: Vec<String> = r
            .nearby_texts
            .iter()
            .map(|t| format!("「{}」", cut(t, 30)))
            .collect();
        out.push_str(&format!(" · next to {}", near.join(" ")));
    }
    if r.nearby_unreadable {
        out.push_str(" · next to an unreadable icon");
    }
    if let Some(d) = &r.dialog {
        let title = d.title.as_deref().map(|t| cut(t, 40)).unwrap_or_default();
        let body = d.body.as_deref().map(|b| cut(b, 80)).unwrap_or_default();
        out.push_str(&format!(" · in a dialog 「{title}」 {body}"));
    } else if let Some(p) = &r.page_title {
        out.push_str(&format!(" · on the page 「{}」", cut(p, 30)));
    }
    if let Some(l) = &r.field_label {
        out.push_str(&format!(" · field 「{}」", cut(l, 30)));
    }
    out
}

/// True when the reading found nothing under or next to its point: no text, no icon, no
/// nearby element, no dialog — a touch on empty space, which leaves the focused field focused
/// (SPEC P6, S3).
pub(super) fn reads_nothing(r: &ScreenReading) -> bool {
    r.target_text.as_deref().is_none_or(|t| t.trim().is_empty())
        && !r.target_unreadable
        && r.nearby_texts.is_empty()
        && !r.nearby_unreadable
        && r.dialog.is_none()
}

/// Android's touch slop floor, px: a move shorter than this is no drag (SPEC S10).
const TOUCH_SLOP_MIN_PX: f64 = 24.0;

/// True when a swipe from `points[0]` to `points[1]` is delivered as a click (SPEC S10, S3):
/// its start and end are within touch slop (device px distance < max(24 px, 3 % of the screen's
/// short side); Android and the virtual phone turn such a move into a tap), or its end lies
/// inside the bounds of the element under its start point as the screen reader saw it
/// (Android's View clicks when a press starts and ends inside the same pressed view). Such a
/// swipe is gated exactly as a Tap at its start point; a real scroll (a long move leaving the
/// element) is not.
pub(super) fn swipe_is_tap(
    points: &[MappedPoint],
    geometry: &ScreenGeometry,
    screen: Option<&ScreenReading>,
) -> bool {
    let (Some(a), Some(b)) = (points.first(), points.get(1)) else {
        return false;
    };
    let (a, b) = (a.device, b.device);
    let dx = f64::from(a.x) - f64::from(b.x);
    let dy = f64::from(a.y) - f64::from(b.y);
    let short = f64::from(geometry.width_px.min(geometry.height_px));
    let slop = TOUCH_SLOP_MIN_PX.max(0.03 * short);
    if dx.hypot(dy) < slop {
        return true;
    }
    screen
        .and_then(|r| r.target_bounds)
        .is_some_and(|bounds| bounds.contains(b.x, b.y))
}

/// True when a Double Tap on what the screen reader saw must be refused (SPEC S10, S3): the
/// second tap of a double tap lands on whatever the first one opened, a target nobody saw on
/// the planning frame (a 去结算 whose 提交订单 opens under the finger). Double tap is for
/// content — zooming an image or a map — never for controls; and the reader cannot tell a
/// button's or a row's label from body text, so the simplest rule that closes the class is:
/// anything with readable text, an icon (unreadable drawing) or a filled / destructive style
/// under the point is a control, and the double tap is refused with zero touches. Only a
/// target with none of these (an image, a map, a blank area) is gated as a Tap. Without a
/// reader the runtime cannot see the target at all, and every Double Tap goes to the person
/// in every mode but off (see `Run::handle_action`).
pub(super) fn double_tap_on_control(r: &ScreenReading) -> bool {
    r.target_style.filled
        || r.target_style.destructive
        || r.target_unreadable
        || r.target_text
            .as_deref()
            .is_some_and(|t| !t.trim().is_empty())
        || r.dialog.is_some()
}

/// Text lines read when a `type_text` has no touch before it (its field was focused when the
/// page opened): enough for a login form or a payment sheet.
const FOCUS_UNKNOWN_LINES: usize = 16;

impl Run {
    /// Read the planning frame around `action`'s target (SPEC S10). Touches read at their point;
    /// `type_text` reads the field the last touch focused. `None` without a reader, or for a
    /// `type_text` with no touch before it. Emits `screen_read`.
    pub(super) async fn read_screen(
        &mut self,
        action: &Action,
        obs: &Obs,
        points: &[MappedPoint],
    ) -> Option<ScreenReading> {
        let reader = self.agent.screen_reader.clone()?;
        let (point, purpose) = match &action.kind {
            ActionKind::Tap { .. }
            | ActionKind::DoubleTap { .. }
            | ActionKind::LongPress { .. }
            // A swipe is read at its start point: the element under it decides whether the
            // gesture is delivered as a click (see `swipe_is_tap`).
            | ActionKind::Swipe { .. } => {
                let p = points.first()?.device;
                ((p.x, p.y), ReadPurpose::Tap)
            }
            ActionKind::Type { .. } => (self.last_touch_point?, ReadPurpose::Type),
            _ => return None,
        };
        let frame = Arc::as_ptr(&obs.shot.image) as usize;
        let reused = match self.field_read.take() {
            Some((f, p, r)) if purpose == ReadPurpose::Type && f == frame && p == point => Some(r),
            _ => None,
        };
        let reading = match reused {
            Some(r) => r,
            None => Self::ocr(reader, obs, point, purpose).await?,
        };
        self.bus.emit(AgentEvent::ScreenRead {
            tool: action.kind.name().into(),
            point: Some(phoneagent_protocol::DevicePoint {
                x: point.0,
                y: point.1,
            }),
            reading: reading.clone(),
        });
        Some(reading)
    }

    /// Read the field the last touch focused on the planning frame (SPEC P6), before the
    /// answer that types into it is recorded; kept for the gate's read of the same frame and
    /// point. With no touch before (a field focused when its page opened, such as a payment
    /// password sheet), the screen's text lines are read instead and the first credential
    /// label among them is the field's label. `None` without a reader.
    pub(super) async fn read_field(&mut self, obs: &Obs) -> Option<ScreenReading> {
        let reader = self.agent.screen_reader.clone()?;
        let Some(point) = self.last_touch_point else {
            let img = obs.shot.image.clone();
            let centre = (img.width() / 2, img.height() / 2);
            let lines = tokio::task::spawn_blocking(move || {
                let _phase = crate::phase!("screen_read");
                reader.screen_text(&img, centre, FOCUS_UNKNOWN_LINES)
            })
            .await
            .ok()?;
            let label = lines
                .into_iter()
                .find(|l| crate::secrets::is_credential_label(l))?;
            return Some(ScreenReading {
                field_label: Some(label),
                ..ScreenReading::default()
            });
        };
        let reading = Self::ocr(reader, obs, point, ReadPurpose::Type).await?;
        let frame = Arc::as_ptr(&obs.shot.image) as usize;
        self.field_read = Some((frame, point, reading.clone()));
        Some(reading)
    }

    /// One OCR reading on a blocking thread.
    async fn ocr(
        reader: Arc<ScreenReader>,
        obs: &Obs,
        point: (u32, u32),
        purpose: ReadPurpose,
    ) -> Option<ScreenReading> {
        let img = obs.shot.image.clone();
        // The phase span lives on the blocking thread: an entered span must not cross an await.
        let reading = tokio::task::spawn_blocking(move || {
            let _phase = crate::phase!("screen_read");
            reader.read(&img, point, purpose)
        })
        .await
        .ok()?;
        Some(reading)
    }

    /// The isolated visual review of the control at `points[0]` of the planning frame (SPEC
    /// S11): the safety reviewer's model sees the marked frame and a crop, nothing else. No
    /// reviewer configured → [`VisualReviewError::Unavailable`].
    pub(super) async fn visual_review(
        &mut self,
        obs: &Obs,
        points: &[MappedPoint],
    ) -> Result<VisualVerdict, VisualReviewError> {
        let Some(p) = points.first().map(|p| p.device) else {
            return Err(VisualReviewError::Encode("the action has no point".into()));
        };
        let Some(route) = self.agent.parts.safety_reviewer.clone() else {
            return Err(VisualReviewError::Unavailable);
        };
        let reviewer = VisualReviewer::new(Some(route.client.clone()), route.profile.image);
        let (verdict, resp) = reviewer
            .review(&obs.shot.image, (p.x, p.y), &self.cancel)
            .await;
        if let Some(resp) = resp {
            self.account(
                Role::SafetyReviewer,
                CallKind::SafetyReviewer,
                &route,
                Ok(&resp),
            );
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(effect: VisualEffect, irreversible: bool) -> Result<VisualVerdict, VisualReviewError> {
        Ok(VisualVerdict {
            effect,
            irreversible,
            label: None,
            parsed: true,
        })
    }

    #[test]
    fn only_a_reversible_answer_runs_without_the_person_or_the_task() {
        let t = "Check my notifications";
        assert_eq!(
            visual_outcome(&v(VisualEffect::None, false), t, AccessMode::Wary, false),
            VisualOutcome::Run
        );
        // An effect the task never asked for goes to the person, even confirmed.
        for mode in [
            AccessMode::Wary,
            AccessMode::Reviewer,
            AccessMode::ApproveForMe,
        ] {
            assert_eq!(
                visual_outcome(&v(VisualEffect::Send, true), t, mode, true),
                VisualOutcome::AskPerson
            );
        }
        // Failures and unknowns fail closed.
        assert_eq!(
            visual_outcome(
                &Err(VisualReviewError::Unavailable),
                t,
                AccessMode::Wary,
                true
            ),
            VisualOutcome::AskPerson
        );
        assert_eq!(
            visual_outcome(&v(VisualEffect::Unknown, true), t, AccessMode::Wary, true),
            VisualOutcome::AskPerson
        );
    }

    #[test]
    fn an_effect_the_task_asks_for_needs_the_model_confirmation_in_wary() {
        let t = "Send the mail to Bob";
        assert_eq!(
            visual_outcome(&v(VisualEffect::Send, true), t, AccessMode::Wary, false),
            VisualOutcome::Warn
        );
        assert_eq!(
            visual_outcome(&v(VisualEffect::Send, true), t, AccessMode::Wary, true),
            VisualOutcome::Run
        );
        assert_eq!(
            visual_outcome(&v(VisualEffect::Send, true), t, AccessMode::Hard, true),
            VisualOutcome::AskPerson
        );
    }
}
