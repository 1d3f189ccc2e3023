//! The step API (SPEC R2, R7): [`Agent::start_steps`] and the [`StepSession`] that runs one
//! observe → plan → act → verify turn per [`StepSession::step`], with the same limits and
//! terminal semantics as [`Agent::run`]; dropping an unfinished session records it `cancelled`.

use std::sync::atomic::Ordering;

use tokio_util::sync::CancellationToken;

use crate::RuntimeError;

use super::{Agent, AgentState, Flow, Run, RunOutcome};

impl Agent {
    /// Start `task` for stepping (R2): the returned session runs one observe → plan → act →
    /// verify turn per [`StepSession::step`], with the same goal, limits (max steps, max
    /// duration, token budget), cancellation and terminal semantics as [`Agent::run`] — a
    /// `run` is exactly a loop of steps. The goal is fixed for the session's lifetime.
    ///
    /// Refuses with [`RuntimeError::Busy`] while another run or session is active; errors with
    /// [`RuntimeError::Store`] when the run cannot be recorded. The session owns what it needs,
    /// so a front end can keep it across UI events.
    pub fn start_steps(
        &self,
        task: &str,
        cancel: CancellationToken,
    ) -> Result<StepSession, RuntimeError> {
        crate::check_task_size(task, self.shared.config.max_task_chars)?;
        if self.shared.busy.swap(true, Ordering::SeqCst) {
            return Err(RuntimeError::Busy);
        }
        match Run::open(self.shared.clone(), task, cancel) {
            Ok(run) => Ok(StepSession {
                run: Some(run),
                outcome: None,
            }),
            Err(e) => {
                self.shared.busy.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }
}

/// What one [`StepSession::step`] led to.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The run goes on; the agent is back in `observing` (R2) with this state.
    Continue(AgentState),
    /// The run reached a terminal state (it is recorded and closed).
    Finished(RunOutcome),
}

/// A run driven one step at a time (see [`Agent::start_steps`]).
///
/// Dropping an unfinished session cancels its run: it is recorded as `cancelled` and the IME is
/// restored in the background (when a tokio runtime is available).
pub struct StepSession {
    run: Option<Run>,
    outcome: Option<RunOutcome>,
}

impl StepSession {
    /// Run id of this session's run.
    pub fn run_id(&self) -> String {
        match (&self.run, &self.outcome) {
            (_, Some(o)) => o.run_id.clone(),
            (Some(r), None) => r.bus.run_id().to_string(),
            (None, None) => String::new(),
        }
    }

    /// One observe → plan → act → verify turn. After the run finished, returns its outcome
    /// again. Errors only when the end of the run cannot be recorded.
    pub async fn step(&mut self) -> Result<StepOutcome, RuntimeError> {
        if let Some(o) = &self.outcome {
            return Ok(StepOutcome::Finished(o.clone()));
        }
        let Some(run) = self.run.as_mut() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        match run.step_once().await {
            Flow::Continue => Ok(StepOutcome::Continue(run.agent.state())),
            end => {
                let outcome = run.conclude(end);
                self.finish(outcome).await
            }
        }
    }

    /// Cancel the run (R7): it ends `cancelled` without another device command.
    pub async fn cancel(&mut self) -> Result<RunOutcome, RuntimeError> {
        if let Some(o) = &self.outcome {
            return Ok(o.clone());
        }
        let Some(run) = self.run.as_mut() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        run.cancel.cancel();
        let outcome = run.conclude(run.cancelled_flow());
        match self.finish(outcome).await? {
            StepOutcome::Finished(o) => Ok(o),
            StepOutcome::Continue(_) => Err(RuntimeError::Store("run did not end".into())),
        }
    }

    async fn finish(&mut self, outcome: RunOutcome) -> Result<StepOutcome, RuntimeError> {
        let Some(run) = self.run.take() else {
            return Err(RuntimeError::Store("the step session was closed".into()));
        };
        let shared = run.agent.clone();
        let result = run.close(outcome).await;
        shared.busy.store(false, Ordering::SeqCst);
        let outcome = result?;
        self.outcome = Some(outcome.clone());
        Ok(StepOutcome::Finished(outcome))
    }
}

impl Drop for StepSession {
    fn drop(&mut self) {
        let Some(mut run) = self.run.take() else {
            return;
        };
        run.cancel.cancel();
        let outcome = run.conclude(run.cancelled_flow());
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let shared = run.agent.clone();
                    let _ = run.close(outcome).await;
                    shared.busy.store(false, Ordering::SeqCst);
                });
            }
            Err(_) => {
                let shared = run.agent.clone();
                if let Err(e) = run.close_without_device(&outcome) {
                    tracing::error!(error = %e, "could not record the end of a dropped step session");
                }
                shared.busy.store(false, Ordering::SeqCst);
            }
        }
    }
}
