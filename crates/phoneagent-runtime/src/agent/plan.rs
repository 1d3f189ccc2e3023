//! Planning with the actor model (SPEC M3, M4, M7, P1, P6, R6, A1–A5): the coordinate contract
//! negotiation, the pure-vision planning request (the one place actor contexts are built), the
//! call with its rate-limit and failure handling, the answer-size limit, parsing, and the
//! registration of typed secrets before an answer is recorded anywhere.

use std::time::{Duration, Instant};

use phoneagent_llm::calibration::CalibrationCache;
use phoneagent_llm::config::{ActionProtocol, Role};
use phoneagent_llm::ledger::CallKind;
use phoneagent_llm::{ChatMessage, ChatRequest, ChatResponse, ContentPart, LlmError};
use phoneagent_protocol::event::RecoveryOutcome;
use phoneagent_protocol::{
    ActionKind, AgentEvent, CalibrationMethod, CoordinateSpace, ErrorCode, Phase, RunStatus,
};

use crate::adapters::{self, Prepared};
use crate::memory::{estimate_tokens, sanitize_text};

use super::{Flow, Obs, Run};

/// Size of a model answer in bytes: visible text, reasoning and tool call arguments.
fn answer_bytes(r: &ChatResponse) -> usize {
    r.content.len()
        + r.reasoning.as_ref().map_or(0, String::len)
        + r.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// Split an answer over the size limit into what is recorded (its first
/// [`crate::ANSWER_HEAD_BYTES`] and a note) and what the parser sees (only the note: nothing
/// in it parses as an action, so the model is asked again, A4).
fn over_long_answer(
    resp: ChatResponse,
    size: usize,
    limit: usize,
) -> (ChatResponse, ChatResponse, adapters::Rejection) {
    let note = format!(
        "[answer_too_long: {size} bytes, over the limit of {limit} bytes; answer with one short action]"
    );
    let rejection = adapters::Rejection {
        kind: "answer_too_long".into(),
        message: format!(
            "Your answer was {size} bytes, over the limit of {limit} bytes, and was not read. \
             Think briefly and answer with one action."
        ),
    };
    let whole = match &resp.reasoning {
        Some(r) => format!("<think>{r}</think>{}", resp.content),
        None => resp.content.clone(),
    };
    let mut cut = crate::ANSWER_HEAD_BYTES.min(whole.len());
    while !whole.is_char_boundary(cut) {
        cut -= 1;
    }
    let recorded = ChatResponse {
        content: format!("{}… {note}", &whole[..cut]),
        reasoning: None,
        tool_calls: Vec::new(),
        ..resp.clone()
    };
    let refused = ChatResponse {
        content: note,
        reasoning: None,
        tool_calls: Vec::new(),
        ..resp
    };
    (recorded, refused, rejection)
}

impl Run {
    pub(super) async fn negotiate_contract(&mut self, obs: &Obs) -> Result<CoordinateSpace, Flow> {
        let actor = self.agent.parts.actor.clone();
        // SPEC M7: a model family answers in its own trained convention; no probing.
        if let Some(ad) = actor.profile.family_adapter() {
            let space = ad.frozen_space();
            self.bus.emit(AgentEvent::CoordinateCalibration {
                method: CalibrationMethod::Family,
                space: Some(space),
                probes: vec![],
                detail: format!(
                    "model family {} of profile {}: coordinates {} read as {space}",
                    ad.family,
                    actor.profile_name,
                    ad.coords.as_str()
                ),
            });
            return Ok(space);
        }
        let space = actor.profile.coordinate_space;
        if space != CoordinateSpace::Auto {
            self.bus.emit(AgentEvent::CoordinateCalibration {
                method: CalibrationMethod::Explicit,
                space: Some(space),
                probes: vec![],
                detail: format!(
                    "coordinate space {space} set by the profile {}",
                    actor.profile_name
                ),
            });
            return Ok(space);
        }
        self.set_phase(Phase::Calibrating);
        let memory_cache = phoneagent_llm::calibration::MemoryCalibrationCache::default();
        let cache: &dyn CalibrationCache = match &self.agent.parts.calibration_cache {
            Some(c) => c.as_ref(),
            None => &memory_cache,
        };
        let calls_before = self.ledger.calls().len();
        let ctx = phoneagent_llm::calibration::CalibrationContext {
            client: actor.client.as_ref(),
            profile: &actor.profile,
            role: Role::Actor,
            geometry: obs.geometry,
            ledger: &self.ledger,
            cache,
            cancel: &self.cancel,
            settings: Default::default(),
        };
        let result = phoneagent_llm::calibration::negotiate(&ctx).await;
        // Calibration calls count in the ledger (M3/M4): emit them as model calls.
        for rec in self.ledger.calls().into_iter().skip(calls_before) {
            self.bus.emit(AgentEvent::ModelCall {
                role: "actor".into(),
                call_kind: "calibration".into(),
                model: rec.model.clone(),
                prompt_tokens: rec.prompt_tokens,
                completion_tokens: rec.completion_tokens,
                cost_usd: rec.cost_usd.unwrap_or(0.0),
                latency_ms: rec.latency_ms,
                content: String::new(),
                reasoning: None,
                error: None,
                run_totals: self.totals(),
            });
        }
        match result {
            Ok(report) => {
                self.bus.emit(report.to_event());
                match report.space {
                    Some(s) => Ok(s),
                    None => Err(Self::end(
                        RunStatus::Failed,
                        ErrorCode::CalibrationFailed,
                        report.detail,
                    )),
                }
            }
            Err(e) if e.code() == ErrorCode::Cancelled || self.cancel.is_cancelled() => {
                Err(self.cancelled_flow())
            }
            Err(e) => {
                let detail = format!("coordinate calibration failed: {e}");
                self.bus.emit(AgentEvent::CoordinateCalibration {
                    method: CalibrationMethod::Rejected,
                    space: None,
                    probes: vec![],
                    detail: detail.clone(),
                });
                Err(Self::end(
                    RunStatus::Failed,
                    ErrorCode::CalibrationFailed,
                    detail,
                ))
            }
        }
    }

    /// Build the planning request (the one place actor contexts are built; P1, R6).
    pub(super) fn build_request(
        &mut self,
        prepared: &Prepared,
        extra_confirmation: bool,
        retry_feedback: Option<&str>,
    ) -> ChatRequest {
        let _phase = phase!("build_request");
        let cfg = self.cfg().clone();
        let space = self.contract.unwrap_or(CoordinateSpace::Relative0999);
        let system = crate::prompt::system_prompt(&crate::prompt::PromptInput {
            task: &self.task,
            protocol: self.protocol(),
            space,
            image_size: (prepared.sent_w, prepared.sent_h),
            guard_sections: self.guards.prompt_sections(),
            lang: cfg.lang,
            app_launcher: cfg.app_launcher,
            wait_max_secs: cfg.wait_max_secs,
            family: self.family(),
        });
        let mut current = String::new();
        current.push_str(&format!("Task: {}\n", self.task));
        if !self.memory.notes.is_empty() {
            current.push_str("Your notes:\n");
            for n in &self.memory.notes {
                current.push_str(&format!("- {n}\n"));
            }
        }
        if !self.memory.task_board.is_empty() {
            current.push_str("Your task board:\n");
            for it in &self.memory.task_board {
                current.push_str(&format!(
                    "- [{}] {}\n",
                    if it.done { "x" } else { " " },
                    it.text
                ));
            }
        }
        if !self.memory.human_answers.is_empty() {
            current.push_str("The user's answers so far:\n");
            for a in &self.memory.human_answers {
                current.push_str(&format!("- {a}\n"));
            }
        }
        for f in self.feedback.iter() {
            current.push_str(&format!(
                "Result of your last action: {}\n",
                sanitize_text(f)
            ));
        }
        if let Some(r) = retry_feedback {
            current.push_str(&format!(
                "Your previous answer was rejected and nothing was done on the phone: {r}\nAnswer again with exactly one valid action.\n"
            ));
        }
        if extra_confirmation {
            current.push_str(
                "The run's token budget is exhausted. This is your one remaining turn: you may confirm your pending finish \
                 with finish(message=..., confirm=true) if the review package still holds, or stop. Other actions will not be run.\n",
            );
        }
        current.push_str(&format!(
            "Current screenshot (screen #{}, image {}x{} px). Reply with one action.",
            self.screen_seq, prepared.sent_w, prepared.sent_h
        ));
        let mut messages = vec![ChatMessage::system(system)];
        let history_budget = cfg
            .input_token_budget
            .map(|b| b.saturating_sub(prepared.est_tokens + estimate_tokens(&current) + 1500));
        // Drop the oldest whole turns only when the input-token budget requires it (R6).
        loop {
            let hist = crate::prompt::history_messages(self.memory.turns());
            let tokens: u64 = hist.iter().map(|m| estimate_tokens(&m.1)).sum();
            if history_budget.is_none_or(|b| tokens <= b) || !self.memory.drop_oldest() {
                for (role, text) in hist {
                    messages.push(if role == "assistant" {
                        ChatMessage::assistant(text, vec![])
                    } else {
                        ChatMessage::user(text)
                    });
                }
                break;
            }
        }
        messages.push(ChatMessage::user_parts(vec![
            ContentPart::text(current),
            ContentPart::image(prepared.data_url.clone()),
        ]));
        let tools = match self.protocol() {
            ActionProtocol::Tools if self.family().is_none() => adapters::tool_specs(&cfg),
            _ => Vec::new(),
        };
        ChatRequest {
            messages,
            tools,
            tool_choice: None,
            temperature: Some(0.0),
            max_tokens: Some(2048),
            stream: None,
        }
    }

    pub(super) async fn call_actor(
        &mut self,
        req: ChatRequest,
        kind: CallKind,
        image: (u32, u32),
        obs: &Obs,
    ) -> Result<ChatResponse, Flow> {
        self.set_phase(Phase::Planning);
        let actor = self.agent.parts.actor.clone();
        let t0 = Instant::now();
        let (max_wait, wait_limit) = self.rate_limit_wait();
        let result = tokio::select! {
            r = actor.client.chat_within(req, &self.cancel, max_wait) => r,
            _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
        };
        match result {
            Ok(resp) => {
                // SPEC P6: register typed secrets before the answer is recorded anywhere.
                self.register_secrets(&resp, image, obs).await;
                let size = answer_bytes(&resp);
                if size > self.cfg().max_answer_bytes {
                    // Never acted on, never stored whole (issue #11): its head is the record.
                    let limit = self.cfg().max_answer_bytes;
                    let (recorded, refused, rejection) = over_long_answer(resp, size, limit);
                    self.account(Role::Actor, kind, &actor, Ok(&recorded));
                    self.refused_answer = Some(rejection);
                    return Ok(refused);
                }
                self.account(Role::Actor, kind, &actor, Ok(&resp));
                Ok(resp)
            }
            Err(e) => {
                let code = e.code();
                self.account(Role::Actor, kind, &actor, Err((&e, t0.elapsed())));
                if code == ErrorCode::Cancelled || self.cancel.is_cancelled() {
                    return Err(self.cancelled_flow());
                }
                if let LlmError::RateLimited {
                    retry_after_ms: Some(ms),
                    ..
                } = &e
                {
                    let wait = Duration::from_millis(*ms);
                    if wait > max_wait {
                        // Asking again now would only be refused again: stop, and say why.
                        let msg = format!(
                            "the model provider asked to wait {} s before the next request (Retry-After), longer than {wait_limit}: \
                             the run stopped; try again later",
                            ms.div_ceil(1000)
                        );
                        self.recover(RecoveryOutcome::Abort, code, None, &msg, true);
                        return Err(Self::end(RunStatus::Failed, code, msg));
                    }
                    // Within the limits: wait as asked before planning again.
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.cancel.cancelled() => return Err(self.cancelled_flow()),
                    }
                }
                self.hard_failures += 1;
                if self.hard_failures > self.cfg().max_hard_failures
                    || code == ErrorCode::ModelConfig
                {
                    self.recover(RecoveryOutcome::Abort, code, None, &e.to_string(), true);
                    return Err(Self::end(RunStatus::Failed, code, e.to_string()));
                }
                self.recover(RecoveryOutcome::Replan, code, None, &e.to_string(), true);
                Err(Flow::Continue)
            }
        }
    }

    /// How long a model server may make this run wait (`Retry-After`): the configured maximum
    /// or the remaining wall time, whichever is shorter, and words for it.
    fn rate_limit_wait(&self) -> (Duration, String) {
        let used = self.started.elapsed().saturating_sub(self.paused_for);
        let left = self.cfg().max_duration.saturating_sub(used);
        let max = self.cfg().max_rate_limit_wait;
        if left < max {
            (
                left,
                format!("the {} s left of the run's time", left.as_secs()),
            )
        } else {
            (max, format!("the maximum wait of {} s", max.as_secs()))
        }
    }

    /// Parse the actor's answer (A1–A5); an answer refused for its size is its rejection.
    pub(super) fn parse_actor(
        &mut self,
        resp: &ChatResponse,
        prepared: &Prepared,
    ) -> adapters::Parsed {
        if let Some(r) = self.refused_answer.take() {
            return adapters::Parsed {
                actions: vec![Err(r)],
            };
        }
        adapters::parse_response(
            resp,
            self.protocol(),
            self.family().as_ref(),
            self.cfg(),
            self.contract,
            (prepared.sent_w, prepared.sent_h),
            &self.task,
        )
    }

    /// True when `text` typed now is a secret (SPEC P6): the last touch focused a credential
    /// field, or the text has a credential's shape.
    pub(super) fn typed_secret(&self, text: &str) -> bool {
        self.credential_field_focused || crate::secrets::is_secret_shape(text)
    }

    /// Register the secrets an answer will type (SPEC P6): text for a credential field (the
    /// last touch focused one, or the screen reader reads the focused field's label as one) or
    /// with a credential shape. Called before the answer is recorded anywhere, so a password
    /// never reaches a `model_call` event, the store or an export in the clear.
    async fn register_secrets(&mut self, resp: &ChatResponse, image: (u32, u32), obs: &Obs) {
        let parsed = adapters::parse_response(
            resp,
            self.protocol(),
            self.family().as_ref(),
            self.cfg(),
            self.contract,
            image,
            &self.task,
        );
        let typed: Vec<String> = parsed
            .actions
            .iter()
            .flatten()
            .filter_map(|(_, a)| match &a.kind {
                ActionKind::Type { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        if typed.is_empty() {
            return;
        }
        // The touch's own reading did not say "credential field": read the field's label on
        // the planning frame now (the gate reuses this reading).
        if !self.credential_field_focused
            && let Some(reading) = self.read_field(obs).await
            && crate::secrets::is_credential_field(&reading)
        {
            self.credential_field_focused = true;
        }
        for text in typed {
            if self.typed_secret(&text) {
                self.bus.secrets().add(&text);
            }
        }
    }
}
