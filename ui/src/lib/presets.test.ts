import { describe, expect, it } from 'vitest';
import { applyPreset, presetOf, stepMark, stepTitle } from './presets';
import type { ModelProfile } from './bindings/ModelProfile';
import type { ProviderPresetView } from './bindings/ProviderPresetView';

const profile: ModelProfile = {
  name: 'local', base_url: 'http://127.0.0.1:8000/v1', model: 'autoglm-phone-9b', protocol: 'do',
  coordinate_space: 'relative_0_999', image_max_long_side: 1568, image_multiple_of: 0, family: 'auto',
  key_entry: 'local', prompt_price_per_mtok: 1, completion_price_per_mtok: 2,
};
const openrouter: ProviderPresetView = {
  id: 'openrouter', name: 'OpenRouter', base_url: 'https://openrouter.ai/api/v1', models: ['bytedance/ui-tars-1.5-7b'],
  family: 'auto', protocol: 'do', image_max_long_side: 1568, image_multiple_of: 28, key_entry: 'openrouter', hint: '',
};

describe('presets', () => {
  it('fills the endpoint, model, family, image policy and key entry, keeping name and prices', () => {
    const p = applyPreset(profile, openrouter);
    expect(p.base_url).toBe('https://openrouter.ai/api/v1');
    expect(p.model).toBe('bytedance/ui-tars-1.5-7b');
    expect(p.image_multiple_of).toBe(28);
    expect(p.key_entry).toBe('openrouter');
    expect(p.coordinate_space).toBe('auto');
    expect(p.name).toBe('local');
    expect(p.prompt_price_per_mtok).toBe(1);
    expect(presetOf(p, [openrouter])).toBe('openrouter');
    expect(presetOf(profile, [openrouter])).toBe('');
  });

  it('names and marks the steps', () => {
    expect(stepTitle('key_accepted')).toBe('Key accepted');
    expect(stepMark({ id: 'reachable', status: 'failed', detail: '', fix: 'x', sample: null })).toBe('✗');
    expect(stepMark({ id: 'reachable', status: 'ok', detail: '', fix: null, sample: null })).toBe('✓');
  });
});
