// Several runs at once, one per phone (issue #13): a pure reducer from the event stream to one
// run per phone (its timeline, whether it runs, how it ended), and the panels the Run view shows.
// A run's phone is learnt from its `run_started` event (which names the serial); later events
// find it by run id. A new run on a phone replaces that phone's previous one.

import type { EventEnvelope } from './events';
import type { RunEnded } from './bindings/RunEnded';
import { applyEvent, emptyTimeline, type TimelineState } from './timeline';

/** The run of one phone: running, or the last one that ran there. */
export interface PhoneRun {
  serial: string;
  runId: string;
  timeline: TimelineState;
  running: boolean;
  ended: RunEnded | null;
  /** approval_review events of the run (the Approvals tab reloads its ledger on each). */
  reviews: number;
}

export interface RunsState {
  /** In the order their phones first ran. */
  phones: PhoneRun[];
  /** Run id → serial. */
  serialOf: Record<string, string>;
}

export function emptyRuns(): RunsState {
  return { phones: [], serialOf: {} };
}

function replacePhone(s: RunsState, serial: string, f: (p: PhoneRun) => PhoneRun): RunsState {
  return { ...s, phones: s.phones.map((p) => (p.serial === serial ? f(p) : p)) };
}

/** Apply one agent event (copy-on-write; an event of a run not seen starting is ignored). */
export function applyRunsEvent(s: RunsState, env: EventEnvelope): RunsState {
  if (env.kind === 'run_started') {
    const serial = (env as unknown as { serial: string }).serial;
    const run: PhoneRun = { serial, runId: env.run_id, timeline: applyEvent(emptyTimeline(), env), running: true, ended: null, reviews: 0 };
    const serialOf = { ...s.serialOf, [env.run_id]: serial };
    if (s.phones.some((p) => p.serial === serial)) return { phones: s.phones.map((p) => (p.serial === serial ? run : p)), serialOf };
    return { phones: [...s.phones, run], serialOf };
  }
  const serial = s.serialOf[env.run_id];
  if (serial === undefined) return s;
  const phone = s.phones.find((p) => p.serial === serial);
  if (!phone || phone.runId !== env.run_id) return s;
  return replacePhone(s, serial, (p) => ({
    ...p,
    timeline: applyEvent(p.timeline, env),
    reviews: env.kind === 'approval_review' ? p.reviews + 1 : p.reviews,
  }));
}

/** A run ended (`run-ended`): its phone's run is no longer running. */
export function applyRunsEnded(s: RunsState, e: RunEnded): RunsState {
  const serial = s.serialOf[e.run_id] ?? e.serial;
  const phone = s.phones.find((p) => p.serial === serial);
  if (!phone || (phone.runId !== e.run_id && e.run_id !== '')) return s;
  return replacePhone(s, serial, (p) => ({ ...p, running: false, ended: e }));
}

/** The run on phone `serial`, if one ran there. */
export function runOn(s: RunsState, serial: string | null | undefined): PhoneRun | null {
  return serial ? (s.phones.find((p) => p.serial === serial) ?? null) : null;
}

/** The phone of run `runId`, if known. */
export function phoneOfRun(s: RunsState, runId: string): string | null {
  return s.serialOf[runId] ?? null;
}

/** A panel of the Run view: a phone (null: none selected yet) and its run, if any. */
export interface Panel {
  serial: string | null;
  run: PhoneRun | null;
}

/** The Run view's panels: the selected phone first (with its run, if any; the panel that keeps
 *  the view's element ids, as with one phone), then every other phone that has a run, in the
 *  order they first ran. With no phone selected and no run, one empty panel. */
export function panelsOf(s: RunsState, selected: string | null): Panel[] {
  const first: Panel[] = selected ? [{ serial: selected, run: runOn(s, selected) }] : [];
  const others = s.phones.filter((p) => p.serial !== selected).map((p) => ({ serial: p.serial, run: p }));
  const all = [...first, ...others];
  return all.length > 0 ? all : [{ serial: null, run: null }];
}

/** The element id of `base` in panel `index`: the first panel keeps the view's ids; others get
 *  `base-<index+1>` (WebDriver scenarios select the single panel's elements by id). */
export function panelId(base: string, index: number): string {
  return index === 0 ? base : `${base}-${index + 1}`;
}

/** Run `runId` is known to be over (a page joining after it ended replays its events). */
export function markStopped(s: RunsState, runId: string): RunsState {
  const serial = s.serialOf[runId];
  if (serial === undefined) return s;
  return replacePhone(s, serial, (p) => (p.runId === runId ? { ...p, running: false } : p));
}
