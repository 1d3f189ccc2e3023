import { describe, expect, it } from 'vitest';
import type { EventEnvelope } from './events';
import type { RunEnded } from './bindings/RunEnded';
import { applyRunsEnded, applyRunsEvent, emptyRuns, markStopped, panelId, panelsOf, phoneOfRun, runOn, type RunsState } from './runs';

function ev(run_id: string, seq: number, kind: string, extra: Record<string, unknown> = {}): EventEnvelope {
  return { run_id, seq, ts_ms: 1_000 + seq, step: 0, kind, ...extra } as unknown as EventEnvelope;
}

function started(run_id: string, serial: string): EventEnvelope {
  return ev(run_id, 0, 'run_started', {
    task: `task on ${serial}`, serial, profile: 'p', model: 'm', base_url: 'http://x', protocol: 'do', mode: 'hard',
    max_steps: 6, max_duration_ms: 1000, policy: {}, demo: false,
  });
}

function ended(run_id: string, serial: string): RunEnded {
  return { run_id, serial, status: 'succeeded', termination_code: 'finished', message: 'ok' } as unknown as RunEnded;
}

function apply(s: RunsState, events: EventEnvelope[]): RunsState {
  return events.reduce(applyRunsEvent, s);
}

describe('runs per phone', () => {
  it('keeps one run per phone, each event on its own run', () => {
    let s = apply(emptyRuns(), [started('ra', 'A'), started('rb', 'B'), ev('ra', 1, 'phase', { phase: 'planning' }), ev('rb', 1, 'approval_review', {})]);
    expect(s.phones.map((p) => p.serial)).toEqual(['A', 'B']);
    expect(runOn(s, 'A')?.timeline.task).toBe('task on A');
    expect(runOn(s, 'A')?.timeline.lastSeq).toBe(1);
    expect(runOn(s, 'B')?.timeline.lastSeq).toBe(1);
    expect(runOn(s, 'B')?.reviews).toBe(1);
    expect(runOn(s, 'A')?.reviews).toBe(0);
    expect(phoneOfRun(s, 'rb')).toBe('B');
    expect(s.phones.every((p) => p.running)).toBe(true);
    // An event of a run never seen starting changes nothing.
    expect(applyRunsEvent(s, ev('rx', 3, 'phase', { phase: 'planning' }))).toBe(s);
    // A's run ends; B's goes on.
    s = applyRunsEnded(s, ended('ra', 'A'));
    expect(runOn(s, 'A')?.running).toBe(false);
    expect(runOn(s, 'A')?.ended?.run_id).toBe('ra');
    expect(runOn(s, 'B')?.running).toBe(true);
    // A new run on A replaces A's, in A's place.
    s = applyRunsEvent(s, started('ra2', 'A'));
    expect(s.phones.map((p) => [p.serial, p.runId, p.running])).toEqual([['A', 'ra2', true], ['B', 'rb', true]]);
    // The old run's late events no longer touch A's panel.
    const before = s;
    expect(applyRunsEvent(s, ev('ra', 9, 'phase', { phase: 'planning' }))).toBe(before);
    expect(applyRunsEnded(s, ended('ra', 'A'))).toBe(before);
    expect(markStopped(s, 'rb').phones.map((p) => p.running)).toEqual([true, false]);
  });

  it('shows the selected phone first, then every other phone with a run', () => {
    const s = apply(emptyRuns(), [started('ra', 'A'), started('rb', 'B')]);
    expect(panelsOf(emptyRuns(), null)).toEqual([{ serial: null, run: null }]);
    expect(panelsOf(emptyRuns(), 'A')).toEqual([{ serial: 'A', run: null }]);
    expect(panelsOf(s, 'B').map((p) => [p.serial, p.run?.runId])).toEqual([['B', 'rb'], ['A', 'ra']]);
    expect(panelsOf(s, 'C').map((p) => [p.serial, p.run?.runId ?? null])).toEqual([['C', null], ['A', 'ra'], ['B', 'rb']]);
    expect(panelsOf(s, null).map((p) => p.serial)).toEqual(['A', 'B']);
    // One phone with its run: one panel, as the single-phone view.
    expect(panelsOf(apply(emptyRuns(), [started('ra', 'A')]), 'A')).toHaveLength(1);
  });

  it('keeps the first panel\'s element ids', () => {
    expect(panelId('mirror-img', 0)).toBe('mirror-img');
    expect(panelId('mirror-img', 1)).toBe('mirror-img-2');
  });
});
