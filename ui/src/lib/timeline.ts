// The run timeline: a pure reducer from `EventEnvelope`s to what the Timeline and the Mirror
// show (SPEC U3). Used live (events from the `agent-event` stream) and for replay (events
// from the store), so both views are the same by construction.

import type { Action, AgentEvent, EventEnvelope, HumanRequestKind, HumanResponse, MappedPoint, Phase, TokenTotals } from './events';

export interface GateView { tool: string; tier: string; reasons: string[]; outcome: string; decided_by: string; receipt: string | null; latency_ms: number }
export interface HumanView { request_id: string; request: HumanRequestKind; response: HumanResponse | null; decided_by: string | null }
export interface VerificationView { observable_effect: boolean; changed_fraction: number; warnings: string[]; command_ok: boolean }

export interface StepView {
  step: number;
  /** sha256 of the planning screenshot (first observation of the step). */
  screenshot: string | null;
  width: number;
  height: number;
  action: Action | null;
  points: MappedPoint[];
  gates: GateView[];
  humans: HumanView[];
  dispatched: boolean;
  dispatchError: string | null;
  verification: VerificationView | null;
  freshness: string | null;
  rejections: string[];
  toolResults: { tool: string; status: string; text: string }[];
  /** Notes and warnings: `lead` is the interface's word (English key for `t`, may be empty),
   *  `detail` the runtime's or the model's own words (shown verbatim). */
  notes: Line[];
  warnings: Line[];
  recovery: string | null;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** A line of a step: the interface's `lead` (English key, may be empty) and verbatim `detail`. */
export interface Line {
  lead: string;
  detail: string;
}

export interface TimelineState {
  runId: string | null;
  /** ADB serial of the run's phone (the mirror draws the last action only on that phone). */
  serial: string;
  /** A labelled demo (virtual phone + scripted model), not a real run. */
  demo: boolean;
  task: string;
  model: string;
  mode: string;
  maxSteps: number;
  phase: Phase;
  steps: StepView[];
  totals: TokenTotals;
  finished: { status: string; termination_code: string; message: string; duration_ms: number } | null;
  lastSeq: number;
  /** Latest screenshot hash of the run (any purpose). */
  latestScreenshot: string | null;
  /** The last action that touched (or was about to touch) the screen, for the mirror overlay. */
  lastAction: { action: Action; points: MappedPoint[]; step: number } | null;
}

export function emptyTimeline(): TimelineState {
  return {
    runId: null, serial: '', demo: false, task: '', model: '', mode: '', maxSteps: 0, phase: 'idle', steps: [],
    totals: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, calls: 0 },
    finished: null, lastSeq: -1, latestScreenshot: null, lastAction: null,
  };
}

function newStep(step: number): StepView {
  return {
    step, screenshot: null, width: 0, height: 0, action: null, points: [], gates: [], humans: [], dispatched: false,
    dispatchError: null, verification: null, freshness: null, rejections: [], toolResults: [], notes: [], warnings: [],
    recovery: null, promptTokens: 0, completionTokens: 0, costUsd: 0,
  };
}

/**
 * The step `n` of `steps` (a copy of the previous state's array), itself copied the first time
 * this event touches it (`copied`): steps an event does not touch keep their identity, so the
 * view re-renders only the card that changed (issue #14: copying every step per event made each
 * event re-render the whole timeline).
 */
function stepOf(steps: StepView[], n: number, copied: Set<number>): StepView {
  const i = steps.findIndex((x) => x.step === n);
  if (i < 0) {
    const s = newStep(n);
    copied.add(n);
    steps.push(s);
    steps.sort((a, b) => a.step - b.step);
    return s;
  }
  if (!copied.has(n)) {
    copied.add(n);
    steps[i] = { ...steps[i]! };
  }
  return steps[i]!;
}

/**
 * Apply one envelope. Returns a new state (the input is not mutated). Events of another run
 * than the current one start a fresh timeline when they are `run_started`, and are ignored
 * otherwise; duplicates and out-of-order events (seq ≤ lastSeq) are ignored.
 */
export function applyEvent(prev: TimelineState, env: EventEnvelope): TimelineState {
  if (env.kind === 'run_started') {
    if (prev.runId === env.run_id && env.seq <= prev.lastSeq) return prev;
    const e = env as Extract<AgentEvent, { kind: 'run_started' }> & EventEnvelope;
    return { ...emptyTimeline(), runId: env.run_id, serial: e.serial, demo: e.demo, task: e.task, model: e.model, mode: e.mode, maxSteps: e.max_steps, lastSeq: env.seq, phase: 'observing' };
  }
  if (prev.runId !== null && env.run_id !== prev.runId) return prev;
  if (env.seq <= prev.lastSeq) return prev;
  const s: TimelineState = { ...prev, runId: prev.runId ?? env.run_id, lastSeq: env.seq, steps: prev.steps.slice() };
  const ev = env as unknown as AgentEvent;
  const copied = new Set<number>();
  const cur = () => stepOf(s.steps, env.step, copied);
  switch (ev.kind) {
    case 'phase':
      s.phase = ev.phase;
      break;
    case 'observation': {
      s.latestScreenshot = ev.screenshot;
      if (env.step > 0) {
        const st = cur();
        if (!st.screenshot && (ev.purpose === 'plan' || !st.action)) {
          st.screenshot = ev.screenshot;
          st.width = ev.width;
          st.height = ev.height;
        }
      }
      break;
    }
    case 'model_call': {
      s.totals = ev.run_totals;
      if (env.step > 0) {
        const st = cur();
        st.promptTokens += ev.prompt_tokens;
        st.completionTokens += ev.completion_tokens;
        st.costUsd += ev.cost_usd;
      }
      break;
    }
    case 'protocol_rejected':
      cur().rejections = [...cur().rejections, `${ev.error_kind}: ${ev.message}`];
      break;
    case 'action_proposed': {
      const st = cur();
      st.action = ev.action;
      st.points = ev.points;
      if (ev.points.length > 0) s.lastAction = { action: ev.action, points: ev.points, step: env.step };
      break;
    }
    case 'gate_decision':
      cur().gates = [...cur().gates, { tool: ev.tool, tier: ev.tier, reasons: ev.reasons, outcome: ev.outcome, decided_by: ev.decided_by, receipt: ev.receipt, latency_ms: ev.latency_ms }];
      break;
    case 'human_requested':
      cur().humans = [...cur().humans, { request_id: ev.request_id, request: ev.request, response: null, decided_by: null }];
      break;
    case 'human_resolved': {
      for (const old of prev.steps) {
        if (old.humans.some((x) => x.request_id === ev.request_id)) {
          const st = stepOf(s.steps, old.step, copied);
          st.humans = st.humans.map((x) => (x.request_id === ev.request_id ? { ...x, response: ev.response, decided_by: ev.decided_by } : x));
        }
      }
      break;
    }
    case 'freshness':
      cur().freshness = ev.outcome;
      break;
    case 'action_dispatched': {
      const st = cur();
      st.dispatched = true;
      st.dispatchError = ev.command_ok ? null : (ev.message ?? ev.error ?? 'failed');
      break;
    }
    case 'verification':
      cur().verification = { observable_effect: ev.observable_effect, changed_fraction: ev.changed_fraction, warnings: ev.warnings, command_ok: ev.command_ok };
      break;
    case 'recovery':
      cur().recovery = `${ev.outcome} (${ev.code})${ev.detail ? ': ' + ev.detail : ''}`;
      break;
    case 'note':
      cur().notes = [...cur().notes, { lead: '', detail: ev.message }];
      break;
    case 'tool_result':
      cur().toolResults = [...cur().toolResults, { tool: ev.tool, status: ev.status, text: ev.text }];
      break;
    case 'warning':
      if (env.step > 0) cur().warnings = [...cur().warnings, { lead: 'warning', detail: `${ev.code}: ${ev.message}` }];
      break;
    case 'finish_rejected':
      cur().warnings = [...cur().warnings, { lead: ev.by.startsWith('guard:') ? 'finish rejected by a guard' : `finish rejected by the ${ev.by.replace('_', ' ')}`, detail: `${ev.by.startsWith('guard:') ? ev.by.slice(6) + ': ' : ''}${ev.message}` }];
      break;
    case 'finish_verifier':
      cur().notes = [...cur().notes, { lead: `verifier: ${ev.verdict}`, detail: ev.reason }];
      break;
    case 'device_lost':
      if (env.step > 0) cur().warnings = [...cur().warnings, { lead: 'device lost:', detail: ev.detail }];
      break;
    case 'run_finished':
      s.finished = { status: ev.status, termination_code: ev.termination_code, message: ev.message, duration_ms: ev.duration_ms };
      s.totals = ev.tokens;
      break;
    default:
      break;
  }
  return s;
}

/**
 * Who decided a gate call and why, in words a user knows (issue #14 item 5), e.g. "allowed: no
 * risk found", "you approved", "allowed: the model confirmed after a warning". An English key
 * for `t`.
 */
export function gateLabel(g: Pick<GateView, 'outcome' | 'decided_by' | 'tier'>, mode: string): string {
  const risky = g.tier !== 'none';
  switch (g.outcome) {
    case 'allow':
      if (g.decided_by === 'reviewer') return 'allowed: the reviewer found it reversible';
      if (g.decided_by === 'auto_reviewer') return 'allowed by the approve-for-me reviewer';
      if (g.decided_by === 'human') return 'you approved';
      if (g.decided_by === 'policy') return 'allowed by your approval policy';
      if (!risky) return 'allowed: no risk found';
      if (mode === 'off') return 'allowed: safety checks are off';
      if (g.tier === 'soft') return 'allowed: low risk';
      return 'allowed: the model confirmed after a warning';
    case 'warned':
      return 'held: the model was warned and must confirm';
    case 'needs_approval':
      return g.decided_by === 'auto_reviewer' ? 'waiting for the approve-for-me reviewer' : 'waiting for your approval';
    case 'approved':
      return g.decided_by === 'auto_reviewer' ? 'approved by the approve-for-me reviewer' : g.decided_by === 'policy' ? 'approved by your approval policy' : 'you approved';
    case 'rejected':
      return g.decided_by === 'auto_reviewer'
        ? 'rejected by the approve-for-me reviewer'
        : g.decided_by === 'human'
          ? 'you rejected'
          : g.decided_by === 'policy'
            ? 'rejected by your approval policy'
            : 'refused by the safety rules';
    case 'blocked_by_task_boundary':
      return 'blocked: your task says not to';
    default:
      return g.outcome.replace(/_/g, ' ');
  }
}

/** Apply many envelopes in order (replay). */
export function replay(events: EventEnvelope[]): TimelineState {
  return events.reduce(applyEvent, emptyTimeline());
}

/** Overlay geometry of an action in percent of the screenshot (runtime 0..999 space). */
export function overlayOf(points: MappedPoint[]): { x: number; y: number }[] {
  return points.map((p) => ({ x: (p.runtime.x / 999) * 100, y: (p.runtime.y / 999) * 100 }));
}

/** A one-line label of an action. */
/**
 * An action in two parts (issue #14, 中文 pass): `verb` is the interface's word (an English
 * key for `t`), `detail` is shown verbatim (the model's target, text or message; never
 * translated, marked `data-verbatim` where it is rendered).
 */
export function actionParts(a: Action | null): { verb: string; detail: string } {
  if (!a) return { verb: '—', detail: '' };
  const quoted = (v: string | null | undefined) => (v ? ` “${v}”` : '');
  switch (a.action) {
    case 'tap': case 'double_tap': case 'long_press':
      return { verb: a.action.replace('_', ' '), detail: quoted(a.target_description) };
    case 'swipe': return { verb: 'swipe', detail: '' };
    case 'type': return { verb: 'type', detail: ` “${a.text ?? ''}”` };
    case 'wait': return { verb: 'wait', detail: ` ${a.seconds ?? ''}s` };
    case 'finish': return { verb: a.confirm ? 'finish (confirm)' : 'finish', detail: `: ${a.message ?? ''}` };
    case 'ask_user': return { verb: 'ask', detail: `: ${a.question ?? ''}` };
    case 'take_over': return { verb: 'take over', detail: `: ${a.message ?? ''}` };
    case 'note': return { verb: 'note', detail: `: ${a.message ?? ''}` };
    case 'launch_app': return { verb: 'launch', detail: ` ${a.name ?? ''}` };
    default: return { verb: a.action, detail: '' };
  }
}

/** An action as one English line (exports, tests): `actionParts` joined. */
export function actionLabel(a: Action | null): string {
  const p = actionParts(a);
  return p.verb + p.detail;
}

/** A gate reason code in words a user knows (English key for `t`; issue #14 item 5). */
export function reasonLabel(code: string): string {
  const words: Record<string, string> = {
    self_declared_sensitive: 'the model marked it sensitive',
    negated_task_boundary: 'your task says not to do this',
    password_field: 'typing into a password field',
    credential_text: 'the text looks like a password or code',
    payment_app_launch: 'opens a payment app',
    commit_irreversible: 'cannot be undone (pay, order, delete, send…)',
    dialog_confirm: 'confirms a dialog that cannot be undone',
    irreversible_object: 'touches something that cannot be undone',
    credential_target: 'a password or code field',
    commitment_shape: 'looks like a commitment (amount, confirm button)',
    unreadable_target: 'an icon that cannot be read, where something irreversible is possible',
    policy_word: 'a word your policy watches',
    no_target_evidence: 'no evidence of what it touches',
    lexicon_unavailable: 'the safety word lists could not be loaded',
  };
  const base = code.split(':')[0] ?? code;
  return words[base] ?? base.replace(/_/g, ' ');
}
