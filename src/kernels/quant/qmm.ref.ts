// CPU references for qmm.ts.
import type { Round } from '../common/codes.ts';
import { GROUP, packedCols, roundTo, unpackLevel } from './quant.ref.ts';

export interface QmmRefOptions { bits: number; transpose: boolean; m: number; k: number; n: number }

/**
 * Exact (float64) x @ W^T (transpose, W [n, k] quantized along k) or x @ W (W [k, n] quantized along n) with
 * W = level * scale + bias per group: the Metal kernels' math before f32 accumulation and output rounding.
 */
export function qmmRef(x: ArrayLike<number>, q: ArrayLike<number>, scales: ArrayLike<number>,
  biases: ArrayLike<number>, { bits, transpose, m, k, n }: QmmRefOptions): Float64Array {
  const out = new Float64Array(m * n);
  const cols = transpose ? k : n;
  const wpr = packedCols(cols, bits), gpr = cols / GROUP;
  const w = (r: number, c: number) => {
    const g = r * gpr + Math.floor(c / GROUP);
    return unpackLevel(q, r * wpr, c, bits) * scales[g] + biases[g];
  };
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += x[i * k + t] * (transpose ? w(j, t) : w(t, j));
      out[i * n + j] = s;
    }
  }
  return out;
}

/**
 * MLX's CPU backend (scalar path): sequential over k, every op rounded to the dtype,
 * acc = r(acc + r(x * r(r(scale * level) + bias))). Bit-exact model of its f16/bf16 (and f32) results.
 */
export function qmmCpuRef(x: ArrayLike<number>, q: ArrayLike<number>, scales: ArrayLike<number>,
  biases: ArrayLike<number>, o: QmmRefOptions & { round: Round }): Float32Array {
  const { bits, transpose, m, k, n, round } = o;
  const r = (v: number) => roundTo(round, v);
  const out = new Float32Array(m * n);
  const cols = transpose ? k : n;
  const wpr = packedCols(cols, bits), gpr = cols / GROUP;
  const w = (row: number, c: number) => {
    const g = row * gpr + Math.floor(c / GROUP);
    return r(r(scales[g] * unpackLevel(q, row * wpr, c, bits)) + biases[g]);
  };
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s = r(s + r(x[i * k + t] * (transpose ? w(j, t) : w(t, j))));
      out[i * n + j] = s;
    }
  }
  return out;
}
