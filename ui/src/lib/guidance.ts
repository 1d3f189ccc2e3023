// What the UI says about an error (issue #14 item 3): a sentence with the fix and, where the
// fix is in the app, a button that goes there — never a raw code and a CLI flag.
import type { AppError } from './bindings/AppError';

/** Where a fix button takes the user. */
export type FixTarget = 'settings' | 'setup' | 'virtual_phone' | 'devices';

/** The sentence shown for an error, the fix button (if any) and the original detail. */
export interface Guidance {
  /** The sentence: what is wrong and what to do (English key; translated by `t`). */
  text: string;
  /** The button's label and where it leads. */
  fix: { label: string; target: FixTarget } | null;
  /** The backend's own message, shown small and collapsed ("details"). */
  detail: string;
}

const CLI_ADVICE = /\s*\(?\s*(?:or )?(?:pass |use |set |run )?`?--[a-z][a-z-]+(?:[ =][^\s`)]+)?`?\)?/g;

/** Strip command-line advice (`--direct HOST:PORT`, `--base-url …`) a desktop user cannot follow. */
export function withoutCliAdvice(message: string): string {
  return message.replace(CLI_ADVICE, '').replace(/\s{2,}/g, ' ').trim();
}

/** The guidance for `e`. */
export function guidance(e: AppError): Guidance {
  const detail = e.message;
  const m = e.message.toLowerCase();
  const key = m.includes('keyring') || m.includes('api key') || m.includes('phone_agent_api_key');
  if (e.code === 'keyring' || ((e.code === 'model_config' || e.code === 'config') && key)) {
    return {
      text: 'This model profile has no API key yet. Add it in the model setup (it is kept in your system keyring), or pick another profile.',
      fix: { label: 'Set up the model', target: 'setup' },
      detail,
    };
  }
  if (e.code === 'model_config' || e.code === 'model_auth' || e.code === 'model_unreachable' || e.code === 'model_not_found') {
    return {
      text: 'The model profile cannot be used as it is. Check its base URL, model name and key in the model setup, and test the connection.',
      fix: { label: 'Set up the model', target: 'setup' },
      detail,
    };
  }
  if (e.code === 'no_device') {
    return {
      text: 'No phone is selected. Plug in a phone with USB debugging on and pick it in Devices, or start the virtual phone.',
      fix: { label: 'Start virtual phone', target: 'virtual_phone' },
      detail,
    };
  }
  if (e.code === 'offline' || e.code === 'unauthorized' || e.code === 'device_lost') {
    return {
      text: 'The phone is not reachable right now. Unlock it, accept the "Allow USB debugging?" prompt if it shows one, check the cable, then refresh Devices.',
      fix: { label: 'Refresh', target: 'devices' },
      detail,
    };
  }
  if (e.code === 'not_running') {
    return { text: 'No task is running.', fix: null, detail };
  }
  if (e.code === 'adb_server_unreachable') {
    return {
      text: 'No adb server is running. Phones on USB are used directly, and a phone on Wi-Fi can be added by its address below.',
      fix: null,
      detail,
    };
  }
  if (e.code === 'pause_first') {
    return { text: 'A task is driving the phone. Pause it first, then tap or swipe on the mirror.', fix: null, detail };
  }
  if (e.code === 'busy') {
    return { text: 'A task is already running on this phone. Stop it or wait for it to end.', fix: null, detail };
  }
  return { text: withoutCliAdvice(e.message), fix: null, detail };
}

/**
 * The mirror's "faster path" note (issue #12 item 5) in words to translate: `key` is an English
 * key for `t`, `command` a shell command that fixes it (shown as code, may be empty), `detail`
 * the device's own words shown verbatim after it (may be empty).
 */
export function pathNote(note: string): { key: string; command: string; detail: string } {
  const m = note.toLowerCase();
  if (m.includes('scrcpy-server not found')) {
    return { key: 'scrcpy is not used: its server was not found. Install scrcpy, or set SCRCPY_SERVER_PATH to its server file:', command: 'apt install scrcpy', detail: '' };
  }
  if (m.startsWith('scrcpy is not used:')) {
    return { key: 'scrcpy is not used:', command: '', detail: note.slice('scrcpy is not used:'.length).trim() };
  }
  return { key: '', command: '', detail: note };
}

/** A readiness check's name (`screen_size`) in words to translate (English key for `t`). */
export function checkLabel(name: string): string {
  return name.replace(/_/g, ' ');
}
