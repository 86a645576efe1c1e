// Distances in units in the last place of bf16 / f16 values: how op outputs are compared with MLX's.
import { halfUlp } from '../../src/tensor/dtype.ts';

/** Spacing of `dtype` values at |v| (the gap above it; subnormal spacing below the smallest normal). */
export function ulpOf(dtype: 'bf16' | 'f16', v: number): number {
  return halfUlp(v, dtype);
}

export interface UlpStats {
  /** Fraction of elements equal to the wanted value. */
  exact: number;
  /** Fraction within one ulp of the wanted value. */
  within1: number;
  /** Largest distance, in ulps of the wanted value, and where. */
  worst: number;
  worstAt: number;
}

export function ulpStats(dtype: 'bf16' | 'f16', got: ArrayLike<number>, want: ArrayLike<number>): UlpStats {
  if (got.length !== want.length) throw new Error(`ulpStats: lengths differ (${got.length} vs ${want.length})`);
  let exact = 0, within1 = 0, worst = 0, worstAt = -1;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]) / ulpOf(dtype, want[i]);
    if (d === 0) exact++;
    if (d <= 1) within1++;
    if (!(d <= worst)) { worst = d; worstAt = i; }
  }
  return { exact: exact / want.length, within1: within1 / want.length, worst, worstAt };
}
