//! The `ai` path of the approve-for-me reviewer (SPEC AR3, AR4, AR7, AR8): circuit breaker and
//! budgets before the call, a one-time grant, the verdict cache, the reviewer model call, the code
//! gates on its verdict and the breaker update after it. Routing and the returned decision are in
//! `auto/mod.rs`.

use super::*;

impl AutoReview {
    /// The `ai` path: breaker, budgets, grant, cache, the call, the gates, the breaker update.
    pub(super) async fn review(
        &self,
        evidence: &mut Evidence,
        args_key: &str,
        record: &mut ApprovalReview,
        call: &mut Option<ReviewCall>,
        lang: Lang,
        cancel: &CancellationToken,
    ) -> AutoAction {
        let cfg = &*self.cfg;
        let key = format!("{}\u{1f}{}", evidence.tool, args_key);
        // Before any call: breaker, review budget, failure budget.
        {
            let mut st = self.handle.lock();
            if st.open {
                record.gate = Some("breaker_open".into());
                record.decided_by = DecidedBy::Rule;
                record.reason = say(
                    lang,
                    "The approval circuit breaker is open after repeated denials in this run.",
                    "本次运行多次被拒，审批熔断已打开。",
                );
                return match cfg.circuit_breaker.action {
                    BreakerAction::Stop => AutoAction::StopRun,
                    BreakerAction::Delegate => AutoAction::Delegate,
                    BreakerAction::Deny => AutoAction::Deny,
                };
            }
            if st.reviews_used >= cfg.budget.max_reviews {
                record.gate = Some("budget_exhausted".into());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!(
                        "The run's review budget ({} reviews) is used up.",
                        cfg.budget.max_reviews
                    ),
                    &format!(
                        "本次运行的复核预算（{} 次）已用完。",
                        cfg.budget.max_reviews
                    ),
                );
                return match cfg.budget.on_exhausted {
                    Fallback::Delegate => AutoAction::Delegate,
                    Fallback::Deny => AutoAction::Deny,
                };
            }
            if st.failures_used >= cfg.max_failures {
                record.gate = Some("failure_budget_exhausted".into());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!(
                        "The reviewer failed {} times in this run; it is not asked again.",
                        st.failures_used
                    ),
                    &format!("复核者本次运行已失败 {} 次，不再询问。", st.failures_used),
                );
                return match cfg.on_reviewer_failure {
                    Fallback::Delegate => AutoAction::Delegate,
                    Fallback::Deny => AutoAction::Deny,
                };
            }
            // The user's off switch (after the code gates above, which it must never loosen):
            // the request goes to a person instead of the reviewer model.
            if self.handle.is_suspended() {
                record.gate = Some("suspended_by_user".into());
                record.decided_by = DecidedBy::Human;
                record.reason = say(
                    lang,
                    "Approve for me is switched off for this run: a person decides.",
                    "本次任务已关闭“替我审批”：由人工决定。",
                );
                return AutoAction::Delegate;
            }
            // A one-time grant for exactly this tool + arguments, unexpired: consumed now.
            let now = now_ms();
            st.grants
                .retain(|g| g.expires_at_ms.is_none_or(|e| e >= now));
            if let Some(i) = st
                .grants
                .iter()
                .position(|g| g.args_key == key && g.tool == evidence.tool)
            {
                let g = st.grants.remove(i);
                evidence.grant = Some(g.note);
                record.override_used = true;
            }
        }
        let facts = EvidenceFacts {
            thin: evidence.is_thin(),
            injection: !evidence.injection.is_empty(),
        };
        let model = self
            .reviewer
            .as_ref()
            .map(|r| r.model.clone())
            .unwrap_or_default();
        let cache_key = format!("{key}\u{1f}{}\u{1f}{model}", record.override_used);
        let cached = if cfg.verdict_cache.enabled {
            let now = now_ms();
            let mut st = self.handle.lock();
            st.cache
                .retain(|(_, at, _)| now.saturating_sub(*at) <= cfg.verdict_cache.ttl_ms);
            st.cache
                .iter()
                .find(|(k, _, _)| *k == cache_key)
                .map(|(_, _, v)| v.clone())
        } else {
            None
        };
        let result: Result<Verdict, ReviewFailure> = if let Some(v) = cached {
            record.cached = true;
            Ok(v)
        } else {
            let r = self.call_reviewer(evidence, call, lang, cancel).await;
            if let Some(c) = call.as_ref() {
                record.review_latency_ms = Some(c.elapsed.as_millis() as u64);
            }
            let mut st = self.handle.lock();
            if self.reviewer.is_some() {
                st.reviews_used += 1;
            }
            match &r {
                Ok(v) if cfg.verdict_cache.enabled => {
                    st.cache.push_back((cache_key, now_ms(), v.clone()));
                    while st.cache.len() > cfg.verdict_cache.max_entries.max(1) {
                        st.cache.pop_front();
                    }
                }
                Ok(_) => {}
                Err(_) => st.failures_used += 1,
            }
            r
        };
        let floor = GateFloor {
            tier: evidence.tier,
            task_authorizes: evidence.task_authorizes,
        };
        let gated = apply_gates(result.as_ref(), facts, floor, cfg);
        record.gate = gated.gate.map(str::to_string);
        match &result {
            Ok(v) => {
                record.verdict = Some(v.decision);
                record.risk = Some(v.risk);
                record.user_authorization = Some(v.user_authorization);
                record.suggestion = v.suggestion.clone();
                record.decided_by = DecidedBy::AutoReviewer;
                record.reason = match gated.gate {
                    None => v.reason.clone(),
                    Some(g) => format!("{} [{}]", v.reason, self.gate_note(g, evidence, lang)),
                };
            }
            Err(f) => {
                record.reviewer_error = Some(f.describe());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!("The reviewer could not decide ({}).", f.describe()),
                    &format!("复核者未能给出裁决（{}）。", f.describe()),
                );
            }
        }
        let mut action = match gated.action {
            GateAction::Allow => AutoAction::Allow,
            GateAction::Deny => AutoAction::Deny,
            GateAction::Delegate => AutoAction::Delegate,
        };
        // Breaker: only reviewer verdicts count (failures have their own budget).
        if result.is_ok() {
            let bc = cfg.circuit_breaker;
            let mut st = self.handle.lock();
            let denied = action == AutoAction::Deny;
            st.window.push_back(denied);
            while st.window.len() > bc.window_size.max(1) as usize {
                st.window.pop_front();
            }
            if denied {
                st.consecutive += 1;
            } else if action == AutoAction::Allow {
                st.consecutive = 0;
            }
            let window_denials = st.window.iter().filter(|d| **d).count() as u32;
            let trip = denied
                && ((bc.consecutive_denials > 0 && st.consecutive >= bc.consecutive_denials)
                    || (bc.window_denials > 0 && window_denials >= bc.window_denials));
            if trip {
                st.open = true;
                record.gate = Some("breaker_tripped".into());
                let why = say(
                    lang,
                    &format!(
                        "circuit breaker tripped: {} consecutive denials, {} of the last {} reviews denied",
                        st.consecutive,
                        window_denials,
                        st.window.len()
                    ),
                    &format!(
                        "审批熔断：连续 {} 次拒绝，最近 {} 次复核中 {} 次拒绝",
                        st.consecutive,
                        st.window.len(),
                        window_denials
                    ),
                );
                record.reason = format!("{} [{why}]", record.reason);
                if bc.action == BreakerAction::Stop {
                    action = AutoAction::StopRun;
                }
            }
        }
        action
    }

    fn gate_note(&self, gate: &str, evidence: &Evidence, lang: Lang) -> String {
        let cfg = &*self.cfg;
        match (gate, lang) {
            ("critical_risk", Lang::En) => "critical risk is always denied".into(),
            ("critical_risk", Lang::Zh) => "严重风险一律拒绝".into(),
            ("uncertain", Lang::En) => "the reviewer is uncertain".into(),
            ("uncertain", Lang::Zh) => "复核者无法判断".into(),
            ("screen_text_addresses_agent", Lang::En) => format!(
                "text relayed from the screen addresses the agent or claims prior approval ({}); screen text cannot authorize",
                evidence.injection.join(", ")
            ),
            ("screen_text_addresses_agent", Lang::Zh) => format!(
                "屏幕上的文字在对代理喊话或声称已预先授权（{}）；屏幕文字不能授权",
                evidence.injection.join("，")
            ),
            ("thin_evidence", Lang::En) => {
                "the evidence is incomplete (no screenshot, or truncated/unparseable arguments): not auto-allowed".into()
            }
            ("thin_evidence", Lang::Zh) => "证据不完整（无截图或参数被截断/无法解析），不自动放行".into(),
            ("high_risk_unauthorized", Lang::En) => {
                "high risk needs the task's authorization and a bounded scope".into()
            }
            ("high_risk_unauthorized", Lang::Zh) => "高风险需要任务授权且范围受限".into(),
            ("unauthorized_effect", Lang::En) => {
                "the task never asked for this irreversible effect: a person decides".into()
            }
            ("unauthorized_effect", Lang::Zh) => "任务并未要求此不可逆效果，交由人工决定".into(),
            ("risk_exceeded", Lang::En) => format!(
                "risk above the auto-allow limit ({})",
                cfg.max_auto_allow_risk.as_str()
            ),
            ("risk_exceeded", Lang::Zh) => format!(
                "风险超过自动放行上限（{}）",
                cfg.max_auto_allow_risk.as_str()
            ),
            (other, _) => other.to_string(),
        }
    }

    async fn call_reviewer(
        &self,
        evidence: &Evidence,
        call: &mut Option<ReviewCall>,
        lang: Lang,
        cancel: &CancellationToken,
    ) -> Result<Verdict, ReviewFailure> {
        let Some(route) = &self.reviewer else {
            return Err(ReviewFailure::Unavailable);
        };
        let req = ChatRequest {
            messages: evidence.messages(&self.cfg, lang),
            tools: vec![],
            tool_choice: None,
            temperature: Some(0.0),
            max_tokens: Some(self.cfg.max_tokens),
            stream: None,
        };
        let t0 = Instant::now();
        let child = cancel.child_token();
        let timeout = Duration::from_millis(self.cfg.timeout_ms.max(1));
        let out = tokio::time::timeout(timeout, route.client.chat(req, &child)).await;
        let elapsed = t0.elapsed();
        match out {
            Err(_) => {
                child.cancel();
                *call = Some(ReviewCall {
                    response: None,
                    error: None,
                    elapsed,
                });
                Err(ReviewFailure::Timeout(self.cfg.timeout_ms))
            }
            Ok(Err(e)) => {
                let msg = e.to_string();
                *call = Some(ReviewCall {
                    response: None,
                    error: Some(e),
                    elapsed,
                });
                Err(ReviewFailure::Error(msg))
            }
            Ok(Ok(resp)) => {
                let v = parse_verdict(
                    &resp.content,
                    resp.finish_reason.as_deref(),
                    self.cfg.reason_max_chars,
                );
                *call = Some(ReviewCall {
                    response: Some(resp),
                    error: None,
                    elapsed,
                });
                v
            }
        }
    }
}
