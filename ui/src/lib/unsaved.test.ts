import { describe, expect, it } from 'vitest';
import { orphanedEntries, withSavedLang } from './unsaved.svelte';

describe('unsaved settings', () => {
  it('finds the keyring entries no profile uses any more', () => {
    expect(orphanedEntries(['local', 'openai', 'openai'], ['local'])).toEqual(['openai']);
    expect(orphanedEntries(['a', ''], ['a', 'b'])).toEqual([]);
    // An entry still used by another profile stays.
    expect(orphanedEntries(['shared', 'x'], ['shared'])).toEqual(['x']);
  });

  it('counts a language switched in the navigation bar as saved, not as an unsaved edit', () => {
    const saved = JSON.stringify({ lang: 'en', profiles: [], capture: 'auto' });
    const form = { lang: 'zh', profiles: [], capture: 'auto' };
    // The form now says zh; compared with the rebased saved copy it is not dirty.
    expect(withSavedLang(saved, 'zh')).toBe(JSON.stringify(form));
    expect(withSavedLang(saved, 'en')).toBe(saved);
    expect(withSavedLang('', 'zh')).toBe('');
  });
});
