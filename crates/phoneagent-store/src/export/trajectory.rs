//! The trajectory view of a run and its JSON export (SPEC T2, schema `1.3`).
//!
//! [`RunView::load`] reads a run and its events and derives everything the exports show. It
//! reads event payloads as JSON by field name, so events from a newer or older writer still
//! export (unknown kinds are kept in the event stream and ignored by the derivations).
//!
//! Event kinds and fields read (see `phoneagent_protocol::event::AgentEvent`; every payload also
//! carries the envelope's `step`):
//!
//! | kind | fields | used for |
//! |---|---|---|
//! | `run_started` | `policy`, `serial`, `profile`, `model`, `base_url`, `protocol`, `mode`, `max_steps`, `max_duration_ms`, `demo` | policy block, run metadata |
//! | `coordinate_calibration` | `method`, `space`, `probes`, `detail` | coordinate metadata |
//! | `observation` | `screenshot`, `width`, `height`, `blocked`, `screen_seq`, `purpose` | step screenshot (`purpose = "plan"` first, else the first one), after-screenshot (`verify`) |
//! | `model_call` | `role`, `call_kind`, `prompt_tokens`, `completion_tokens`, `cost_usd`, `latency_ms`, `error`, `run_totals` | token/cost metrics per step, role and call kind |
//! | `protocol_rejected` | `attempt`, `error_kind`, `message` | step root error `protocol_error` |
//! | `action_proposed` | `action` (with `action`, `screen_description`, `reason`, …), `points[].device` | the step's action and drawn points |
//! | `gate_decision` | all | step gate decisions |
//! | `human_requested` / `human_resolved` | all | step human interactions |
//! | `freshness` | `outcome`, … | step freshness; `stale` is a warning |
//! | `action_dispatched` | `action_type`, `device_points`, `command_ok`, `error`, `message` | `dispatched`, `command_ok`, root error |
//! | `verification` | `dispatched`, `command_ok`, `observable_effect`, `changed_fraction`, `warnings` | `observable_effect`, warnings |
//! | `recovery` | `outcome`, `code`, `hard_failures`, `soft_replans` | `recovery_needed`, root error, counters |
//! | `warning` | `code`, `message` | warnings |
//! | `note`, `tool_result`, `finish_review`, `finish_rejected`, `finish_verifier`, `device_lost`, `device_restored` | all | shown per step |
//! | `run_finished` | `status`, `termination_code`, `message`, `steps`, `tokens`, `hard_failures`, `soft_replans` | outcome, totals (preferred over sums) |

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use phoneagent_protocol::event::{TRAJECTORY_SCHEMA_VERSION, TrajectoryPolicy};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::error::{Result, StoreError};
use crate::store::Store;
use crate::types::{EventRecord, RunRecord, RunStatus};

/// Options of the JSON export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// Put each referenced screenshot's bytes in `screenshots.<hash>.data_base64`
    /// (otherwise screenshots are referenced by hash only).
    pub inline_screenshots: bool,
}

/// Execution facts, kept separate on purpose (SPEC R4, T2).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepFacts {
    /// A command was sent to the device in this step.
    pub dispatched: bool,
    /// The device command reported success (`None` when nothing was dispatched).
    pub command_ok: Option<bool>,
    /// The screen changed meaningfully afterwards (`None` when not verified).
    pub observable_effect: Option<bool>,
    /// A recovery was chosen in this step.
    pub recovery_needed: bool,
    /// Warning codes of this step (verification warnings, `warning` events, stale freshness).
    pub warnings: Vec<String>,
    /// The first error code seen in the step (not erased by a later recovery), if any.
    pub root_error: Option<String>,
}

/// Token and cost totals of a step or a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Model calls.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost in USD (0 when prices are unknown).
    pub cost_usd: f64,
    /// Sum of model call latencies, ms.
    pub latency_ms: u64,
}

impl Usage {
    fn add_call(&mut self, p: &Value) {
        self.calls += 1;
        self.prompt_tokens += get_u64(p, "prompt_tokens");
        self.completion_tokens += get_u64(p, "completion_tokens");
        self.cost_usd += p.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0);
        self.latency_ms += get_u64(p, "latency_ms");
    }
}

/// A reference to a screenshot taken during a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShotRef {
    /// sha256 hex (key of the `screenshots` table).
    pub sha256: String,
    /// Width in px.
    pub width: u32,
    /// Height in px.
    pub height: u32,
    /// The frame was black/blank (protected window, SPEC D3).
    pub blocked: bool,
    /// Why it was taken (`plan`, `freshness`, `verify`, `confirm`).
    pub purpose: String,
    /// The run's screen sequence number.
    pub screen_seq: u64,
}

/// Everything that happened in one step, derived from its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepView {
    /// Step number (0 = before the first step).
    pub step: u32,
    /// Time of the first event of the step, ms since the Unix epoch.
    pub started_ms: i64,
    /// Time of the last event of the step.
    pub ended_ms: i64,
    /// The screenshot the action was planned on.
    pub observation: Option<ShotRef>,
    /// The screenshot taken after dispatch for verification.
    pub after: Option<ShotRef>,
    /// The proposed action as JSON (`action` tag, coordinates, `screen_description`, `reason`…).
    pub action: Option<Value>,
    /// Action type (`tap`, `swipe`, …).
    pub action_type: Option<String>,
    /// Device pixel points of the action: dispatched points, else the mapped proposal points.
    pub device_points: Vec<[f64; 2]>,
    /// Coordinate mappings of the proposal (model, canonical, runtime, device).
    pub mapped_points: Vec<Value>,
    /// `gate_decision` payloads.
    pub gate: Vec<Value>,
    /// `human_requested` / `human_resolved` payloads.
    pub human: Vec<Value>,
    /// `freshness` payloads.
    pub freshness: Vec<Value>,
    /// `action_dispatched` payload.
    pub dispatch: Option<Value>,
    /// `verification` payload.
    pub verification: Option<Value>,
    /// `recovery` payloads.
    pub recovery: Vec<Value>,
    /// `protocol_rejected` payloads.
    pub protocol_rejections: Vec<Value>,
    /// Other events worth showing (`note`, `tool_result`, `finish_*`, `device_*`, `warning`,
    /// `guard_active`, `model_fallback`), as `{kind, …payload}`.
    pub other: Vec<Value>,
    /// Token usage of the step.
    pub usage: Usage,
    /// Execution facts.
    pub facts: StepFacts,
}

/// A run with its events and everything derived from them.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run row.
    pub run: RunRecord,
    /// All events, in order.
    pub events: Vec<EventRecord>,
    /// The `run_started` payload, if recorded.
    pub started: Option<Value>,
    /// The `run_finished` payload, if recorded.
    pub finished: Option<Value>,
    /// The trajectory policy block.
    pub policy: TrajectoryPolicy,
    /// `coordinate_calibration` payloads.
    pub calibrations: Vec<Value>,
    /// Steps in order.
    pub steps: Vec<StepView>,
    /// Token/cost totals of the run.
    pub usage: Usage,
    /// Usage per role.
    pub usage_by_role: BTreeMap<String, Usage>,
    /// Usage per call kind.
    pub usage_by_call_kind: BTreeMap<String, Usage>,
    /// Hard failures (from `run_finished`, else the highest count a `recovery` event reported).
    pub hard_failures: u64,
    /// Soft replans (same sources).
    pub soft_replans: u64,
    /// Count of each recovery outcome.
    pub recovery_outcomes: BTreeMap<String, u64>,
    /// Root error of the run (see [`RunView::load`]).
    pub root_error: Option<String>,
    /// Termination code: `run_finished`'s, else the run row's.
    pub termination_code: Option<String>,
    /// The final message (`run_finished.message`), if any.
    pub final_message: Option<String>,
}

fn get_u64(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn get_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn shot(p: &Value) -> Option<ShotRef> {
    Some(ShotRef {
        sha256: get_str(p, "screenshot")?.to_owned(),
        width: u32::try_from(get_u64(p, "width")).unwrap_or(0),
        height: u32::try_from(get_u64(p, "height")).unwrap_or(0),
        blocked: p.get("blocked").and_then(Value::as_bool).unwrap_or(false),
        purpose: get_str(p, "purpose").unwrap_or("").to_owned(),
        screen_seq: get_u64(p, "screen_seq"),
    })
}

fn point_of(v: &Value) -> Option<[f64; 2]> {
    Some([v.get("x")?.as_f64()?, v.get("y")?.as_f64()?])
}

fn with_kind(e: &EventRecord) -> Value {
    let mut p = e.payload.clone();
    if let Value::Object(m) = &mut p {
        m.insert("kind".into(), Value::String(e.kind.clone()));
        m.insert("seq".into(), Value::from(e.seq));
        m.insert("ts_ms".into(), Value::from(e.ts_ms));
    }
    p
}

impl StepView {
    fn new(step: u32, ts: i64) -> Self {
        Self {
            step,
            started_ms: ts,
            ended_ms: ts,
            ..Self::default()
        }
    }

    fn note_root(&mut self, code: Option<&str>) {
        if self.facts.root_error.is_none()
            && let Some(c) = code.filter(|c| !c.is_empty())
        {
            self.facts.root_error = Some(c.to_owned());
        }
    }

    fn apply(&mut self, e: &EventRecord) {
        let p = &e.payload;
        self.ended_ms = self.ended_ms.max(e.ts_ms);
        match e.kind.as_str() {
            "observation" => {
                if let Some(s) = shot(p) {
                    let is_plan = s.purpose == "plan";
                    if s.purpose == "verify" {
                        self.after = Some(s);
                    } else if self.observation.is_none()
                        || (is_plan
                            && self
                                .observation
                                .as_ref()
                                .is_some_and(|o| o.purpose != "plan"))
                    {
                        self.observation = Some(s);
                    }
                }
            }
            "model_call" => {
                self.usage.add_call(p);
                self.note_root(get_str(p, "error"));
            }
            "protocol_rejected" => {
                self.protocol_rejections.push(p.clone());
            }
            "action_proposed" => {
                let action = p.get("action").cloned();
                self.action_type = action
                    .as_ref()
                    .and_then(|a| get_str(a, "action"))
                    .map(str::to_owned);
                self.action = action;
                self.mapped_points = p
                    .get("points")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if self.dispatch.is_none() {
                    self.device_points = self
                        .mapped_points
                        .iter()
                        .filter_map(|m| m.get("device").and_then(point_of))
                        .collect();
                }
            }
            "gate_decision" => self.gate.push(p.clone()),
            "human_requested" | "human_resolved" => self.human.push(with_kind(e)),
            "freshness" => {
                if get_str(p, "outcome") == Some("stale") {
                    self.facts.warnings.push("stale_action".into());
                }
                self.freshness.push(p.clone());
            }
            "action_dispatched" => {
                self.facts.dispatched = true;
                let ok = p
                    .get("command_ok")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                self.facts.command_ok = Some(self.facts.command_ok.unwrap_or(true) && ok);
                if !ok {
                    self.note_root(get_str(p, "error").or(Some("command_failed")));
                }
                if self.action_type.is_none() {
                    self.action_type = get_str(p, "action_type").map(str::to_owned);
                }
                let pts: Vec<[f64; 2]> = p
                    .get("device_points")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(point_of).collect())
                    .unwrap_or_default();
                if !pts.is_empty() {
                    self.device_points = pts;
                }
                self.dispatch = Some(p.clone());
            }
            "verification" => {
                if let Some(eff) = p.get("observable_effect").and_then(Value::as_bool) {
                    self.facts.observable_effect = Some(eff);
                }
                if let Some(ws) = p.get("warnings").and_then(Value::as_array) {
                    self.facts
                        .warnings
                        .extend(ws.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                self.verification = Some(p.clone());
            }
            "recovery" => {
                self.facts.recovery_needed = true;
                self.note_root(get_str(p, "code"));
                self.recovery.push(p.clone());
            }
            "warning" => {
                if let Some(c) = get_str(p, "code") {
                    self.facts.warnings.push(c.to_owned());
                }
                self.other.push(with_kind(e));
            }
            "device_lost" => {
                self.note_root(Some("device_lost"));
                self.other.push(with_kind(e));
            }
            "note" | "tool_result" | "finish_review" | "finish_rejected" | "finish_verifier"
            | "device_restored" | "guard_active" | "model_fallback" => {
                self.other.push(with_kind(e));
            }
            _ => {}
        }
        if e.kind == "protocol_rejected" {
            self.note_root(Some("protocol_error"));
        }
    }

    fn is_empty(&self) -> bool {
        self.observation.is_none()
            && self.action.is_none()
            && self.dispatch.is_none()
            && self.gate.is_empty()
            && self.human.is_empty()
            && self.recovery.is_empty()
            && self.protocol_rejections.is_empty()
            && self.other.is_empty()
            && self.usage.calls == 0
    }
}

impl RunView {
    /// Loads run `id` and derives the view.
    ///
    /// Run-level root error: the `code` of the last `recovery` whose outcome is `abort` or
    /// `request_takeover`; else, for a run that did not succeed, the last step root error; else
    /// none. Totals prefer `run_finished.tokens`, then the last `model_call.run_totals`, then the
    /// sum of `model_call` events.
    ///
    /// Errors: [`StoreError::UnknownRun`].
    pub fn load(store: &Store, id: Uuid) -> Result<Self> {
        let run = store.run(id)?.ok_or(StoreError::UnknownRun(id))?;
        let events = store.events(id)?;
        Ok(Self::from_parts(run, events))
    }

    /// Derives the view from a run row and its events (ordered by seq).
    pub fn from_parts(run: RunRecord, events: Vec<EventRecord>) -> Self {
        let mut started = None;
        let mut finished = None;
        let mut calibrations = Vec::new();
        let mut steps: Vec<StepView> = Vec::new();
        let mut usage = Usage::default();
        let mut usage_by_role: BTreeMap<String, Usage> = BTreeMap::new();
        let mut usage_by_call_kind: BTreeMap<String, Usage> = BTreeMap::new();
        let mut last_run_totals: Option<Value> = None;
        let mut hard = 0;
        let mut soft = 0;
        let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
        let mut terminal_recovery_code: Option<String> = None;

        for e in &events {
            let p = &e.payload;
            match e.kind.as_str() {
                "run_started" => started = Some(p.clone()),
                "run_finished" => finished = Some(p.clone()),
                "coordinate_calibration" => calibrations.push(p.clone()),
                "model_call" => {
                    usage.add_call(p);
                    let role = get_str(p, "role").unwrap_or("unknown").to_owned();
                    usage_by_role.entry(role).or_default().add_call(p);
                    let ck = get_str(p, "call_kind").unwrap_or("unknown").to_owned();
                    usage_by_call_kind.entry(ck).or_default().add_call(p);
                    if let Some(t) = p.get("run_totals") {
                        last_run_totals = Some(t.clone());
                    }
                }
                "recovery" => {
                    hard = hard.max(get_u64(p, "hard_failures"));
                    soft = soft.max(get_u64(p, "soft_replans"));
                    let outcome = get_str(p, "outcome").unwrap_or("unknown");
                    *outcomes.entry(outcome.to_owned()).or_default() += 1;
                    if matches!(outcome, "abort" | "request_takeover") {
                        terminal_recovery_code = get_str(p, "code").map(str::to_owned);
                    }
                }
                _ => {}
            }
            let n = e.step();
            let needs_new = steps.last().is_none_or(|s| s.step != n);
            if needs_new {
                steps.push(StepView::new(n, e.ts_ms));
            }
            if let Some(s) = steps.last_mut() {
                s.apply(e);
            }
        }
        steps.retain(|s| !s.is_empty());

        // Totals: run_finished > last run_totals > sums.
        let totals_src = finished
            .as_ref()
            .and_then(|f| f.get("tokens"))
            .or(last_run_totals.as_ref());
        if let Some(t) = totals_src {
            usage.prompt_tokens = get_u64(t, "prompt_tokens").max(usage.prompt_tokens);
            usage.completion_tokens = get_u64(t, "completion_tokens").max(usage.completion_tokens);
            if let Some(c) = t.get("cost_usd").and_then(Value::as_f64) {
                usage.cost_usd = c.max(usage.cost_usd);
            }
            usage.calls = get_u64(t, "calls").max(usage.calls);
        }
        if let Some(f) = &finished {
            hard = hard.max(get_u64(f, "hard_failures"));
            soft = soft.max(get_u64(f, "soft_replans"));
        }

        let policy = started
            .as_ref()
            .and_then(|s| s.get("policy"))
            .and_then(|p| serde_json::from_value::<TrajectoryPolicy>(p.clone()).ok())
            .unwrap_or_else(|| {
                let launcher = run
                    .metadata
                    .get("deterministic_app_launch")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                TrajectoryPolicy::pure_vision(launcher)
            });

        let root_error = terminal_recovery_code.or_else(|| {
            if matches!(run.status, RunStatus::Succeeded) {
                None
            } else {
                steps.iter().rev().find_map(|s| s.facts.root_error.clone())
            }
        });
        let termination_code = finished
            .as_ref()
            .and_then(|f| get_str(f, "termination_code"))
            .map(str::to_owned)
            .or_else(|| run.termination_code.clone());
        let final_message = finished
            .as_ref()
            .and_then(|f| get_str(f, "message"))
            .map(str::to_owned);

        Self {
            run,
            events,
            started,
            finished,
            policy,
            calibrations,
            steps,
            usage,
            usage_by_role,
            usage_by_call_kind,
            hard_failures: hard,
            soft_replans: soft,
            recovery_outcomes: outcomes,
            root_error,
            termination_code,
            final_message,
        }
    }

    /// Status to show: the run row's, which reflects `interrupted` marking too.
    pub fn status(&self) -> RunStatus {
        self.run.status
    }

    /// A field of `run_started` as text.
    pub fn started_str(&self, key: &str) -> Option<&str> {
        self.started.as_ref().and_then(|s| get_str(s, key))
    }

    /// Distinct screenshot hashes referenced by `observation` events, in first-use order.
    pub fn screenshot_hashes(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.events
            .iter()
            .filter(|e| e.kind == "observation")
            .filter_map(|e| get_str(&e.payload, "screenshot"))
            .filter(|h| seen.insert(h.to_string()))
            .map(str::to_owned)
            .collect()
    }

    fn run_json(&self) -> Value {
        let r = &self.run;
        let st = |k: &str| self.started.as_ref().and_then(|s| s.get(k)).cloned();
        json!({
            "id": r.id,
            "task": r.task,
            "status": r.status,
            "started_ms": r.started_ms,
            "started_at": crate::export::rfc3339(r.started_ms),
            "ended_ms": r.ended_ms,
            "duration_ms": r.duration_ms(),
            "device_serial": r.device_serial.clone().or_else(|| self.started_str("serial").map(str::to_owned)),
            "model_profile": r.model_profile.clone().or_else(|| self.started_str("profile").map(str::to_owned)),
            "model": r.model.clone().or_else(|| self.started_str("model").map(str::to_owned)),
            "base_url": st("base_url"),
            "protocol": st("protocol"),
            "access_mode": r.access_mode,
            "max_steps": st("max_steps"),
            "max_duration_ms": st("max_duration_ms"),
            "demo": st("demo").unwrap_or(Value::Bool(false)),
            "steps": self.finished.as_ref().map(|f| get_u64(f, "steps")).unwrap_or_else(|| u64::from(self.steps.last().map_or(0, |s| s.step))),
            "termination_code": self.termination_code,
            "final_message": self.final_message,
            "summary": r.summary,
            "metadata": r.metadata,
        })
    }

    fn execution_json(&self) -> Value {
        let mut dispatched = 0u64;
        let mut ok = 0u64;
        let mut failed = 0u64;
        let mut effect = 0u64;
        let mut no_effect = 0u64;
        let mut recovery_steps = 0u64;
        for s in &self.steps {
            if s.facts.dispatched {
                dispatched += 1;
            }
            match s.facts.command_ok {
                Some(true) => ok += 1,
                Some(false) => failed += 1,
                None => {}
            }
            match s.facts.observable_effect {
                Some(true) => effect += 1,
                Some(false) => no_effect += 1,
                None => {}
            }
            if s.facts.recovery_needed {
                recovery_steps += 1;
            }
        }
        let warnings: Vec<Value> = self
            .steps
            .iter()
            .flat_map(|s| {
                s.facts
                    .warnings
                    .iter()
                    .map(move |w| json!({"step": s.step, "code": w}))
            })
            .collect();
        json!({
            "dispatched": dispatched,
            "command_ok": ok,
            "command_failed": failed,
            "observable_effect": effect,
            "no_observable_effect": no_effect,
            "recovery_needed": recovery_steps > 0,
            "steps_with_recovery": recovery_steps,
            "warnings": warnings,
            "root_error": self.root_error,
            "termination_code": self.termination_code,
        })
    }

    fn coordinates_json(&self) -> Value {
        let contract = self.calibrations.last().map(|c| {
            json!({
                "method": c.get("method"),
                "space": c.get("space"),
                "detail": c.get("detail"),
            })
        });
        let screen = self
            .steps
            .iter()
            .find_map(|s| s.observation.as_ref())
            .map(|o| json!({"width_px": o.width, "height_px": o.height}));
        json!({
            "contract": contract,
            "calibrations": self.calibrations,
            "screen": screen,
            "runtime_space": "relative 0..=999 on each axis",
            "device_space": "device pixels of the current orientation",
            "note": "each action_proposed event carries points[] with model, canonical [0,1], runtime and device coordinates; action_dispatched carries the device points sent",
        })
    }

    fn metrics_json(&self) -> Value {
        let u = &self.usage;
        json!({
            "calls": u.calls,
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "total_tokens": u.prompt_tokens + u.completion_tokens,
            "cost_usd": u.cost_usd,
            "model_latency_ms": u.latency_ms,
            "by_role": self.usage_by_role,
            "by_call_kind": self.usage_by_call_kind,
        })
    }

    fn step_json(&self, s: &StepView) -> Value {
        json!({
            "step": s.step,
            "started_ms": s.started_ms,
            "ended_ms": s.ended_ms,
            "observation": s.observation,
            "after": s.after,
            "action_type": s.action_type,
            "action": s.action,
            "device_points": s.device_points,
            "execution": s.facts,
            "usage": s.usage,
        })
    }

    /// The trajectory document (schema `1.3`).
    pub fn to_json(&self, store: &Store, opts: &JsonOptions) -> Result<Value> {
        let run_id = self.run.id.to_string();
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| {
                let mut m = serde_json::Map::new();
                m.insert("run_id".into(), Value::String(run_id.clone()));
                m.insert("seq".into(), Value::from(e.seq));
                m.insert("ts_ms".into(), Value::from(e.ts_ms));
                m.insert("step".into(), Value::from(e.step()));
                m.insert("kind".into(), Value::String(e.kind.clone()));
                if let Value::Object(p) = &e.payload {
                    for (k, v) in p {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                } else {
                    m.insert("payload".into(), e.payload.clone());
                }
                Value::Object(m)
            })
            .collect();
        let mut shots = serde_json::Map::new();
        for h in self.screenshot_hashes() {
            let entry = match store.screenshot(&h)? {
                Some(s) => {
                    let mut o = json!({
                        "mime": s.mime,
                        "width": s.width,
                        "height": s.height,
                        "bytes": s.bytes.len(),
                    });
                    if opts.inline_screenshots {
                        o["data_base64"] = Value::String(
                            base64::engine::general_purpose::STANDARD.encode(&s.bytes),
                        );
                    }
                    o
                }
                None => json!({"missing": true}),
            };
            shots.insert(h, entry);
        }
        Ok(json!({
            "schema_version": TRAJECTORY_SCHEMA_VERSION,
            "generator": concat!("phoneagent-store ", env!("CARGO_PKG_VERSION")),
            "exported_at_ms": crate::types::now_ms(),
            "policy": self.policy,
            "run": self.run_json(),
            "coordinates": self.coordinates_json(),
            "execution": self.execution_json(),
            "recovery": {
                "hard_failures": self.hard_failures,
                "soft_replans": self.soft_replans,
                "outcomes": self.recovery_outcomes,
            },
            "metrics": self.metrics_json(),
            "steps": self.steps.iter().map(|s| self.step_json(s)).collect::<Vec<_>>(),
            "events": events,
            "screenshots": shots,
        }))
    }
}

/// The trajectory JSON of run `id` (schema `1.3`).
pub fn trajectory_json(store: &Store, id: Uuid, opts: &JsonOptions) -> Result<Value> {
    RunView::load(store, id)?.to_json(store, opts)
}

/// Writes the trajectory JSON of run `id` to `path` (pretty-printed).
pub fn write_trajectory_json(
    store: &Store,
    id: Uuid,
    opts: &JsonOptions,
    path: &Path,
) -> Result<()> {
    let doc = trajectory_json(store, id, opts)?;
    let text = serde_json::to_vec_pretty(&doc).map_err(StoreError::json("trajectory"))?;
    crate::export::write_file(path, &text)
}
