// Tolerance checks that report the first bad index: |got - want| <= atol + rtol * |want|.
import { expect } from 'vitest';

export function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, atol: number, rtol = 0,
  what = 'value'): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    const bad = !(d <= atol + rtol * Math.abs(want[i]));
    if (bad) {
      throw new Error(`${what}: first mismatch at index ${i}: got ${got[i]}, want ${want[i]} ` +
        `(|diff| ${d} > ${atol} + ${rtol}*|want|)`);
    }
    worst = Math.max(worst, d);
  }
  expect(worst).toBeLessThanOrEqual(atol + rtol * maxAbs(want));
}

export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
