//! Observing the phone (SPEC D2, D3, D6, D8, D9, M6, R4): screenshots for planning,
//! freshness, verification and confirmation (reusing a verification frame when allowed),
//! storing them and the screen sequence number, the model image prepared off the critical path,
//! the capture and input paths, and the device-error flow (wait for a lost device, abort on
//! setup errors, re-plan on others).

use std::sync::Arc;
use std::time::{Duration, Instant};

use phoneagent_device::{DeviceError, Screenshot};
use phoneagent_protocol::event::{HumanRequestKind, HumanResponse, RecoveryOutcome};
use phoneagent_protocol::{
    AgentEvent, EndReason, ErrorCode, ObservationPurpose, Phase, RunStatus, ScreenGeometry,
};

use crate::adapters;
use crate::pixels::changed_fraction;

use super::{Flow, Obs, Run};

impl Run {
    /// Record the capture and input paths when they are new or changed (SPEC D8, D9): a stream
    /// that died mid-run shows up as the switch to `raw`.
    pub(super) async fn note_device_paths(&mut self) {
        let Some((capture, input, note)) = self.device().paths().await else {
            return;
        };
        let now = (capture.clone(), input.clone());
        if self.device_paths.as_ref() != Some(&now) {
            self.device_paths = Some(now);
            self.bus.emit(AgentEvent::DevicePaths {
                capture,
                input,
                note,
            });
        }
    }

    /// Observe, handling device loss (D6) and blocked frames (D3).
    pub(super) async fn observe(&mut self, purpose: ObservationPurpose) -> Result<Obs, Flow> {
        loop {
            self.set_phase(Phase::Observing);
            if self.cancel.is_cancelled() {
                return Err(self.cancelled_flow());
            }
            self.pause_point().await?;
            if purpose == ObservationPurpose::Plan
                && let Some((obs, hash)) = self.plan_reuse.take()
            {
                // The verification frame of the step before, taken after its settle: the same
                // screen a new capture would show now, without another 1.5 s `screencap`.
                self.emit_observation(&obs, hash, 0, purpose);
                return Ok(obs);
            }
            match self.capture(purpose).await {
                Ok(obs) if obs.shot.blocked => {
                    // Never plan on a black frame: ask the human (no tap is sent).
                    self.bus.emit(AgentEvent::Warning {
                        code: ErrorCode::ScreenshotBlocked.as_str().into(),
                        message:
                            "the screenshot is all black (a protected window?); asking a human"
                                .into(),
                    });
                    let resp = self
                        .ask_human(
                            HumanRequestKind::TakeOver {
                                message: "The screen cannot be captured (black frame: a protected window such as a payment \
                                          or password screen). Please handle this screen on the phone, then hand back."
                                    .into(),
                            },
                            String::new(),
                        )
                        .await;
                    match resp {
                        HumanResponse::HandBack => {
                            self.guards.record_human_operation();
                            continue;
                        }
                        HumanResponse::Approve => {
                            return Err(Self::end(
                                RunStatus::TakenOver,
                                EndReason::ScreenshotBlockedTakeover,
                                "a human took over on a protected screen",
                            ));
                        }
                        _ => {
                            return Err(Self::end(
                                RunStatus::Failed,
                                ErrorCode::ScreenshotBlocked,
                                "the screen is protected (black screenshot) and no human took over",
                            ));
                        }
                    }
                }
                Ok(obs) => return Ok(obs),
                Err(e) => match self.device_error_flow(e, None).await {
                    Flow::Continue => continue,
                    end => return Err(end),
                },
            }
        }
    }

    /// Take a screenshot, store it, emit the observation.
    pub(super) async fn capture(
        &mut self,
        purpose: ObservationPurpose,
    ) -> Result<Obs, DeviceError> {
        self.plan_reuse = None;
        let shot = self.device().screenshot(&self.cancel).await?;
        Ok(self.record_shot(shot, purpose).await?.0)
    }

    fn emit_observation(
        &self,
        obs: &Obs,
        screenshot: String,
        capture_ms: u32,
        purpose: ObservationPurpose,
    ) {
        self.bus.emit(AgentEvent::Observation {
            screenshot,
            width: obs.shot.image.width(),
            height: obs.shot.image.height(),
            blocked: obs.shot.blocked,
            screen_seq: obs.seq,
            capture_ms,
            purpose,
        });
    }

    /// Store a frame taken for `purpose`, emit its observation; `(observation, stored hash)`.
    pub(super) async fn record_shot(
        &mut self,
        shot: Screenshot,
        purpose: ObservationPurpose,
    ) -> Result<(Obs, String), DeviceError> {
        let key = Arc::as_ptr(&shot.image) as usize;
        if matches!(
            purpose,
            ObservationPurpose::Plan | ObservationPurpose::Verify
        ) && self.pending_prepare.as_ref().is_none_or(|(k, _)| *k != key)
        {
            // Off the critical path: the resize + encode for the model (M6) overlaps the rest of
            // the capture, and for a verification frame the end of the step and the next
            // planning screenshot: an unchanged screen comes back as the same decoded frame
            // (same address), whose image is then ready. `plan_and_act` picks it up.
            let (frame, policy) = (shot.clone(), self.agent.parts.actor.profile.image);
            self.pending_prepare = Some((
                key,
                tokio::task::spawn_blocking(move || adapters::prepare(&frame, &policy)),
            ));
        }
        let geometry = self.device().geometry(&self.cancel).await?;
        // The screenshot actually taken is the truth for the size (D2).
        let geometry = ScreenGeometry {
            width_px: shot.image.width(),
            height_px: shot.image.height(),
            ..geometry
        };
        let hash = {
            let _phase = phase!("store_screenshot");
            self.bus
                .recorder()
                .put_screenshot(&shot.png, shot.image.width(), shot.image.height())
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "could not store screenshot");
                    crate::sha256_hex(&shot.png)
                })
        };
        // The screen sequence number counts distinct screens: it moves only when the frame changed.
        let change_from_previous = {
            let _phase = phase!("screen_change_diff");
            self.last_frame.as_ref().map(|prev| {
                (
                    Arc::as_ptr(prev) as usize,
                    changed_fraction(prev, &shot.image, None),
                )
            })
        };
        let changed = change_from_previous.is_none_or(|(_, f)| f > 0.002);
        if changed {
            self.screen_seq += 1;
        }
        self.last_frame = Some(shot.image.clone());
        let capture_ms = shot.capture_ms;
        let obs = Obs {
            shot,
            seq: self.screen_seq,
            geometry,
            change_from_previous,
        };
        self.emit_observation(&obs, hash.clone(), capture_ms, purpose);
        if matches!(
            purpose,
            ObservationPurpose::Plan | ObservationPurpose::Verify
        ) {
            self.tail.push(obs.clone());
            if self.tail.len() > 3 {
                self.tail.remove(0);
            }
        }
        Ok((obs, hash))
    }

    /// Device errors: loss → wait for the same serial (D6); setup errors → abort; others → hard failure.
    pub(super) async fn device_error_flow(
        &mut self,
        e: DeviceError,
        action_type: Option<&str>,
    ) -> Flow {
        self.plan_reuse = None;
        if matches!(e, DeviceError::Cancelled) || self.cancel.is_cancelled() {
            return self.cancelled_flow();
        }
        if e.is_device_lost() {
            let serial = self.device().serial().to_string();
            self.set_phase(Phase::DeviceLost);
            self.bus.emit(AgentEvent::DeviceLost {
                serial: serial.clone(),
                detail: e.to_string(),
            });
            let t0 = Instant::now();
            let deadline = t0 + self.cfg().device_wait;
            let mut last_error = e.to_string();
            loop {
                if self.cancel.is_cancelled() {
                    return self.cancelled_flow();
                }
                if Instant::now() >= deadline {
                    return Self::end(
                        RunStatus::Failed,
                        ErrorCode::DeviceLost,
                        format!(
                            "device {serial} did not come back within {} s (last error: {last_error}): reconnect it and start the task again",
                            self.cfg().device_wait.as_secs()
                        ),
                    );
                }
                if self.pause_point().await.is_err() {
                    return self.cancelled_flow();
                }
                match self.device().geometry(&self.cancel).await {
                    Ok(_) => break,
                    Err(e) => {
                        last_error = e.to_string();
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                            _ = self.cancel.cancelled() => return self.cancelled_flow(),
                        }
                    }
                }
            }
            self.bus.emit(AgentEvent::DeviceRestored {
                serial,
                waited_ms: t0.elapsed().as_millis() as u64,
            });
            // Never replay the interrupted action blindly: re-observe and re-plan.
            self.recover(
                RecoveryOutcome::Reobserve,
                ErrorCode::DeviceLost,
                action_type,
                "device came back; re-observing",
                false,
            );
            self.feedback.push(
                "The phone was disconnected during the last action; it is back. The last action may or may not have \
                 happened: look at the new screenshot before acting."
                    .into(),
            );
            return Flow::Continue;
        }
        let code = e.code();
        if matches!(
            code,
            ErrorCode::InjectEventsDenied
                | ErrorCode::DeviceUnauthorized
                | ErrorCode::AdbServerUnreachable
        ) {
            self.recover(
                RecoveryOutcome::Abort,
                code,
                action_type,
                &e.to_string(),
                true,
            );
            return Self::end(RunStatus::Failed, code, e.to_string());
        }
        self.hard_failures += 1;
        if self.hard_failures > self.cfg().max_hard_failures {
            self.recover(
                RecoveryOutcome::Abort,
                code,
                action_type,
                &e.to_string(),
                true,
            );
            return Self::end(
                RunStatus::Failed,
                code,
                format!("too many device failures; last: {e}"),
            );
        }
        self.recover(
            RecoveryOutcome::Replan,
            code,
            action_type,
            &e.to_string(),
            true,
        );
        self.feedback
            .push(format!("The last command failed on the device: {e}."));
        Flow::Continue
    }
}
