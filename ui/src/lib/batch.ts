// Events reach the view in batches (issue #14: the view keeps up with the run). The backend
// sends a run's events in bursts — a step's phase, model call, proposed action, screen reading
// and gate decision within a few ms — and rendering each one on its own cost the webview's main
// thread 10-30 ms apiece, back to back. A `Batcher` collects what arrives and hands it over at
// most once per `spacingMs` (default one 60 Hz frame), so a burst costs one render.

/** Collects items and calls `apply` with every item queued since the last call, in order. */
export class Batcher<T> {
  private queue: T[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = -Infinity;

  /** `apply`: gets each batch (never empty); `spacingMs`: the least time between two batches. */
  constructor(private readonly apply: (batch: T[]) => void, private readonly spacingMs = 16) {}

  /** Queue `item`; the batch goes out after the current task, and `spacingMs` after the last. */
  push(item: T): void {
    this.queue.push(item);
    if (this.timer !== null) return;
    const wait = Math.max(0, this.last + this.spacingMs - performance.now());
    this.timer = setTimeout(() => this.flush(), wait);
  }

  /** Hand over what is queued now (before something that must come after it, such as a run's
   *  end after its last events). */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.last = performance.now();
    this.apply(batch);
  }
}
