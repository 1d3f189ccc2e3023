import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Batcher } from './batch';

describe('Batcher', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands a burst over as one batch, in order', () => {
    const got: number[][] = [];
    const b = new Batcher<number>((x) => got.push(x));
    b.push(1);
    b.push(2);
    b.push(3);
    expect(got).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(got).toEqual([[1, 2, 3]]);
  });

  it('spaces batches by at least spacingMs', () => {
    const got: number[][] = [];
    const b = new Batcher<number>((x) => got.push(x), 16);
    b.push(1);
    vi.advanceTimersByTime(0);
    b.push(2);
    vi.advanceTimersByTime(10);
    b.push(3);
    expect(got).toEqual([[1]]);
    vi.advanceTimersByTime(6);
    expect(got).toEqual([[1], [2, 3]]);
  });

  it('flush hands over at once and never an empty batch', () => {
    const got: number[][] = [];
    const b = new Batcher<number>((x) => got.push(x));
    b.flush();
    b.push(7);
    b.flush();
    vi.advanceTimersByTime(100);
    expect(got).toEqual([[7]]);
  });
});
