import { describe, expect, it } from 'vitest';
import fixture from './fixtures/run-hard-approval.json';
import type { EventEnvelope } from './events';
import { applyEvent, emptyTimeline, gateLabel, overlayOf, replay, actionLabel } from './timeline';

const events = fixture as unknown as EventEnvelope[];
const SERIAL = 'virtual-phone-1';

describe('timeline reducer', () => {
  it('builds one step per step number with screenshot, action, gates and verification', () => {
    const tl = replay(events);
    expect(tl.runId).toBe('6f1c2f0e-3d4b-4a8e-9a43-0c7e2b9d1a11');
    expect(tl.task).toBe('提交订单');
    expect(tl.mode).toBe('hard');
    expect(tl.serial).toBe(SERIAL);
    expect(tl.demo).toBe(false);
    expect(tl.steps.map((s) => s.step)).toEqual([1, 2, 3]);
    const [s1, s2] = tl.steps;
    expect(s1?.screenshot).toBe('a'.repeat(64));
    expect(s1?.action?.action).toBe('tap');
    expect(s1?.action?.target_description).toBe('提交订单');
    expect(s1?.gates.map((g) => g.outcome)).toEqual(['needs_approval', 'rejected']);
    expect(s1?.gates[1]?.decided_by).toBe('human');
    expect(s1?.humans[0]?.response).toEqual({ type: 'reject', note: 'not now' });
    expect(s1?.dispatched).toBe(false);
    expect(s1?.promptTokens).toBe(1200);
    expect(s2?.dispatched).toBe(true);
    expect(s2?.verification?.observable_effect).toBe(true);
    expect(s2?.verification?.changed_fraction).toBeCloseTo(0.42);
    expect(s2?.freshness).toBe('fresh');
  });

  it('records the end, the totals and the last action for the mirror overlay', () => {
    const tl = replay(events);
    expect(tl.finished?.status).toBe('succeeded');
    expect(tl.finished?.termination_code).toBe('finish_accepted');
    expect(tl.totals.prompt_tokens).toBe(2400);
    expect(tl.lastAction?.step).toBe(2);
    expect(tl.lastAction?.action.action).toBe('swipe');
    const ov = overlayOf(tl.lastAction?.points ?? []);
    expect(ov).toHaveLength(2);
    expect(ov[0]?.x).toBeCloseTo(50.05, 1);
    expect(ov[1]?.y).toBeCloseTo(30.03, 1);
  });

  it('copies only the step an event touches and never mutates the previous state', () => {
    const n = events.findIndex((e) => e.step === 2);
    let tl = emptyTimeline();
    for (const e of events.slice(0, n)) tl = applyEvent(tl, e);
    const before = tl.steps[0]!;
    const frozen = JSON.stringify(tl);
    const next = applyEvent(tl, events[n]!);
    // Step 1 is untouched: the same object (its card does not re-render).
    expect(next.steps[0]).toBe(before);
    expect(next.steps.find((s) => s.step === 2)).toBeDefined();
    expect(JSON.stringify(tl)).toBe(frozen);
    // A later event for step 1 copies step 1 and leaves the old state alone.
    const rejected = events.findIndex((e, i) => i > n && e.step === 1);
    if (rejected > 0) {
      const again = applyEvent(next, events[rejected]!);
      expect(again.steps[0]).not.toBe(before);
      expect(JSON.stringify(tl)).toBe(frozen);
    }
  });

  it('ignores duplicates, stale sequence numbers and other runs', () => {
    let tl = emptyTimeline();
    for (const e of events.slice(0, 5)) tl = applyEvent(tl, e);
    const again = applyEvent(tl, events[4]!);
    expect(again).toBe(tl);
    const foreign = { ...events[5]!, run_id: 'other' } as EventEnvelope;
    expect(applyEvent(tl, foreign)).toBe(tl);
  });

  it('starts afresh on a new run and does not mutate its input', () => {
    const first = replay(events);
    const snapshot = JSON.stringify(first);
    const next = applyEvent(first, { ...events[0]!, run_id: 'r2', seq: 0 } as EventEnvelope);
    expect(JSON.stringify(first)).toBe(snapshot);
    expect(next.runId).toBe('r2');
    expect(next.steps).toEqual([]);
    expect(next.finished).toBeNull();
  });

  it('labels actions', () => {
    const tl = replay(events);
    expect(actionLabel(tl.steps[0]?.action ?? null)).toBe('tap “提交订单”');
    expect(actionLabel(null)).toBe('—');
  });
});

describe('gate labels', () => {
  it('say who decided and why, never "by rule" for an ordinary tap', () => {
    expect(gateLabel({ outcome: 'allow', decided_by: 'rule', tier: 'none' }, 'wary')).toBe('allowed: no risk found');
    expect(gateLabel({ outcome: 'allow', decided_by: 'rule', tier: 'hard' }, 'wary')).toBe('allowed: the model confirmed after a warning');
    expect(gateLabel({ outcome: 'approved', decided_by: 'human', tier: 'hard' }, 'hard')).toBe('you approved');
    expect(gateLabel({ outcome: 'rejected', decided_by: 'human', tier: 'hard' }, 'hard')).toBe('you rejected');
    expect(gateLabel({ outcome: 'rejected', decided_by: 'rule', tier: 'hard' }, 'hard')).toBe('refused by the safety rules');
    expect(gateLabel({ outcome: 'approved', decided_by: 'auto_reviewer', tier: 'hard' }, 'approve-for-me')).toContain('approve-for-me reviewer');
    expect(gateLabel({ outcome: 'warned', decided_by: 'rule', tier: 'hard' }, 'wary')).toContain('warned');
    for (const o of ['allow', 'warned', 'needs_approval', 'approved', 'rejected', 'blocked_by_task_boundary'])
      for (const d of ['rule', 'reviewer', 'auto_reviewer', 'human', 'policy'])
        expect(gateLabel({ outcome: o, decided_by: d, tier: 'hard' }, 'wary')).not.toMatch(/by rule|_/);
  });
});
