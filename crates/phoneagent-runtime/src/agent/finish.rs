//! The two-stage finish (SPEC F1–F4): guards, the review package, the re-observed confirm and
//! its staleness, and the independent finish verifier.

use phoneagent_llm::config::Role;
use phoneagent_llm::ledger::CallKind;
use phoneagent_protocol::VerifierVerdict as Verdict;
use phoneagent_protocol::event::RecoveryOutcome;
use phoneagent_protocol::{
    Action, AgentEvent, EndReason, ErrorCode, ObservationPurpose, RunStatus, TaskItem,
};
use phoneagent_review::{FinishVerifier, VerifierVerdict};

use crate::config::FinishVerifyMode;

use super::{Flow, Obs, ReviewState, Run};

impl Run {
    /// Two-stage finish with guards, staleness and the verifier (F1–F4).
    pub(super) async fn finish(
        &mut self,
        action: &Action,
        message: String,
        confirm: bool,
        obs: &Obs,
    ) -> Flow {
        if let Some((guard, msg)) = self.guards.check_finish() {
            self.bus.emit(AgentEvent::FinishRejected {
                by: format!("guard:{guard}"),
                message: msg.clone(),
            });
            self.recover(
                RecoveryOutcome::Replan,
                ErrorCode::ProtocolError,
                Some("finish"),
                &msg,
                false,
            );
            self.reject_turn(action, msg);
            return Flow::Continue;
        }
        if !confirm || self.review.is_none() {
            let package = self.review_package(&message, obs);
            self.review = Some(ReviewState {
                screen_seq: self.screen_seq,
                board: self.memory.task_board.clone(),
                goal: self.task.clone(),
            });
            self.bus.emit(AgentEvent::FinishReview {
                message,
                package: package.clone(),
                screen_seq: self.screen_seq,
            });
            // SPEC M7, F1: the family is told how to confirm in its own grammar.
            let package = match self.family() {
                Some(ad) => format!(
                    "{package}\nIn your answer format the confirming finish is: {}",
                    ad.finish_confirm_example()
                ),
                None => package,
            };
            self.ok_turn(action, package);
            return Flow::Continue;
        }
        let Some(review) = self.review.clone() else {
            return Flow::Continue;
        };
        // F1: re-observe before accepting. The screen may have changed while the model was
        // thinking about the confirm (after this turn's planning frame); a changed frame moves
        // the screen sequence number, which makes the confirm stale below.
        if let Err(f) = self.observe(ObservationPurpose::Confirm).await {
            return f;
        }
        // Stale when the screen changed (screen seq), the task board or the goal since the package (F1).
        let stale = review.screen_seq != self.screen_seq
            || review.board != self.memory.task_board
            || review.goal != self.task;
        if stale {
            self.review = None;
            let msg = "Your confirmation is stale: the screen or the task board changed since the review package. \
                       Look at the current screen and call finish again for a new review."
                .to_string();
            self.bus.emit(AgentEvent::FinishRejected {
                by: "stale_confirm".into(),
                message: msg.clone(),
            });
            self.reject_turn(action, msg);
            return Flow::Continue;
        }
        // F2: the independent verifier.
        let run_verifier = match self.cfg().finish_verify {
            FinishVerifyMode::Off => false,
            FinishVerifyMode::Always => true,
            FinishVerifyMode::Auto => {
                phoneagent_review::high_risk_goal(&self.task)
                    || !board_closed(&self.memory.task_board)
            }
        };
        if !run_verifier {
            self.bus.emit(AgentEvent::FinishVerifier {
                verdict: Verdict::Skipped,
                reason: "not triggered".into(),
            });
            return Self::end(RunStatus::Succeeded, EndReason::FinishAccepted, message);
        }
        let Some(route) = self.agent.parts.verifier.clone() else {
            self.bus.emit(AgentEvent::FinishVerifier {
                verdict: Verdict::Skipped,
                reason: "no verifier model configured (fail-open)".into(),
            });
            return Self::end(RunStatus::Succeeded, EndReason::FinishAccepted, message);
        };
        let verifier = FinishVerifier::new(route.client.clone());
        let route_text: Vec<String> = self
            .memory
            .turns()
            .iter()
            .map(|t| format!("step {}: {} → {}", t.step, t.action, t.result))
            .collect();
        let tail: Vec<_> = self.tail.iter().map(|o| o.shot.clone()).collect();
        let (verdict, resp) = verifier
            .verify(
                &self.task,
                &message,
                &route_text,
                &tail,
                &route.profile.image,
                &self.cancel,
            )
            .await;
        if let Some(resp) = resp {
            self.account(Role::Verifier, CallKind::Verifier, &route, Ok(&resp));
        }
        match verdict {
            VerifierVerdict::Pass(reason) => {
                self.verifier_rejections = 0;
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: Verdict::Pass,
                    reason,
                });
                Self::end(RunStatus::Succeeded, EndReason::FinishAccepted, message)
            }
            VerifierVerdict::Skipped(reason) => {
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: Verdict::Skipped,
                    reason,
                });
                Self::end(RunStatus::Succeeded, EndReason::FinishAccepted, message)
            }
            VerifierVerdict::Reject(reason) => {
                self.verifier_rejections += 1;
                self.review = None;
                self.bus.emit(AgentEvent::FinishVerifier {
                    verdict: Verdict::Reject,
                    reason: reason.clone(),
                });
                if self.verifier_rejections >= 2 {
                    return Self::end(
                        RunStatus::TakenOver,
                        EndReason::FinishRejectedTwice,
                        "finish repeatedly rejected by the verifier, needs human confirmation",
                    );
                }
                let msg = format!(
                    "The independent verifier rejected your finish: {reason}. Continue the task."
                );
                self.bus.emit(AgentEvent::FinishRejected {
                    by: "verifier".into(),
                    message: msg.clone(),
                });
                self.reject_turn(action, msg);
                Flow::Continue
            }
        }
    }

    fn review_package(&self, message: &str, obs: &Obs) -> String {
        let dispatched = self
            .memory
            .turns()
            .iter()
            .filter(|t| !t.rejected && t.result.contains("done"))
            .count();
        let warnings = self
            .memory
            .turns()
            .iter()
            .filter(|t| t.result.contains("did not visibly change"))
            .count();
        let rejected = self.memory.turns().iter().filter(|t| t.rejected).count();
        let mut s = String::new();
        s.push_str("Review package (finish not yet accepted)\n");
        s.push_str("World facts:\n");
        s.push_str(&format!(
            "- Current screen #{} ({}x{} px); {} steps taken.\n",
            obs.seq, obs.geometry.width_px, obs.geometry.height_px, self.step
        ));
        s.push_str(&format!("- Actions with a visible effect: {dispatched}; without visible change: {warnings}; rejected: {rejected}.\n"));
        s.push_str(&format!("- Your finish message: {message}\n"));
        s.push_str("Route status:\n");
        if self.memory.task_board.is_empty() {
            s.push_str(
                "- No task board: check every part of the task against the current screen.\n",
            );
        } else {
            for it in &self.memory.task_board {
                s.push_str(&format!(
                    "- [{}] {}\n",
                    if it.done { "x" } else { " " },
                    it.text
                ));
            }
            s.push_str(if board_closed(&self.memory.task_board) {
                "- The board is closed.\n"
            } else {
                "- The board is NOT closed.\n"
            });
        }
        s.push_str("Doubts:\n");
        if warnings > 0 {
            s.push_str("- Some actions had no visible effect; make sure they really happened.\n");
        }
        if rejected > 0 {
            s.push_str("- Some actions were rejected and did not run.\n");
        }
        if warnings == 0 && rejected == 0 {
            s.push_str("- None recorded.\n");
        }
        s.push_str("Options:\n");
        s.push_str("  1) If the current screen proves the task is done, call finish again with confirm=true (same message).\n");
        s.push_str("  2) Otherwise continue working on the task.\n");
        s.push_str("  3) If you need the user, use ask_user or take_over.\n");
        s
    }
}

pub(super) fn board_closed(board: &[TaskItem]) -> bool {
    board.iter().all(|i| i.done)
}
