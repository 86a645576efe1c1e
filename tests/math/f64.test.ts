// The float64 row statistics every CPU-side comparison uses (src/math/f64.ts), against values worked by hand.
import { describe, expect, it } from 'vitest';
import { argmaxRow, logSoftmaxRow } from '../../src/math/f64.ts';

describe('logSoftmaxRow', () => {
  it('is row - log sum exp(row) over the window at off, and sums to probability 1', () => {
    const row = [9, 0, Math.log(2), Math.log(3), 9];
    const got = logSoftmaxRow(row, 1, 3);
    expect(got).toHaveLength(3);
    // exp of the window: 1, 2, 3 over 6.
    expect([...got.map(Math.exp)]).toEqual([1 / 6, 2 / 6, 3 / 6].map((p) => expect.closeTo(p, 15)));
    expect(got[0]).toBeCloseTo(-Math.log(6), 15);
  });
  it('subtracts the maximum first: large logits neither overflow nor lose the differences', () => {
    const got = logSoftmaxRow([1000, 1001, -Infinity], 0, 3);
    expect(got[1] - got[0]).toBeCloseTo(1, 12);
    expect(got[1]).toBeCloseTo(-Math.log1p(Math.exp(-1)), 12);
    expect(got[2]).toBe(-Infinity);
  });
  it('gives NaN everywhere for a row holding a NaN', () => {
    expect([...logSoftmaxRow([0, NaN, 1], 0, 3)].every(Number.isNaN)).toBe(true);
  });
});

describe('argmaxRow', () => {
  it('is the first maximum of the window, counted from off', () => {
    expect(argmaxRow([7, 1, 5, 5, 2, 7], 1, 4)).toBe(1);
    expect(argmaxRow([-3, -1, -2], 0, 3)).toBe(1);
    expect(argmaxRow([4], 0, 1)).toBe(0);
  });
  it('never picks a NaN, and takes -Infinity only when nothing is larger', () => {
    expect(argmaxRow([NaN, 1, 3], 0, 3)).toBe(0);
    expect(argmaxRow([1, NaN, 3], 0, 3)).toBe(2);
    expect(argmaxRow([-Infinity, -Infinity], 0, 2)).toBe(0);
  });
});
