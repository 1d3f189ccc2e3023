// Pending human requests as the in-app dialog sees them (SPEC U4). Fed by the same event stream
// as the timeline: `human_requested` adds, `human_resolved` removes (whoever answered: the dialog,
// the desktop notification, expiry or cancel), `run_finished` clears. The dialog shows the oldest.

import type { EventEnvelope, HumanRequestKind } from './events';

export interface Pending {
  id: string;
  runId: string;
  step: number;
  request: HumanRequestKind;
  expiresAtMs: number;
}

export interface ApprovalsState {
  pending: Pending[];
  /** Ids the user answered here, hidden until the resolution arrives. */
  answering: string[];
}

export function emptyApprovals(): ApprovalsState {
  return { pending: [], answering: [] };
}

export function applyApprovalEvent(s: ApprovalsState, env: EventEnvelope): ApprovalsState {
  switch (env.kind) {
    case 'human_requested': {
      const e = env as unknown as { request_id: string; request: HumanRequestKind; expires_at_ms: number };
      if (s.pending.some((p) => p.id === e.request_id)) return s;
      return { ...s, pending: [...s.pending, { id: e.request_id, runId: env.run_id, step: env.step, request: e.request, expiresAtMs: e.expires_at_ms }] };
    }
    case 'human_resolved': {
      const id = (env as unknown as { request_id: string }).request_id;
      return { pending: s.pending.filter((p) => p.id !== id), answering: s.answering.filter((a) => a !== id) };
    }
    case 'run_finished':
      return { pending: s.pending.filter((p) => p.runId !== env.run_id), answering: [] };
    default:
      return s;
  }
}

/** Mark `id` as being answered (the dialog closes at once; the resolution event removes it). */
export function markAnswering(s: ApprovalsState, id: string): ApprovalsState {
  return s.answering.includes(id) ? s : { ...s, answering: [...s.answering, id] };
}

/** An answer failed (e.g. the request expired meanwhile): show it again unless it is gone. */
export function answerFailed(s: ApprovalsState, id: string, gone: boolean): ApprovalsState {
  return {
    pending: gone ? s.pending.filter((p) => p.id !== id) : s.pending,
    answering: s.answering.filter((a) => a !== id),
  };
}

/** The request the dialog shows: the oldest one not being answered and not expired at `nowMs`. */
export function current(s: ApprovalsState, nowMs: number): Pending | null {
  return s.pending.find((p) => !s.answering.includes(p.id) && p.expiresAtMs > nowMs) ?? null;
}

/** True while a take_over is pending: mirror clicks become taps. */
export function takeOverActive(s: ApprovalsState): Pending | null {
  return s.pending.find((p) => p.request.type === 'take_over') ?? null;
}

