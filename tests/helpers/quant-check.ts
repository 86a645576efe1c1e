// Comparisons for the quantization tests: bit-exact equality and distances in units in the last place of the
// activation dtype, each failing with the first bad index.
import { expect } from 'vitest';
import type { Round } from '../../src/kernels/common/codes.ts';
import { halfUlp } from '../../src/tensor/dtype.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bitsOf(v: number): number {
  f32[0] = v;
  return u32[0];
}

/** Every element identical: integer arrays by value, float arrays by f32 bit pattern (-0 differs from +0). */
export function expectBitExact(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  const ints = want instanceof Uint32Array || want instanceof Int32Array;
  for (let i = 0; i < want.length; i++) {
    const same = ints ? got[i] === want[i] : bitsOf(got[i]) === bitsOf(want[i]);
    if (!same) throw new Error(`${what}: first mismatch at index ${i}: got ${got[i]}, want ${want[i]}`);
  }
}

/**
 * Spacing of the dtype's values at |v| (f32's for 'none': bf16's over 2^16); subnormal spacing below the smallest
 * normal.
 */
export function ulpOf(round: Round, v: number): number {
  return round === 'none' ? halfUlp(v, 'bf16') / 2 ** 16 : halfUlp(v, round);
}

export interface UlpSummary { exact: number; within1: number; worst: number; worstAt: number }

/** Distances |got - want| in ulps of `want` in the dtype. */
export function ulpSummary(round: Round, got: ArrayLike<number>, want: ArrayLike<number>): UlpSummary {
  let exact = 0, within1 = 0, worst = 0, worstAt = -1;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]) / ulpOf(round, want[i]);
    if (d === 0) exact++;
    if (d <= 1) within1++;
    if (!(d <= worst)) { worst = d; worstAt = i; }
  }
  return { exact: exact / want.length, within1: within1 / want.length, worst, worstAt };
}

/** At least `minFrac` of the elements within one ulp and none beyond `maxUlps`; names the first offender. */
export function expectUlps(round: Round, got: ArrayLike<number>, want: ArrayLike<number>, minFrac: number,
  maxUlps: number, what: string): UlpSummary {
  expect(got.length, `${what}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]) / ulpOf(round, want[i]);
    if (!(d <= maxUlps)) {
      throw new Error(`${what}: index ${i} is ${d} ulps off (got ${got[i]}, want ${want[i]}; at most ${maxUlps})`);
    }
  }
  const s = ulpSummary(round, got, want);
  if (s.within1 < minFrac) {
    let first = -1;
    for (let i = 0; i < want.length && first < 0; i++) if (Math.abs(got[i] - want[i]) > ulpOf(round,
      want[i])) first = i;
    throw new Error(`${what}: ${(s.within1 * 100).toFixed(3)} % within 1 ulp (< ${minFrac * 100} %); ` +
      `first beyond at ${first}: got ${got[first]}, want ${want[first]}`);
  }
  return s;
}
