//! Running a task to its end (SPEC R1, R2, R7, D4, F3): [`Agent::run`], opening a run (record,
//! task secrets, opening events) and closing it (IME restore on every exit path, `run_finished`),
//! the limits checked before every turn (cancel, store, max steps, max duration, token budget)
//! and the one observe → plan → act → verify turn that both `run` and the step API repeat.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use phoneagent_llm::ledger::{Budgets, TokenLedger};
use phoneagent_protocol::event::TrajectoryPolicy;
use phoneagent_protocol::{AgentEvent, ErrorCode, ObservationPurpose, Phase, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::events::{EventBus, RunMeta};
use crate::guards::TaskGuards;
use crate::memory::Memory;
use crate::{RuntimeError, now_ms};

use super::finish::board_closed;
use super::{Agent, AgentState, Flow, Run, RunOutcome, Shared};

impl Agent {
    /// Run `task` to a terminal state. Refuses when a task is already running (R2).
    ///
    /// Errors only for setup problems before the run starts (busy, recorder, a task over
    /// `max_task_chars`); everything that happens during the run ends in a [`RunOutcome`] with
    /// its status and code.
    pub async fn run(
        &self,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RuntimeError> {
        crate::check_task_size(task, self.shared.config.max_task_chars)?;
        if self.shared.busy.swap(true, Ordering::SeqCst) {
            return Err(RuntimeError::Busy);
        }
        let result = match Run::open(self.shared.clone(), task, cancel) {
            Ok(mut run) => {
                let flow = run.main_loop().await;
                let outcome = run.conclude(flow);
                run.close(outcome).await
            }
            Err(e) => Err(e),
        };
        self.shared.busy.store(false, Ordering::SeqCst);
        result
    }
}

/// Build the gate's lexicons and the redaction rules once per process on a thread of their own,
/// while the first screenshot and model call run, not inside the first gated action on the async
/// worker that also forwards the run's events (issue #14: about 280 ms in a debug build, and every
/// event behind it waited).
fn warm_up_gate() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("gate-warm-up".into())
            .spawn(phoneagent_safety::warm_up);
    });
}

impl Run {
    /// Record the run's start and emit its opening events (the caller holds the busy flag).
    pub(super) fn open(
        agent: Arc<Shared>,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<Self, RuntimeError> {
        warm_up_gate();
        let run_id = uuid::Uuid::new_v4().to_string();
        let bus = EventBus::new(
            run_id.clone(),
            agent.parts.recorder.clone(),
            agent.tx.clone(),
        );
        // SPEC P6: credentials the task spells out are secrets before anything is recorded —
        // the run row, `run_started`, the prompts and the exports all carry the placeholder.
        for secret in crate::secrets::task_secrets(task) {
            bus.secrets().add(&secret);
        }
        let task = &bus.secrets().mask(task);
        let meta = RunMeta {
            run_id: run_id.clone(),
            task: task.to_string(),
            serial: agent.parts.device.serial().to_string(),
            profile: agent.parts.actor.profile_name.clone(),
            model: agent.parts.actor.profile.model.clone(),
            mode: agent.config.mode.as_str().to_string(),
            started_ms: now_ms(),
            demo: agent.config.demo,
        };
        agent
            .parts
            .recorder
            .begin_run(&meta)
            .map_err(RuntimeError::Store)?;
        {
            let mut s = agent.state.lock().unwrap_or_else(|p| p.into_inner());
            *s = AgentState {
                phase: Phase::Idle,
                run_id: Some(run_id),
                step: 0,
                screen_seq: 0,
            };
        }
        let mut run = Run::new(agent, task, bus, cancel);
        run.start_events();
        Ok(run)
    }

    /// End the run: restore the IME (D4, every exit path), emit `run_finished`, close the record.
    pub(super) async fn close(mut self, outcome: RunOutcome) -> Result<RunOutcome, RuntimeError> {
        if let Err(e) = self.agent.parts.device.restore_ime().await {
            self.bus.emit(AgentEvent::Warning {
                code: "ime_restore_failed".into(),
                message: e.to_string(),
            });
        }
        self.close_without_device(&outcome)?;
        Ok(outcome)
    }

    /// The recording half of [`Run::close`] (also used when no async runtime is left).
    pub(super) fn close_without_device(
        &mut self,
        outcome: &RunOutcome,
    ) -> Result<(), RuntimeError> {
        // A pause must not outlive its run.
        self.agent.pause.resume();
        let summary = serde_json::json!({
            "steps": outcome.steps,
            "message": outcome.message,
            "tokens": self.totals(),
            "hard_failures": self.hard_failures,
            "soft_replans": self.soft_replans,
        });
        self.bus.emit(AgentEvent::RunFinished {
            status: outcome.status,
            termination_code: outcome.termination_code,
            message: outcome.message.clone(),
            steps: outcome.steps,
            duration_ms: outcome.duration_ms,
            tokens: self.totals(),
            hard_failures: self.hard_failures,
            soft_replans: self.soft_replans,
        });
        self.agent
            .parts
            .recorder
            .end_run(
                self.bus.run_id(),
                outcome.status,
                outcome.termination_code.as_str(),
                &summary,
            )
            .map_err(RuntimeError::Store)
    }

    fn new(agent: Arc<Shared>, task: &str, bus: EventBus, cancel: CancellationToken) -> Self {
        let budgets = Budgets {
            run_tokens: agent.config.token_budget,
            input_tokens: agent.config.input_token_budget,
        };
        Self {
            agent,
            task: task.to_string(),
            bus,
            cancel,
            started: Instant::now(),
            paused_for: Duration::ZERO,
            step: 0,
            memory: Memory::new(task),
            guards: TaskGuards::from_task(task),
            contract: None,
            screen_seq: 0,
            ledger: TokenLedger::new(budgets),
            hard_failures: 0,
            soft_replans: 0,
            review: None,
            verifier_rejections: 0,
            extra_turn_used: false,
            last_sig: None,
            unchanged_streak: 0,
            loop_replans: 0,
            feedback: Vec::new(),
            tail: Vec::new(),
            pending_prepare: None,
            last_frame: None,
            plan_reuse: None,
            device_paths: None,
            credential_field_focused: false,
            field_read: None,
            refused_answer: None,
            last_touch_point: None,
            family_image: (1080, 2400),
        }
    }

    /// `run_started`, fallbacks and active guards: the opening events of every run.
    fn start_events(&mut self) {
        let cfg = self.cfg().clone();
        let parts = &self.agent.parts;
        let actor = &parts.actor;
        self.bus.emit(AgentEvent::RunStarted {
            task: self.task.clone(),
            serial: self.device().serial().to_string(),
            profile: actor.profile_name.clone(),
            model: actor.profile.model.clone(),
            base_url: actor.profile.base_url.clone(),
            protocol: actor.profile.protocol.as_str().into(),
            mode: cfg.mode,
            max_steps: cfg.max_steps,
            max_duration_ms: cfg.max_duration.as_millis() as u64,
            policy: TrajectoryPolicy::pure_vision(cfg.app_launcher),
            demo: cfg.demo,
        });
        for route in [
            Some(&parts.actor),
            parts.verifier.as_ref(),
            parts.safety_reviewer.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(fb) = &route.fallback {
                self.bus.emit(AgentEvent::ModelFallback {
                    role: fb.role.as_str().into(),
                    requested: fb.from_profile.clone(),
                    used: fb.to_profile.clone(),
                    reason: fb.reason.clone(),
                });
            }
        }
        for g in self.guards.active() {
            self.bus.emit(AgentEvent::GuardActive {
                guard: g.to_string(),
            });
        }
    }

    /// The terminal phase and outcome of a finished loop.
    pub(super) fn conclude(&mut self, flow: Flow) -> RunOutcome {
        let (status, code, message) = match flow {
            Flow::End(s, c, m) => (s, c, m),
            Flow::Continue => (
                RunStatus::Failed,
                ErrorCode::Internal.into(),
                "loop ended unexpectedly".to_string(),
            ),
        };
        let phase = match status {
            RunStatus::Succeeded => Phase::Succeeded,
            RunStatus::Cancelled => Phase::Cancelled,
            RunStatus::TakenOver => Phase::TakenOver,
            _ => Phase::Failed,
        };
        self.set_phase(phase);
        self.outcome(status, code, message)
    }

    fn limits_reached(&self) -> Option<Flow> {
        if self.cancel.is_cancelled() {
            return Some(self.cancelled_flow());
        }
        if let Some(e) = self.bus.take_write_error() {
            return Some(Self::end(
                RunStatus::Failed,
                ErrorCode::Store,
                format!("could not record the run: {e}"),
            ));
        }
        if self.step >= self.cfg().max_steps {
            return Some(Self::end(
                RunStatus::Failed,
                ErrorCode::MaxSteps,
                format!(
                    "stopped after the maximum of {} steps without an accepted finish",
                    self.cfg().max_steps
                ),
            ));
        }
        if self.started.elapsed().saturating_sub(self.paused_for) >= self.cfg().max_duration {
            return Some(Self::end(
                RunStatus::Failed,
                ErrorCode::MaxDuration,
                format!(
                    "stopped after the maximum run time of {} s",
                    self.cfg().max_duration.as_secs()
                ),
            ));
        }
        None
    }

    async fn main_loop(&mut self) -> Flow {
        loop {
            match self.step_once().await {
                Flow::Continue => {}
                end => return end,
            }
        }
    }

    /// One observe → plan → act → verify turn (R1): the unit of both `run` and `step`. A
    /// recoverable end of the turn leaves the agent in `observing` (R2).
    pub(super) async fn step_once(&mut self) -> Flow {
        let flow = self.turn().await;
        if matches!(flow, Flow::Continue) {
            self.set_phase(Phase::Observing);
        }
        flow
    }

    async fn turn(&mut self) -> Flow {
        if let Some(f) = self.limits_reached() {
            return f;
        }
        self.note_device_paths().await;
        let extra_confirmation = if self.budget_exhausted() {
            // F3: one real confirmation turn bound to a valid review package, at most once.
            let valid = self.review.as_ref().is_some_and(|r| {
                r.screen_seq == self.screen_seq
                    && r.goal == self.task
                    && board_closed(&r.board)
                    && r.board == self.memory.task_board
            });
            if valid && !self.extra_turn_used && self.verifier_rejections == 0 {
                self.extra_turn_used = true;
                true
            } else {
                return Self::end(
                    RunStatus::Failed,
                    ErrorCode::BudgetExhausted,
                    "the run's token budget is exhausted".to_string(),
                );
            }
        } else {
            false
        };
        self.step += 1;
        self.bus.set_step(self.step);
        let obs = match self.observe(ObservationPurpose::Plan).await {
            Ok(o) => o,
            Err(f) => return f,
        };
        if self.contract.is_none() {
            match self.negotiate_contract(&obs).await {
                Ok(space) => self.contract = Some(space),
                Err(f) => return f,
            }
        }
        match self.plan_and_act(obs, extra_confirmation).await {
            Flow::Continue => {}
            end => return end,
        }
        if extra_confirmation {
            return Self::end(
                RunStatus::Failed,
                ErrorCode::BudgetExhausted,
                "the token budget is exhausted and the extra confirmation turn did not finish the task",
            );
        }
        Flow::Continue
    }
}
