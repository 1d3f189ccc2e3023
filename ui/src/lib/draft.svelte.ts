// What the user was typing and choosing in the Run view (issue #14 item 4): kept when they
// switch views (this module outlives the components) and across restarts (localStorage of the
// app's own webview data). Nothing secret reaches the disk: a task that mentions a password,
// PIN or code (which the runtime masks only once it runs) is kept in memory only, and a task is
// no longer stored once it has been started.

const KEY = 'phoneagent.draft.v1';

interface Draft {
  task: string;
  /** The access mode the user picked (`null`: the Settings default). */
  mode: string | null;
  theme: 'light' | 'dark' | null;
}

function load(): Draft {
  try {
    const v = JSON.parse(globalThis.localStorage?.getItem(KEY) ?? 'null') as Partial<Draft> | null;
    return {
      task: typeof v?.task === 'string' ? v.task.slice(0, 4000) : '',
      mode: typeof v?.mode === 'string' ? v.mode : null,
      theme: v?.theme === 'dark' || v?.theme === 'light' ? v.theme : null,
    };
  } catch {
    return { task: '', mode: null, theme: null };
  }
}

/** The draft; assign its fields, then call [`saveDraft`]. */
export const draft: Draft = $state(load());

/** A task that may carry a credential (then it is never written to disk). */
export function mayHoldSecret(task: string): boolean {
  return /pass(?:word|code|phrase)?|\bpin\b|\botp\b|secret|token|cvv|密码|口令|验证码|支付码|卡号/i.test(task);
}

/** Write the draft to localStorage (`started`: the task ran, so it is no longer a draft). */
export function saveDraft(started = false): void {
  const task = started || mayHoldSecret(draft.task) ? '' : draft.task;
  try {
    globalThis.localStorage?.setItem(KEY, JSON.stringify({ task, mode: draft.mode, theme: draft.theme }));
  } catch {
    // Storage full or disabled: the draft still lives for this session.
  }
}
