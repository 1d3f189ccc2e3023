// Where the webview's main thread goes (issue #14): the longest time from receiving a message
// to the view updated (reducer + render), per message kind, in ms. Read by the WebDriver suite
// as `window.__paCost`; costs nothing worth measuring.

const costs: Record<string, number> = {};
(globalThis as unknown as { __paCost: Record<string, number> }).__paCost = costs;

/** Record that handling a `kind` message started at `t0` (performance.now()) ended now. */
export function noteCost(kind: string, t0: number): void {
  const d = performance.now() - t0;
  if (d > (costs[kind] ?? 0)) costs[kind] = Math.round(d);
}

const latency = { max: 0, n: 0, worst: '' };
(globalThis as unknown as { __paLatency: typeof latency }).__paLatency = latency;

/** Record how long after the backend stamped it (`ts_ms`, wall clock) an event of `kind` was in
 *  the view (`worst`: the kind of the slowest). */
export function noteLatency(tsMs: number, kind: string): void {
  const d = Date.now() - tsMs;
  latency.n += 1;
  if (d > latency.max) {
    latency.max = Math.round(d);
    latency.worst = kind;
  }
}
