// Parity checks of the rmsnorm / rope / sdpa tests: "within one unit in the last place of MLX's bf16/f16 output"
// (the op-fixture criterion) and per-element tolerances; both name the first element outside.
import { expect } from 'vitest';
import { ropeAngleRef } from '../../src/kernels/rope/rope.ref.ts';
import { halfUlp } from '../../src/tensor/dtype.ts';

export interface UlpOptions {
  /** Fraction of elements that must be within; default 0.999. */
  minFrac?: number;
  /** Allowed distance in ulps of `want`; default 1. */
  ulps?: number;
  /** Extra absolute allowance per element (for a reference with known noise of its own). */
  slack?: ArrayLike<number>;
}

/**
 * Fails unless at least `minFrac` of the elements are within `ulps` ulp (+ slack) of `want` and none is NaN; the
 * message names the first element outside, the count and the worst distance in ulps.
 */
export function expectUlp(got: ArrayLike<number>, want: ArrayLike<number>, dtype: 'bf16' | 'f16', what: string,
  opts: UlpOptions = {}): void {
  const { minFrac = 0.999, ulps = 1, slack } = opts;
  expect(got.length, `${what}: length`).toBe(want.length);
  let bad = 0, first = -1, worst = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.max(0, Math.abs(got[i] - want[i]) - (slack ? slack[i] : 0)) / halfUlp(want[i], dtype);
    if (!(d <= ulps)) { bad++; if (first < 0) first = i; }
    worst = Math.max(worst, Number.isNaN(d) ? Infinity : d);
  }
  if (1 - bad / want.length < minFrac || worst === Infinity) {
    throw new Error(`${what}: ${bad}/${want.length} elements beyond ${ulps} ${dtype} ulp ` +
      `(first at index ${first}: got ${got[first]}, ` +
      `want ${want[first]}); worst ${worst.toFixed(2)} ulp; need >= ${(minFrac * 100).toFixed(2)} % within`);
  }
}

/** |got - want| <= tol[i] for every i. */
export function expectWithin(got: ArrayLike<number>, want: ArrayLike<number>, tol: ArrayLike<number>,
  what: string): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol[i])) {
      throw new Error(`${what}: first mismatch at index ${i}: got ${got[i]}, want ${want[i]} ` +
        `(|diff| ${d} > ${tol[i]})`);
    }
  }
}

/**
 * Per-element RoPE bound (|x_i| + |x_{i+D/2}|) * (rel + k * ulp32(theta)) for rows of S positions at offset + s.
 * An angle error dtheta moves an output by at most |x| dtheta; theta is an f32 up to offset + S, so its rounding
 * and exp2's few-ulp error in inv_freq make dtheta a few ulp32(theta) (0.06 mrad at theta = 1000). `rel` covers
 * the polynomial sin/cos (~1e-7) and the products.
 */
export function ropeBound(x: ArrayLike<number>, seq: number, dim: number,
  o: { base: number; offset: number; scale?: number }, k: number, rel = 4e-7): Float64Array {
  const half = dim / 2, tol = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    for (let i = 0; i < half; i++) {
      const t = Math.abs(ropeAngleRef(i, half, o.offset + (r % seq), o.base, o.scale ?? 1));
      const ulp = t > 0 ? 2 ** (Math.floor(Math.log2(t)) - 23) : 0;
      const mag = Math.abs(x[r * dim + i]) + Math.abs(x[r * dim + i + half]);
      tol[r * dim + i] = tol[r * dim + i + half] = mag * (rel + k * ulp) + 1e-30;
    }
  }
  return tol;
}
