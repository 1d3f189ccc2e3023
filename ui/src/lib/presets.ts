// Provider presets and connection-test results for Settings and the first-start setup
// (issue #15, issue #14 item 3). The presets themselves come from Rust (`model_catalog`).
import type { ModelProfile } from './bindings/ModelProfile';
import type { ProviderPresetView } from './bindings/ProviderPresetView';
import type { ConnectionStepView } from './bindings/ConnectionStepView';

/** `p` with what `preset` fills in: base URL, model (its first example), family, protocol,
 * image policy, keyring entry (empty for local servers without a key) and coordinates `auto`
 * (a family fixes its own; a generic model is calibrated). Name and prices are kept. */
export function applyPreset(p: ModelProfile, preset: ProviderPresetView): ModelProfile {
  return {
    ...p,
    base_url: preset.base_url,
    model: preset.models[0] ?? p.model,
    family: preset.family,
    protocol: preset.protocol,
    coordinate_space: 'auto',
    image_max_long_side: preset.image_max_long_side,
    image_multiple_of: preset.image_multiple_of,
    key_entry: preset.key_entry,
  };
}

/** The preset whose base URL `p` uses, if any (the picker shows it as chosen). */
export function presetOf(p: ModelProfile, presets: ProviderPresetView[]): string {
  const url = p.base_url.trim().replace(/\/+$/, '');
  return presets.find((x) => x.base_url.replace(/\/+$/, '') === url)?.id ?? '';
}

/** English title of a connection-test step (translated by `t`). */
export function stepTitle(id: string): string {
  const titles: Record<string, string> = {
    reachable: 'Reachable',
    key_accepted: 'Key accepted',
    model_listed: 'Model listed',
    vision_answered: 'Vision request answered',
    family_grammar: 'Family grammar parsed',
    coordinate_contract: 'Coordinate contract',
  };
  return titles[id] ?? id;
}

/** The mark shown for a step's status. */
export function stepMark(s: ConnectionStepView): string {
  return s.status === 'ok' ? '✓' : s.status === 'failed' ? '✗' : '–';
}
