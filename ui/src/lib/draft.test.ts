import { describe, expect, it } from 'vitest';
import { mayHoldSecret } from './draft.svelte';

describe('draft', () => {
  it('never stores a task that may carry a credential', () => {
    for (const t of ['Log in with password hunter2', '用密码 123456 登录', 'enter PIN 4321', '输入验证码 889900', 'my passcode is 1111'])
      expect(mayHoldSecret(t), t).toBe(true);
    for (const t of ['Open Settings and turn on Wi-Fi', '打开商城，把第一件商品加入购物车', 'Spin the pinwheel'])
      expect(mayHoldSecret(t), t).toBe(false);
  });
});
