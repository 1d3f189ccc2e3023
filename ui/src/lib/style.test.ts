// The view stays cheap to paint in software (issue #14: the main thread never blocks > 50 ms).
// Without a GPU, WebKitGTK paints with Skia on the CPU and re-blurs a box-shadow on every
// repaint inside its box: a blurred shadow on the panel around the mirror's 30 fps video took
// half of both cores and blocked the main thread for 200-400 ms. Shadows here have no blur.
import { describe, expect, it } from 'vitest';

const styles = {
  ...(import.meta.glob('../**/*.svelte', { query: '?raw', import: 'default', eager: true }) as Record<string, string>),
  ...(import.meta.glob('../**/*.css', { query: '?raw', import: 'default', eager: true }) as Record<string, string>),
};

/** Every `box-shadow` / `--shadow` / `filter` / `backdrop-filter` declaration's value in `src`. */
function declarations(src: string): Array<{ prop: string; value: string }> {
  const out: Array<{ prop: string; value: string }> = [];
  const re = /(box-shadow|--shadow|text-shadow|backdrop-filter|(?<![-\w])filter)\s*:\s*([^;}]+)/g;
  for (const m of src.matchAll(re)) out.push({ prop: m[1]!, value: m[2]!.trim() });
  return out;
}

/** The blur radius of each comma-separated shadow in `value` (0 when it has none). */
function blurRadii(value: string): number[] {
  if (value === 'none') return [];
  return value.split(/,(?![^(]*\))/).map((shadow) => {
    const lengths = shadow.replace(/rgba?\([^)]*\)|#[0-9a-f]+|\binset\b|var\([^)]*\)/gi, ' ').trim().split(/\s+/).filter((x) => /^-?[\d.]+(px)?$/.test(x));
    return lengths.length >= 3 ? parseFloat(lengths[2]!) : 0;
  });
}

describe('software-paint cost', () => {
  it('finds the blur of a shadow', () => {
    expect(blurRadii('0 1px 2px rgba(16,24,40,.06), 0 1px 3px rgba(16,24,40,.08)')).toEqual([2, 3]);
    expect(blurRadii('inset 3px 0 0 var(--bad, #c33)')).toEqual([0]);
    expect(blurRadii('0 1px 0 rgba(16,24,40,.08)')).toEqual([0]);
  });

  it('no shadow is blurred and nothing is filtered', () => {
    const found: string[] = [];
    for (const [file, src] of Object.entries(styles)) {
      for (const d of declarations(src)) {
        if (d.prop.endsWith('filter') && d.value !== 'none') found.push(`${file}: ${d.prop}: ${d.value}`);
        else if (!d.prop.endsWith('filter') && blurRadii(d.value).some((b) => b > 0)) found.push(`${file}: ${d.prop}: ${d.value}`);
      }
    }
    expect(found).toEqual([]);
  });
});
