// How the UI reaches the console: one interface, two implementations (SPEC C3).
// * Tauri: the desktop app's IPC (invoke, events, a Channel for the mirror, the `pa:` scheme).
// * Web: `phoneagent web` over HTTP and one WebSocket (docs/protocol.md "The web transport"):
//   POST /api/call/<cmd> with the JSON args and `Authorization: Bearer <token>`; GET /api/ws?token=
//   for events and mirror messages; pictures at GET /pa/<path>?token=.
// The choice is made at run time: Tauri when the page runs inside the app's webview.
import { Channel, convertFileSrc, invoke } from '@tauri-apps/api/core';
import { listen as tauriListen } from '@tauri-apps/api/event';
import type { AppError } from './bindings/AppError';
import type { MirrorMessage } from './bindings/MirrorMessage';

export type Unlisten = () => void;

export interface Transport {
  readonly kind: 'tauri' | 'web';
  /** Run console command `cmd` with its camelCase args; rejects with an `AppError`. */
  call<T>(cmd: string, args?: Record<string, unknown>): Promise<T>;
  /** Receive every event `name` (`agent-event`, `run-ended`) from now on. */
  listen<T>(name: string, handler: (payload: T) => void): Promise<Unlisten>;
  /** Start the mirror of phone `serial` (default: the selected phone); its messages go to
   *  `onMessage` until `mirrorStop`. Web: the selected phone's only (`serial` is ignored). */
  mirrorStart(onMessage: (m: MirrorMessage) => void, serial?: string): Promise<void>;
  /** Stop phone `serial`'s mirror (default: every mirror). */
  mirrorStop(serial?: string): Promise<void>;
  /** URL of a picture (`mirror/<seq>`, `mirror/<serial>/<seq>`, `thumb/<sha>`, `view/<sha>`, `shot/<sha>`). */
  pictureUrl(path: string): string;
}

/** Normalise anything thrown by a call into `{code, message}`. */
export function asAppError(e: unknown): AppError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    return { code: String((e as AppError).code), message: String((e as AppError).message) };
  }
  return { code: 'internal', message: String(e) };
}

// ---------------------------------------------------------------- Tauri

export const tauriTransport: Transport = {
  kind: 'tauri',
  async call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
    try {
      return await invoke<T>(cmd, args);
    } catch (e) {
      throw asAppError(e);
    }
  },
  async listen<T>(name: string, handler: (payload: T) => void): Promise<Unlisten> {
    return tauriListen<T>(name, (ev) => handler(ev.payload));
  },
  mirrorStart(onMessage: (m: MirrorMessage) => void, serial?: string): Promise<void> {
    const channel = new Channel<MirrorMessage>();
    channel.onmessage = onMessage;
    return this.call<void>('mirror_start', { channel, serial });
  },
  mirrorStop(serial?: string): Promise<void> {
    return this.call<void>('mirror_stop', { serial });
  },
  // `pa://localhost/…`, or `http://pa.localhost/…` where the webview needs it.
  pictureUrl: (path: string) => convertFileSrc(path, 'pa'),
};

// ---------------------------------------------------------------- Web

/** sessionStorage key of the token (this tab only; gone when it closes). */
export const TOKEN_KEY = 'phoneagent.web.token';

interface StorageLike {
  getItem(k: string): string | null;
  setItem(k: string, v: string): void;
}

/** The token of this `phoneagent web` start: from the page URL's `?token=` (then kept in
 *  sessionStorage and taken out of the address bar and history), else from sessionStorage. */
export function tokenFromPage(
  loc: { search: string; href: string },
  storage: StorageLike,
  replaceUrl?: (url: string) => void,
): string | null {
  const params = new URLSearchParams(loc.search);
  const t = params.get('token');
  if (t) {
    storage.setItem(TOKEN_KEY, t);
    if (replaceUrl) {
      const u = new URL(loc.href);
      u.searchParams.delete('token');
      replaceUrl(u.pathname + u.search + u.hash);
    }
    return t;
  }
  return storage.getItem(TOKEN_KEY);
}

type FetchLike = (url: string, init: { method: string; headers: Record<string, string>; body: string }) => Promise<{
  ok: boolean;
  status: number;
  text(): Promise<string>;
}>;

/** The parts of a browser WebSocket the transport uses. */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(): void;
}

export interface WebTransportOptions {
  /** The server's origin, e.g. `http://127.0.0.1:8080` (no trailing slash). */
  base: string;
  token: string | null;
  fetch: FetchLike;
  openSocket: (url: string) => SocketLike;
  /** Wait before reconnecting the WebSocket after it closed, ms (grows to 5 s). */
  retryMs?: number;
  setTimer?: (f: () => void, ms: number) => unknown;
}

const NO_TOKEN: AppError = {
  code: 'unauthorized',
  message: 'this page has no token: open the URL `phoneagent web` printed (…/?token=…)',
};

export class WebTransport implements Transport {
  readonly kind = 'web' as const;
  private handlers = new Map<string, Set<(p: unknown) => void>>();
  private mirrorHandler: ((m: MirrorMessage) => void) | null = null;
  private socket: SocketLike | null = null;
  private ready: Promise<void> | null = null;
  private markReady: (() => void) | null = null;
  private retry: number;
  private readonly setTimer: (f: () => void, ms: number) => unknown;

  constructor(private readonly opts: WebTransportOptions) {
    this.retry = opts.retryMs ?? 500;
    this.setTimer = opts.setTimer ?? ((f, ms) => setTimeout(f, ms));
  }

  async call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
    if (!this.opts.token) throw NO_TOKEN;
    let res: Awaited<ReturnType<FetchLike>>;
    try {
      res = await this.opts.fetch(`${this.opts.base}/api/call/${encodeURIComponent(cmd)}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.opts.token}` },
        body: JSON.stringify(args ?? {}),
      });
    } catch (e) {
      throw { code: 'network', message: `cannot reach phoneagent web (${String(e)}): is it still running?` } satisfies AppError;
    }
    const text = await res.text();
    let body: unknown = null;
    let parsed = true;
    if (text.trim() !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        parsed = false;
      }
    }
    if (!res.ok) {
      if (parsed && body && typeof body === 'object' && 'code' in body && 'message' in body) throw asAppError(body);
      throw { code: `http_${res.status}`, message: `phoneagent web answered HTTP ${res.status}: ${text.slice(0, 200)}` } satisfies AppError;
    }
    if (!parsed) throw { code: 'internal', message: `phoneagent web answered ${cmd} with something that is not JSON` } satisfies AppError;
    return body as T;
  }

  /** Open the WebSocket (once) and resolve when the server says it is subscribed. */
  connect(): Promise<void> {
    if (this.ready) return this.ready;
    this.ready = new Promise<void>((resolve) => (this.markReady = resolve));
    if (!this.opts.token) return this.ready;
    const url = `${this.opts.base.replace(/^http/, 'ws')}/api/ws?token=${encodeURIComponent(this.opts.token)}`;
    const ws = this.opts.openSocket(url);
    this.socket = ws;
    ws.onmessage = (ev) => this.onMessage(ev.data);
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.socket = null;
      this.ready = null;
      // Events sent while closed are lost; the mirror is asked for again once reconnected.
      const wait = this.retry;
      this.retry = Math.min(this.retry * 2, 5000);
      this.setTimer(() => {
        this.connect().then(() => {
          if (this.mirrorHandler) this.call<void>('mirror_start').catch(() => {});
        });
      }, wait);
    };
    ws.onerror = () => {};
    return this.ready;
  }

  private onMessage(data: unknown) {
    let m: { type?: string; name?: string; payload?: unknown; message?: unknown; missed?: number };
    try {
      m = JSON.parse(String(data));
    } catch {
      return;
    }
    if (m.type === 'ready') {
      this.retry = this.opts.retryMs ?? 500;
      this.markReady?.();
    } else if (m.type === 'event' && typeof m.name === 'string') {
      for (const h of this.handlers.get(m.name) ?? []) h(m.payload);
    } else if (m.type === 'mirror') {
      this.mirrorHandler?.(m.message as MirrorMessage);
    } else if (m.type === 'lagged') {
      console.warn(`phoneagent web: this page missed ${m.missed ?? '?'} events (it was too slow); reload to see them`);
    }
  }

  /** Wait for the WebSocket at most `ms`. */
  private async connected(ms: number): Promise<void> {
    await Promise.race([this.connect(), new Promise<void>((r) => this.setTimer(r, ms))]);
  }

  async listen<T>(name: string, handler: (payload: T) => void): Promise<Unlisten> {
    const set = this.handlers.get(name) ?? new Set();
    this.handlers.set(name, set);
    const h = handler as (p: unknown) => void;
    set.add(h);
    await this.connected(5000);
    return () => set.delete(h);
  }

  async mirrorStart(onMessage: (m: MirrorMessage) => void): Promise<void> {
    this.mirrorHandler = onMessage;
    // The frames come over the WebSocket: have it subscribed before the mirror starts.
    await this.connected(5000);
    return this.call<void>('mirror_start');
  }

  mirrorStop(): Promise<void> {
    this.mirrorHandler = null;
    return this.call<void>('mirror_stop');
  }

  pictureUrl(path: string): string {
    const p = path.split('/').map(encodeURIComponent).join('/');
    return `${this.opts.base}/pa/${p}?token=${encodeURIComponent(this.opts.token ?? '')}`;
  }
}

// ---------------------------------------------------------------- choice

let chosen: Transport | null = null;

/** Inside the desktop app's webview. */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

/** The transport of this page (chosen once). */
export function transport(): Transport {
  if (chosen) return chosen;
  if (inTauri()) {
    chosen = tauriTransport;
  } else {
    const token = tokenFromPage(window.location, window.sessionStorage, (u) => window.history.replaceState(null, '', u));
    chosen = new WebTransport({
      base: window.location.origin,
      token,
      fetch: (url, init) => window.fetch(url, { ...init, credentials: 'same-origin', cache: 'no-store' }),
      // The handlers the transport sets take the events' fields it reads (data).
      openSocket: (url) => new WebSocket(url) as unknown as SocketLike,
    });
  }
  return chosen;
}
