//! Runs (SPEC U2, U3, C1): a task on the selected phone, or a demo scenario on the in-app
//! virtual phone with the scripted model. Every run goes through a runtime [`Session`] (SPEC
//! A7, issue #13), as in the CLI and the MCP server: the session owns the run task, the busy
//! state, the cancellation, the pause, the approve-for-me handle and the pending human
//! requests. The console only builds the session's parts from the settings, submits ops as
//! [`Submitter::Person`] (the person at the window) and forwards the session's events to its
//! subscribers (`agent-event`, then `run-ended`).
//!
//! A session is made for each start (its parts — phone, model routes, limits, policy — are the
//! settings of that moment) and kept as that phone's until the next start on it, so the
//! controls (stop, pause, answers, approve-for-me) reach the run it is running; a start on a
//! phone whose session is busy is refused, while other phones run their own ([`crate::sessions`]).

use std::sync::Arc;

use phoneagent_device::{AdbDevice, AdbServer, Device};
use phoneagent_llm::{ModelsConfig, Role, RoleResolution};
use phoneagent_protocol::{AccessMode, ErrorCode, EventEnvelope, Op, RunStatus, TaskOptions};
use phoneagent_review::auto::AutoReviewConfig;
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    Ack, AgentConfig, Delegation, ModelRoute, RunOutcome, Session, SessionError, SessionParts,
    Submitter,
};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::console::{Console, PhoneSession, lock, screen_reader, settings_lang};
use crate::devices::parse_addr;
use crate::dto::{DemoScenarioView, RunEnded, SelectedDevice, StartRunRequest};
use crate::error::{AppError, AppResult};
use crate::events::event_names;
use crate::settings::{AppSettings, ApprovalPolicySettings, parse_mode};

/// Settings key of the recent tasks list.
pub const RECENT_TASKS_KEY: &str = "app.recent_tasks";

/// The model routes of one run, per role (SPEC M2).
struct Routes {
    actor: ModelRoute,
    verifier: Option<ModelRoute>,
    safety_reviewer: Option<ModelRoute>,
    auto_reviewer: Option<ModelRoute>,
}

/// A refused session op as the UI knows it: the session's stable codes, except the ones the UI
/// has matched on since before the session (`expired_request`, `mismatched_response`, and
/// `not_running` for an op that needs an approve-for-me run); a start that failed keeps the
/// runtime error's code.
pub fn session_error(e: SessionError) -> AppError {
    let code = match e {
        SessionError::Start(r) => return AppError::from(r),
        SessionError::Expired(_) => "expired_request",
        SessionError::ResponseNotAllowed { .. } => "mismatched_response",
        SessionError::NotApproveForMe => "not_running",
        ref other => other.code(),
    };
    AppError::new(code, e.to_string())
}

impl Console {
    /// Resolve the actor, verifier and safety reviewer through the llm crate's role chain
    /// (keys read from the OS keyring on a blocking thread).
    async fn routes(&self, cfg: ModelsConfig) -> AppResult<Routes> {
        let keys = self.keys.clone();
        let resolved = tokio::task::spawn_blocking(move || {
            let actor = cfg.resolve(Role::Actor, &keys)?;
            let verifier = cfg.resolve(Role::Verifier, &keys)?;
            let reviewer = cfg.resolve(Role::SafetyReviewer, &keys)?;
            let auto_reviewer = cfg.resolve(Role::AutoReviewer, &keys)?;
            Ok::<_, phoneagent_llm::LlmError>((actor, verifier, reviewer, auto_reviewer))
        })
        .await
        .map_err(|e| AppError::internal(format!("model setup task failed: {e}")))??;
        let route = |r: &RoleResolution| -> AppResult<Option<ModelRoute>> {
            r.model()
                .map(ModelRoute::from_resolved)
                .transpose()
                .map_err(AppError::from)
        };
        let actor = route(&resolved.0)?.ok_or_else(|| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::ModelConfig,
                "no planner model: add a profile in Settings and pick it",
            )
        })?;
        Ok(Routes {
            actor,
            verifier: route(&resolved.1)?,
            safety_reviewer: route(&resolved.2)?,
            auto_reviewer: route(&resolved.3)?,
        })
    }

    /// Refuse a start on phone `serial` while its session is running a task (other phones'
    /// runs do not matter).
    fn check_idle(&self, serial: &str) -> AppResult<()> {
        match self.session_on(serial) {
            Some(s) if s.is_busy() => Err(session_error(SessionError::Busy {
                run_id: s.status().run_id.unwrap_or_default(),
            })),
            _ => Ok(()),
        }
    }

    /// Start a run on the selected phone. Its events go to [`Console::subscribe`] as they
    /// happen (`agent-event`); the run ends with `run-ended`. Refuses while a run is active on
    /// that phone; runs on other phones go on (one session per phone, issue #13).
    pub async fn start_run(&self, req: StartRunRequest) -> AppResult<SelectedDevice> {
        let task = req.task.trim().to_string();
        if task.is_empty() {
            return Err(AppError::invalid(
                "type a task first, e.g. “Open Settings and turn on Wi-Fi”",
            ));
        }
        if task.chars().count() > 4000 {
            return Err(AppError::invalid(
                "the task is too long: keep it under 4000 characters",
            ));
        }
        if !(1..=500).contains(&req.max_steps) {
            return Err(AppError::invalid("max steps must be between 1 and 500"));
        }
        let mode = parse_mode(&req.mode)?;
        let settings = AppSettings::load(&self.store)?;
        let actor_name = if req.profile.is_empty() {
            settings.roles.actor.clone()
        } else {
            req.profile.clone()
        };
        if settings.profile(&actor_name).is_none() {
            return Err(AppError::invalid(format!(
                "no model profile named {actor_name:?}: add it in Settings"
            )));
        }
        let sel = self.selected()?;
        self.check_idle(&sel.serial)?;
        let device = self.open_device(&sel).await?;
        let routes = self.routes(settings.models_config(&actor_name)?).await?;
        let config = AgentConfig {
            max_steps: req.max_steps,
            max_duration: std::time::Duration::from_secs(settings.max_duration_secs),
            mode,
            token_budget: (settings.token_budget > 0).then_some(settings.token_budget),
            finish_verify: settings.finish_verify_mode()?,
            lang: settings_lang(&settings),
            ..AgentConfig::default()
        };
        self.launch(
            sel.clone(),
            task.clone(),
            device,
            routes,
            config,
            settings.notifications,
            None,
        )?;
        self.remember_task(&task);
        Ok(sel)
    }

    /// Run a demo scenario (SPEC C1) with no phone and no model: the in-app virtual phone
    /// (started and selected if needed, put on the scenario's first screen) and the scripted
    /// model server in this process, both over their real protocols, like `phoneagent demo`.
    /// The run is labelled a demo in its events and history.
    ///
    /// # Errors
    /// `invalid_input` for an unknown scenario (the message lists them); `busy` while a run is
    /// active on the virtual phone; errors starting the virtual phone or the model server.
    pub async fn start_demo(&self, name: &str, mode: Option<&str>) -> AppResult<SelectedDevice> {
        let mode = mode.filter(|m| !m.is_empty()).map(parse_mode).transpose()?;
        let scenario = phoneagent_testkit::demo::find(name, mode).ok_or_else(|| {
            AppError::invalid(format!(
                "no demo scenario {name:?}: choose one of {}",
                phoneagent_testkit::demo::SCENARIOS
                    .iter()
                    .map(|s| format!("{} ({})", s.name, s.mode))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let phone = self.start_virtual_phone().await?;
        self.check_idle(&phone.serial)?;
        {
            let sim = self.sim.lock().await;
            if let Some(s) = sim.as_ref() {
                s.reset(&phone.serial, scenario.start_screen)
                    .await
                    .map_err(|e| {
                        AppError::internal(format!("cannot reset the virtual phone: {e}"))
                    })?;
            }
        }
        let sim_port: u16 = phone
            .adb_addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| AppError::internal("the virtual phone has no port"))?;
        let demo = crate::demo::DemoModel::start(scenario, sim_port, &phone.serial)
            .await
            .map_err(AppError::internal)?;
        let routes = Routes {
            actor: demo.route("actor").map_err(AppError::from)?,
            verifier: Some(demo.route("verifier").map_err(AppError::from)?),
            safety_reviewer: None,
            auto_reviewer: Some(demo.route("auto-reviewer").map_err(AppError::from)?),
        };
        let settings = AppSettings::load(&self.store)?;
        let config = AgentConfig {
            lang: settings_lang(&settings),
            ..crate::demo::demo_config(scenario)
        };
        // The virtual phone itself, not "the selected phone": the user may pick another phone
        // while this starts, and a scripted demo must never touch a real one.
        let addr = parse_addr(&phone.adb_addr)?;
        let device = Arc::new(
            AdbDevice::open(
                AdbServer::new(addr),
                &phone.serial,
                phoneagent_device::AdbDeviceOptions::default(),
            )
            .await?,
        );
        let sel = SelectedDevice {
            adb_addr: phone.adb_addr,
            serial: phone.serial,
        };
        self.launch(
            sel.clone(),
            scenario.task.to_string(),
            device,
            routes,
            config,
            settings.notifications,
            Some(demo),
        )?;
        Ok(sel)
    }

    /// The demo scenarios the app offers (`name`, `mode`, `task`, `about`).
    pub fn demo_scenarios(&self) -> Vec<DemoScenarioView> {
        phoneagent_testkit::demo::SCENARIOS
            .iter()
            .map(|s| DemoScenarioView {
                name: s.name.into(),
                mode: s.mode,
                task: s.task.into(),
                about: s.about.into(),
            })
            .collect()
    }

    /// Start `task` on `device` (the phone `sel`) with `routes` and `config` in a new session,
    /// that phone's from now on (one run at a time per phone): the session's events go to the subscribers (and to notifications), then the
    /// run's end. `demo`, the demo's scripted model server, is shut down when this run ends
    /// (dropped at once when the run cannot start).
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        sel: SelectedDevice,
        task: String,
        device: Arc<AdbDevice>,
        routes: Routes,
        config: AgentConfig,
        notifications: bool,
        demo: Option<crate::demo::DemoModel>,
    ) -> AppResult<()> {
        let me = self.arc()?;
        let mode = config.mode;
        // SPEC AR1: the policy table, rules and gate options saved in Settings, else
        // `approval-policy.toml` (or `.json`) next to the database, else the defaults;
        // reviewer = the `auto_reviewer` role.
        let auto_review = if mode == AccessMode::ApproveForMe {
            ApprovalPolicySettings::load(&self.store, self.config_dir())?.config
        } else {
            AutoReviewConfig::default()
        };
        let device: Arc<dyn Device> = device;
        let session = Session::new(
            SessionParts {
                device,
                actor: routes.actor,
                verifier: routes.verifier,
                safety_reviewer: routes.safety_reviewer,
                auto_reviewer: routes.auto_reviewer,
                auto_review,
                recorder: Arc::new(StoreRecorder::new(self.store.clone())),
                calibration_cache: None,
                screen_reader: screen_reader(),
                // The person answers in the window (or a notification): through the session's
                // registry, validated against id, expiry and kind.
                person: None,
            },
            config,
            Delegation::default(),
        );
        let rx = session.subscribe();
        let run_id = {
            let mut sessions = lock(&self.sessions);
            if let Some(p) = sessions.get(&sel.serial).filter(|p| p.session.is_busy()) {
                return Err(session_error(SessionError::Busy {
                    run_id: p.session.status().run_id.unwrap_or_default(),
                }));
            }
            let started = session
                .submit_as(
                    Submitter::Person,
                    Op::StartTask {
                        task,
                        mode,
                        options: TaskOptions::default(),
                    },
                )
                .map_err(session_error)?;
            let Ack::Started { run_id } = started else {
                return Err(AppError::internal("the start was not acknowledged"));
            };
            sessions.insert(
                sel.serial.clone(),
                PhoneSession {
                    device: sel.clone(),
                    session: session.clone(),
                },
            );
            run_id
        };
        let serial = sel.serial;
        tokio::spawn(async move {
            let outcome = me.forward_run(&session, rx, &run_id, notifications).await;
            let ended = match outcome {
                Some(o) => RunEnded {
                    run_id: o.run_id,
                    serial,
                    status: o.status,
                    termination_code: o.termination_code,
                    message: o.message,
                },
                None => RunEnded {
                    run_id: run_id.clone(),
                    serial,
                    status: RunStatus::Failed,
                    termination_code: ErrorCode::Internal.into(),
                    message: "the run ended without an outcome".into(),
                },
            };
            if let Some(d) = demo {
                d.shutdown().await;
            }
            me.emit(event_names::RUN_ENDED, &ended);
        });
        Ok(())
    }

    /// Forward run `run_id`'s events from `rx` (subscribed before it started) until its end,
    /// and return its outcome. Every event of the run is forwarded before the outcome: the
    /// session announces the end after its last event is sent.
    async fn forward_run(
        &self,
        session: &Session,
        mut rx: tokio::sync::broadcast::Receiver<EventEnvelope>,
        run_id: &str,
        notifications: bool,
    ) -> Option<RunOutcome> {
        let forward = |env: EventEnvelope| {
            if env.run_id == run_id {
                self.on_event(session, &env, notifications);
                self.emit(event_names::AGENT_EVENT, &env);
            }
        };
        let wait = session.wait(run_id);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                biased;
                r = rx.recv() => match r {
                    Ok(env) => forward(env),
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!(skipped = n, "UI event forwarder lagged");
                    }
                    Err(RecvError::Closed) => return (&mut wait).await,
                },
                outcome = &mut wait => {
                    loop {
                        match rx.try_recv() {
                            Ok(env) => forward(env),
                            Err(TryRecvError::Lagged(_)) => {}
                            Err(_) => break,
                        }
                    }
                    return outcome;
                }
            }
        }
    }

    /// Cancel the active run (SPEC R7): the in-flight model call is aborted and no further
    /// device command is sent. Which run: see [`Console::stop_run_of`].
    ///
    /// # Errors
    /// `not_running` when nothing runs.
    pub fn stop_run(&self) -> AppResult<()> {
        self.stop_run_of(None)
    }

    /// Cancel the run on phone `serial` (a serial or a run id; `None`: the selected phone's
    /// run, else the only one running; see [`crate::sessions`]).
    ///
    /// # Errors
    /// `not_running` when that phone runs nothing.
    pub fn stop_run_of(&self, serial: Option<&str>) -> AppResult<()> {
        self.submit_to(serial, Op::Cancel).map(drop)
    }

    /// Pause (`true`) or resume (`false`) the running task (U2): a paused agent finishes the
    /// device command in flight, sends no further ones and keeps its state until resumed.
    /// Which run: as [`Console::stop_run_of`].
    ///
    /// # Errors
    /// `not_running` when no task is running.
    pub fn set_paused(&self, paused: bool) -> AppResult<()> {
        self.set_paused_of(None, paused)
    }

    /// [`Console::set_paused`] for the run on phone `serial` (a serial or a run id).
    ///
    /// # Errors
    /// `not_running` when that phone runs nothing.
    pub fn set_paused_of(&self, serial: Option<&str>, paused: bool) -> AppResult<()> {
        self.submit_to(serial, if paused { Op::Pause } else { Op::Resume })
            .map(drop)
    }

    /// Id of the active run, if one is running (the selected phone's, else the only one; see
    /// [`crate::sessions`]).
    pub fn active_run(&self) -> Option<String> {
        self.active_run_of(None)
    }

    /// Id of the active run on phone `serial` (a serial or a run id), if one is running.
    pub fn active_run_of(&self, serial: Option<&str>) -> Option<String> {
        self.session_of(serial)
            .and_then(|p| p.session.status().run_id)
    }

    /// True while a run is active on phone `serial` and not paused: it drives the phone.
    pub(crate) fn run_drives_phone(&self, serial: &str) -> bool {
        self.session_on(serial).is_some_and(|s| {
            let st = s.status();
            st.run_id.is_some() && !st.paused
        })
    }

    fn remember_task(&self, task: &str) {
        let mut list: Vec<String> = self
            .store
            .setting(RECENT_TASKS_KEY)
            .ok()
            .flatten()
            .unwrap_or_default();
        list.retain(|t| t != task);
        list.insert(0, task.to_string());
        list.truncate(12);
        if let Err(e) = self.store.set_setting(RECENT_TASKS_KEY, &list) {
            tracing::warn!(error = %e, "could not save recent tasks");
        }
    }

    /// Recent tasks, newest first.
    pub fn recent_tasks(&self) -> AppResult<Vec<String>> {
        Ok(self.store.setting(RECENT_TASKS_KEY)?.unwrap_or_default())
    }
}
