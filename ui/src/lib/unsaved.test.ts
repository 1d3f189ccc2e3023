import { describe, expect, it } from 'vitest';
import { orphanedEntries } from './unsaved.svelte';

describe('unsaved settings', () => {
  it('finds the keyring entries no profile uses any more', () => {
    expect(orphanedEntries(['local', 'openai', 'openai'], ['local'])).toEqual(['openai']);
    expect(orphanedEntries(['a', ''], ['a', 'b'])).toEqual([]);
    // An entry still used by another profile stays.
    expect(orphanedEntries(['shared', 'x'], ['shared'])).toEqual(['x']);
  });
});
