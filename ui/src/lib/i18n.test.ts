// The UI speaks both languages from one catalogue (issue #14 item 6): every key given to `t`
// has a Chinese text, and no component shows an English literal outside `t(...)`.
import { describe, expect, it } from 'vitest';
import { catalogue } from './i18n.svelte';

const components = import.meta.glob('../**/*.svelte', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
const sources = import.meta.glob(['../**/*.ts', '!../**/*.test.ts', '!../lib/bindings/**'], { query: '?raw', import: 'default', eager: true }) as Record<string, string>;

/** Words that are names or units, the same in both languages. */
const NAMES = new Set(['English', 'PhoneAgent', 'DEMO', 'fps', 'ms', 'tok', 'KB', 'MB', 'px', 'scrcpy', 'screenrecord', 'adb', 'Wi-Fi', 'API', 'URL', 'JSON', 'HTML', 'OpenAI', 'ID']);

/** The markup of a component with its script, style, comments and `{…}` expressions removed. */
function markup(src: string): string {
  let s = src.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<style[\s\S]*?<\/style>/g, '').replace(/<!--[\s\S]*?-->/g, '');
  let out = '';
  let depth = 0;
  for (const ch of s) {
    if (ch === '{') depth += 1;
    else if (ch === '}') depth = Math.max(0, depth - 1);
    else if (depth === 0) out += ch;
  }
  s = out;
  return s;
}

function englishWords(text: string): string[] {
  return (text.match(/[A-Za-z][A-Za-z'-]+/g) ?? []).filter((w) => !NAMES.has(w));
}

describe('i18n catalogue', () => {
  it('has a Chinese text for every key the code translates', () => {
    const missing: string[] = [];
    for (const [file, src] of Object.entries({ ...components, ...sources })) {
      for (const m of src.matchAll(/\bt\(\s*'((?:[^'\\]|\\.)*)'\s*\)/g)) {
        const key = m[1]!.replace(/\\'/g, "'");
        if (!(key in catalogue)) missing.push(`${file}: ${key}`);
      }
      for (const m of src.matchAll(/\bt\(\s*"((?:[^"\\]|\\.)*)"\s*\)/g)) {
        if (!(m[1]! in catalogue)) missing.push(`${file}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('no component shows an English literal outside t(...)', () => {
    const literals: string[] = [];
    for (const [file, src] of Object.entries(components)) {
      const s = markup(src);
      for (const m of s.matchAll(/\b(?:placeholder|title|aria-label|alt)="([^"]*)"/g)) {
        if (englishWords(m[1]!).length > 0 && !/[|()?]|:\/\//.test(m[1]!)) literals.push(`${file}: attribute "${m[1]}"`);
      }
      const text = s.replace(/<[^>]*>/g, '\n');
      for (const line of text.split('\n')) {
        if (englishWords(line).length > 0) literals.push(`${file}: "${line.trim()}"`);
      }
    }
    expect(literals).toEqual([]);
  });
});
