import { describe, expect, it } from 'vitest';
import { guidance, pathNote, withoutCliAdvice } from './guidance';

describe('guidance', () => {
  it('sends a missing key to the model setup instead of showing the keyring error', () => {
    const g = guidance({
      code: 'model_config',
      message: 'no API key for profile default: keyring service phoneagent account default, or set PHONE_AGENT_API_KEY',
    });
    expect(g.fix).toEqual({ label: 'Set up the model', target: 'setup' });
    expect(g.text).not.toContain('PHONE_AGENT_API_KEY');
    expect(g.text).not.toContain('model_config');
    expect(g.detail).toContain('keyring');
  });

  it('opens the model setup for an unreachable or unknown model', () => {
    for (const code of ['model_unreachable', 'model_auth', 'model_not_found']) {
      expect(guidance({ code, message: 'x' }).fix?.target).toBe('setup');
    }
  });

  it('offers the virtual phone when no phone is selected', () => {
    const g = guidance({ code: 'no_device', message: 'no phone selected: pick one in Devices, or start the virtual phone' });
    expect(g.fix?.target).toBe('virtual_phone');
  });

  it('never passes CLI flags through to the user', () => {
    expect(withoutCliAdvice('the phone is offline: reconnect it (or use --direct HOST:PORT)')).toBe(
      'the phone is offline: reconnect it',
    );
    const g = guidance({ code: 'something_else', message: 'cannot reach it; pass --base-url http://x to change it' });
    expect(g.text).not.toContain('--');
  });

  it('says what a missing adb server means for the user, without its code or a command', () => {
    const g = guidance({
      code: 'adb_server_unreachable',
      message: 'no adb server at 127.0.0.1:5037: phones on USB are used directly; to use adb instead run `adb start-server`',
    });
    expect(g.text).not.toContain('adb_server_unreachable');
    expect(g.text).not.toContain('start-server');
    expect(g.text).toContain('USB');
    expect(g.detail).toContain('127.0.0.1:5037');
  });
});

describe('pathNote', () => {
  it('turns a missing scrcpy server into a sentence with its fix', () => {
    const n = pathNote('scrcpy is not used: scrcpy-server not found: install scrcpy (apt install scrcpy / brew install scrcpy) or set SCRCPY_SERVER_PATH');
    expect(n.key).toContain('Install scrcpy');
    expect(n.command).toBe('apt install scrcpy');
    expect(n.detail).toBe('');
  });
  it('keeps any other reason as the device said it, after a translatable lead', () => {
    expect(pathNote('scrcpy is not used: server version 2.4 does not match 3.1')).toEqual({
      key: 'scrcpy is not used:', command: '', detail: 'server version 2.4 does not match 3.1',
    });
    expect(pathNote('something else')).toEqual({ key: '', command: '', detail: 'something else' });
  });
});
