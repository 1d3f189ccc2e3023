//! Dispatch and verification (SPEC R3, R4, R5, P6, F4): the freshness re-check before (and
//! after a pause), the device command (the one place a typed secret is real again), the settle,
//! the verification frame and its pixel diff, and the repeat / no-effect loop guard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use phoneagent_device::{DeviceError, KeyCode};
use phoneagent_protocol::event::{
    HumanRequestKind, HumanResponse, MappedPoint, RecoveryOutcome, VerificationFacts,
};
use phoneagent_protocol::{
    Action, ActionKind, AgentEvent, DevicePoint, EndReason, ErrorCode, FreshnessOutcome,
    ObservationPurpose, Phase, RunStatus,
};

use crate::memory::{Turn, summarize_action};
use crate::pixels::{Rect, changed_fraction};

use super::{Flow, Obs, Run, Signature};

impl Run {
    pub(super) async fn dispatch_and_verify(
        &mut self,
        action: Action,
        obs: &Obs,
        points: Vec<MappedPoint>,
    ) -> Flow {
        let action_type = action.kind.name();
        // R3: freshness for coordinate actions.
        if !points.is_empty() {
            match self.freshness(obs, &points).await {
                Ok(true) => {}
                Ok(false) => {
                    self.recover(
                        RecoveryOutcome::Replan,
                        ErrorCode::StaleAction,
                        Some(action_type),
                        "screen changed before dispatch",
                        false,
                    );
                    self.reject_turn(
                        &action,
                        "Not executed (zero touches): the screen changed between your screenshot and the action. \
                         Re-plan on the new screenshot."
                            .into(),
                    );
                    return Flow::Continue;
                }
                Err(f) => return f,
            }
        }
        if let ActionKind::Wait { seconds } = &action.kind {
            let secs = seconds.min(self.cfg().wait_max_secs).max(0.0);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => {}
                _ = self.cancel.cancelled() => return self.cancelled_flow(),
            }
            self.ok_turn(&action, format!("Waited {secs} s."));
            return Flow::Continue;
        }
        if self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        if let Some(e) = self.bus.take_write_error() {
            return Self::end(
                RunStatus::Failed,
                ErrorCode::Store,
                format!("could not record the run: {e}"),
            );
        }
        // A pause requested while planning holds the action here; the screen may change while
        // paused, so the action is re-checked for freshness after the pause.
        if self.agent.pause.is_paused() {
            if let Err(f) = self.pause_point().await {
                return f;
            }
            if !points.is_empty() {
                match self.freshness(obs, &points).await {
                    Ok(true) => {}
                    Ok(false) => {
                        self.recover(
                            RecoveryOutcome::Replan,
                            ErrorCode::StaleAction,
                            Some(action_type),
                            "screen changed while paused",
                            false,
                        );
                        self.reject_turn(
                            &action,
                            "Not executed (zero touches): the screen changed while the run was paused. \
                             Re-plan on the new screenshot."
                                .into(),
                        );
                        return Flow::Continue;
                    }
                    Err(f) => return f,
                }
            }
        }
        // Dispatch.
        self.set_phase(Phase::Executing);
        let before = self
            .last_frame
            .clone()
            .unwrap_or_else(|| obs.shot.image.clone());
        let devp: Vec<DevicePoint> = points.iter().map(|p| p.device).collect();
        let t0 = Instant::now();
        let result = self.send(&action, &devp).await;
        let duration_ms = t0.elapsed().as_millis() as u64;
        match result {
            Ok(()) => {
                self.bus.emit(AgentEvent::ActionDispatched {
                    action_type: action_type.into(),
                    device_points: devp.clone(),
                    command_ok: true,
                    error: None,
                    message: None,
                    duration_ms,
                });
            }
            Err(e) => {
                self.bus.emit(AgentEvent::ActionDispatched {
                    action_type: action_type.into(),
                    device_points: devp.clone(),
                    command_ok: false,
                    error: Some(e.code()),
                    message: Some(e.to_string()),
                    duration_ms,
                });
                self.memory.push(Turn {
                    step: self.step,
                    action: summarize_action(&action),
                    screen_description: action.screen_description.clone(),
                    reason: action.reason.clone(),
                    result: format!("the command failed: {e}"),
                    rejected: false,
                    rejected_count: 0,
                });
                return self.device_error_flow(e, Some(action_type)).await;
            }
        }
        self.guards.record_dispatched(&action);
        // R4: verification by pixel diff.
        self.set_phase(Phase::Verifying);
        // The settle is the device's (a stream watches frames; screencap sleeps), and a
        // settle that watched frames hands over its last one as the verification frame.
        let settled = match self
            .device()
            .settle(self.cfg().settle(), &self.cancel)
            .await
        {
            Ok(s) => s,
            Err(e) => return self.device_error_flow(e, Some(action_type)).await,
        };
        let paused_before = self.paused_for;
        if let Err(f) = self.pause_point().await {
            return f;
        }
        let shot = match settled {
            // A pause in between: the human may have changed the screen.
            Some(shot) if self.paused_for == paused_before => Ok(shot),
            _ => self.device().screenshot(&self.cancel).await,
        };
        let verified = match shot {
            Ok(shot) => self.record_shot(shot, ObservationPurpose::Verify).await,
            Err(e) => Err(e),
        };
        let after = match verified {
            Ok((after, hash)) => {
                if !after.shot.blocked && self.cfg().reuse_verify_frame {
                    self.plan_reuse = Some((after.clone(), hash));
                }
                after
            }
            Err(e) => return self.device_error_flow(e, Some(action_type)).await,
        };
        // F4: the search guard reads where the screen changed (results under the box).
        self.guards
            .record_screen_effect(&action, &before, &after.shot.image);
        // `before` is alive here, so an equal address is the same frame: the capture already
        // diffed exactly this pair (the usual case; a pause or device loss in between may not).
        let changed = match after.change_from_previous {
            Some((prev, f)) if prev == Arc::as_ptr(&before) as usize => f,
            _ => {
                let _phase = phase!("verify_diff");
                changed_fraction(&before, &after.shot.image, None)
            }
        };
        let effect = changed > 0.002;
        let mut warnings = Vec::new();
        if !effect {
            warnings.push("no_visible_change".to_string());
        }
        if after.shot.blocked {
            warnings.push("screenshot_blocked".to_string());
        }
        self.bus.emit(AgentEvent::Verification(VerificationFacts {
            dispatched: true,
            command_ok: true,
            observable_effect: effect,
            changed_fraction: changed,
            warnings: warnings.clone(),
        }));
        let result = if effect {
            format!("{} done; the screen changed.", summarize_action(&action))
        } else {
            format!(
                "{} was sent, but the screen did not visibly change (warning, not retried).",
                summarize_action(&action)
            )
        };
        self.ok_turn(&action, result);
        // R5: repeat guard — only dispatched commands count.
        let sig = Signature(format!(
            "{}:{}:{}",
            action_type,
            points
                .iter()
                .map(|p| format!("{},{}", p.runtime.x / 25, p.runtime.y / 25))
                .collect::<Vec<_>>()
                .join(";"),
            match &action.kind {
                ActionKind::Type { text } => text.clone(),
                _ => String::new(),
            }
        ));
        self.unchanged_streak = if effect { 0 } else { self.unchanged_streak + 1 };
        let repeats = match &self.last_sig {
            Some((s, n)) if *s == sig && !effect => n + 1,
            _ if !effect => 1,
            _ => 0,
        };
        self.last_sig = Some((sig, repeats));
        if repeats >= 3 || self.unchanged_streak >= 3 {
            self.loop_replans += 1;
            self.last_sig = None;
            self.unchanged_streak = 0;
            if self.loop_replans >= 2 {
                self.recover(
                    RecoveryOutcome::RequestTakeover,
                    ErrorCode::Internal,
                    Some(action_type),
                    "loop detected twice",
                    true,
                );
                let resp = self
                    .ask_human(
                        HumanRequestKind::TakeOver {
                            message: "The agent is stuck: the same action keeps having no effect. Please fix the screen and hand back, or take over."
                                .into(),
                        },
                        String::new(),
                    )
                    .await;
                return match resp {
                    HumanResponse::HandBack => {
                        self.guards.record_human_operation();
                        Flow::Continue
                    }
                    HumanResponse::Approve => Self::end(
                        RunStatus::TakenOver,
                        EndReason::LoopTakeover,
                        "the agent was stuck; a human took over",
                    ),
                    _ => Self::end(
                        RunStatus::Failed,
                        EndReason::LoopDetected,
                        "the agent was stuck repeating an action with no effect",
                    ),
                };
            }
            self.recover(
                RecoveryOutcome::Replan,
                ErrorCode::Internal,
                Some(action_type),
                "repeated action with no effect",
                false,
            );
            self.memory.push(Turn {
                step: self.step,
                action: format!("{} repeated 3 times", summarize_action(&action)),
                screen_description: None,
                reason: None,
                result: "Rejected summary: this action was repeated with no visible effect. It will not work: choose a different \
                         action or ask for help with ask_user / take_over."
                    .into(),
                rejected: true,
                rejected_count: 1,
            });
        }
        Flow::Continue
    }

    /// R3: true when the action is still fresh; false when stale (zero touches).
    async fn freshness(&mut self, planned: &Obs, points: &[MappedPoint]) -> Result<bool, Flow> {
        let fc = self.cfg().freshness;
        let mut rechecks = 0;
        loop {
            self.pause_point().await?;
            let now = match self.capture(ObservationPurpose::Freshness).await {
                Ok(o) => o,
                Err(e) => {
                    return Err(match self.device_error_flow(e, None).await {
                        Flow::Continue => return Ok(false),
                        end => end,
                    });
                }
            };
            let phase = phase!("freshness_diff");
            let global = changed_fraction(&planned.shot.image, &now.shot.image, None);
            let (w, h) = now.shot.image.dimensions();
            let half = ((w.min(h) as f64) * fc.target_half_frac).round().max(16.0) as u32;
            let target = points
                .iter()
                .map(|p| {
                    changed_fraction(
                        &planned.shot.image,
                        &now.shot.image,
                        Some(Rect::around(p.device.x, p.device.y, half, w, h)),
                    )
                })
                .fold(0.0f64, f64::max);
            drop(phase);
            let fresh = planned.shot.image.dimensions() == now.shot.image.dimensions()
                && target <= fc.target_threshold
                && global <= fc.global_threshold;
            if fresh || rechecks >= fc.rechecks {
                let outcome = if fresh {
                    if rechecks == 0 {
                        FreshnessOutcome::Fresh
                    } else {
                        FreshnessOutcome::FreshAfterRecheck
                    }
                } else {
                    FreshnessOutcome::Stale
                };
                self.bus.emit(AgentEvent::Freshness {
                    outcome,
                    target_changed: target,
                    global_changed: global,
                    rechecks,
                });
                return Ok(fresh);
            }
            rechecks += 1;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(fc.recheck_interval_ms)) => {}
                _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
            }
        }
    }

    async fn send(&self, action: &Action, p: &[DevicePoint]) -> Result<(), DeviceError> {
        let d = self.device();
        let c = &self.cancel;
        let first = || {
            p.first()
                .copied()
                .ok_or_else(|| DeviceError::Protocol("action has no point".into()))
        };
        match &action.kind {
            ActionKind::Tap { .. } => d.tap(first()?, c).await,
            ActionKind::DoubleTap { .. } => d.double_tap(first()?, c).await,
            ActionKind::LongPress { duration_ms, .. } => {
                d.long_press(first()?, duration_ms.unwrap_or(800), c).await
            }
            ActionKind::Swipe { duration_ms, .. } => {
                let end = p
                    .get(1)
                    .copied()
                    .ok_or_else(|| DeviceError::Protocol("swipe needs two points".into()))?;
                d.swipe(first()?, end, duration_ms.unwrap_or(400), c).await
            }
            // SPEC P6: the one place a typed secret is real again.
            ActionKind::Type { text } => d.type_text(&self.bus.secrets().reveal(text), c).await,
            ActionKind::Back => d.key(KeyCode::Back, c).await,
            ActionKind::Home => d.key(KeyCode::Home, c).await,
            ActionKind::LaunchApp { name } => Err(DeviceError::CommandFailed {
                command: format!("launch_app {name}"),
                detail: "the app launcher capability is not available on this device layer".into(),
            }),
            _ => Ok(()),
        }
    }
}
