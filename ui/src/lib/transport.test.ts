import { describe, expect, it } from 'vitest';
import { TOKEN_KEY, WebTransport, tokenFromPage, type SocketLike, type WebTransportOptions } from './transport';

type Sent = { url: string; init: { method: string; headers: Record<string, string>; body: string } };

function reply(status: number, body: string) {
  return { ok: status >= 200 && status < 300, status, text: async () => body };
}

class FakeSocket implements SocketLike {
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {}
  close() {
    this.closed = true;
  }
  push(m: unknown) {
    this.onmessage?.({ data: JSON.stringify(m) });
  }
}

function setup(answer: (s: Sent) => ReturnType<typeof reply> | Promise<never>, over: Partial<WebTransportOptions> = {}) {
  const sent: Sent[] = [];
  const sockets: FakeSocket[] = [];
  const timers: (() => void)[] = [];
  const t = new WebTransport({
    base: 'http://127.0.0.1:4000',
    token: 'tok123',
    fetch: async (url, init) => {
      const s = { url, init };
      sent.push(s);
      return answer(s);
    },
    openSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    setTimer: (f) => timers.push(f),
    ...over,
  });
  return { t, sent, sockets, timers };
}

describe('web transport', () => {
  it('posts the command with JSON args and the bearer token', async () => {
    const { t, sent } = setup(() => reply(200, '[{"id":"r1"}]'));
    const runs = await t.call<{ id: string }[]>('list_runs', { limit: 50 });
    expect(runs).toEqual([{ id: 'r1' }]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe('http://127.0.0.1:4000/api/call/list_runs');
    expect(sent[0]!.init.method).toBe('POST');
    expect(sent[0]!.init.headers).toEqual({ 'Content-Type': 'application/json', Authorization: 'Bearer tok123' });
    expect(JSON.parse(sent[0]!.init.body)).toEqual({ limit: 50 });
  });

  it('sends {} without args and takes an empty or null answer as null', async () => {
    const { t, sent } = setup(() => reply(200, 'null'));
    expect(await t.call('stop_run')).toBeNull();
    expect(sent[0]!.init.body).toBe('{}');
    const empty = setup(() => reply(200, ''));
    expect(await empty.t.call('mirror_stop')).toBeNull();
  });

  it('normalises errors into {code, message}', async () => {
    const busy = setup(() => reply(409, '{"code":"busy","message":"a task is already running"}'));
    await expect(busy.t.call('start_run', {})).rejects.toEqual({ code: 'busy', message: 'a task is already running' });
    const unauth = setup(() => reply(401, '{"code":"unauthorized","message":"needs the token"}'));
    await expect(unauth.t.call('list_runs')).rejects.toEqual({ code: 'unauthorized', message: 'needs the token' });
    const proxy = setup(() => reply(502, '<html>bad gateway</html>'));
    await expect(proxy.t.call('list_runs')).rejects.toMatchObject({ code: 'http_502' });
    const down = setup(() => Promise.reject(new TypeError('Failed to fetch')));
    await expect(down.t.call('list_runs')).rejects.toMatchObject({ code: 'network' });
    const garbled = setup(() => reply(200, 'not json'));
    await expect(garbled.t.call('list_runs')).rejects.toMatchObject({ code: 'internal' });
  });

  it('refuses to call without a token, with a message that says where it is', async () => {
    const { t, sent } = setup(() => reply(200, 'null'), { token: null });
    await expect(t.call('list_runs')).rejects.toMatchObject({ code: 'unauthorized' });
    expect(sent).toHaveLength(0);
  });

  it('escapes the command name and builds picture URLs with the token', () => {
    const { t } = setup(() => reply(200, 'null'));
    expect(t.pictureUrl('thumb/abc')).toBe('http://127.0.0.1:4000/pa/thumb/abc?token=tok123');
    expect(t.pictureUrl('mirror/7')).toBe('http://127.0.0.1:4000/pa/mirror/7?token=tok123');
  });

  it('delivers WebSocket events to listeners and mirror messages to the mirror', async () => {
    const { t, sockets, sent } = setup(() => reply(200, 'null'));
    const got: unknown[] = [];
    const listening = t.listen('agent-event', (p) => got.push(p));
    expect(sockets).toHaveLength(1);
    expect(sockets[0]!.url).toBe('ws://127.0.0.1:4000/api/ws?token=tok123');
    sockets[0]!.push({ type: 'ready' });
    const unlisten = await listening;
    sockets[0]!.push({ type: 'event', name: 'agent-event', payload: { seq: 1 } });
    sockets[0]!.push({ type: 'event', name: 'run-ended', payload: { x: 1 } });
    expect(got).toEqual([{ seq: 1 }]);
    unlisten();
    sockets[0]!.push({ type: 'event', name: 'agent-event', payload: { seq: 2 } });
    expect(got).toHaveLength(1);

    const frames: unknown[] = [];
    await t.mirrorStart((m) => frames.push(m));
    expect(sent.map((s) => s.url)).toEqual(['http://127.0.0.1:4000/api/call/mirror_start']);
    sockets[0]!.push({ type: 'mirror', message: { type: 'frame', frame: { seq: 3 } } });
    expect(frames).toEqual([{ type: 'frame', frame: { seq: 3 } }]);
    await t.mirrorStop();
    sockets[0]!.push({ type: 'mirror', message: { type: 'frame', frame: { seq: 4 } } });
    expect(frames).toHaveLength(1);
  });

  it('reconnects a closed WebSocket and asks for the mirror again', async () => {
    const { t, sockets, sent, timers } = setup(() => reply(200, 'null'));
    const started = t.mirrorStart(() => {});
    sockets[0]!.push({ type: 'ready' });
    await started;
    sockets[0]!.onclose?.({});
    expect(timers.length).toBeGreaterThan(0);
    timers.at(-1)!();
    expect(sockets).toHaveLength(2);
    sockets[1]!.push({ type: 'ready' });
    await new Promise((r) => setTimeout(r, 0));
    expect(sent.filter((s) => s.url.endsWith('/mirror_start'))).toHaveLength(2);
  });
});

describe('tokenFromPage', () => {
  function storage() {
    const m = new Map<string, string>();
    return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), m };
  }

  it('takes the token from the URL, keeps it for the tab and removes it from the address bar', () => {
    const s = storage();
    let replaced = '';
    const t = tokenFromPage({ search: '?token=abc&x=1', href: 'http://127.0.0.1:4000/?token=abc&x=1#h' }, s, (u) => (replaced = u));
    expect(t).toBe('abc');
    expect(s.m.get(TOKEN_KEY)).toBe('abc');
    expect(replaced).toBe('/?x=1#h');
    // A reload (no token in the URL any more) finds it in sessionStorage.
    expect(tokenFromPage({ search: '', href: 'http://127.0.0.1:4000/' }, s)).toBe('abc');
  });

  it('is null when neither has one', () => {
    expect(tokenFromPage({ search: '', href: 'http://h/' }, storage())).toBeNull();
  });
});
