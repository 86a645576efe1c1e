// float64 reference for matmul.ts, in plain loops.
import type { Round } from '../common/codes.ts';
import { addRef, roundAs, siluMulRef } from '../ops/ops.ref.ts';
import { rmsNormRef } from '../rmsnorm/rmsnorm.ref.ts';

/**
 * out[m, n] = round(sum_k x[m, k] * w[n, k]) with x [M, K], w [N, K] row-major; the sum in float64, then
 * rounded to f32 and (round 'bf16' / 'f16') to that dtype, as the kernel's single output rounding.
 */
export function matmulRef(x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number, K: number,
  round: Round = 'none'): Float64Array {
  const out = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[m * K + k] * w[n * K + k];
      out[m * N + n] = round === 'none' ? s : roundAs(round, s);
    }
  }
  return out;
}

/** sum_k |x[m, k] * w[n, k]|: scales the rounding-error bound of an f32 dot product. */
export function matmulAbsRef(x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number,
  K: number): Float64Array {
  const out = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += Math.abs(x[m * K + k] * w[n * K + k]);
      out[m * N + n] = s;
    }
  }
  return out;
}

export interface FusedRefOptions {
  round?: Round;
  /** rmsNorm's eps: x rows normalised first, each value rounded as rmsNorm rounds its output. */
  norm?: number;
  /** w is [gate; up] ([2I, K]): siluMul of the two halves, output [M, I]. */
  swiglu?: boolean;
  /** The residual [M, N] the result is added to (each op's output rounded). */
  accumulate?: ArrayLike<number>;
}

/** matmul with its fusions (matmul.ts MatmulOptions), composed from the float64 references of each op. */
export function matmulFusedRef(x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number, K: number,
  o: FusedRefOptions = {}): Float64Array {
  const round = o.round ?? 'none';
  const xn = o.norm === undefined ? x : rmsNormRef(x, K, o.norm).map((v) => roundAs(round, v));
  const y = matmulRef(xn, w, M, N, K, round);
  const s = o.swiglu ? siluMulRef(y, M, N / 2, round) : y;
  return o.accumulate ? addRef(o.accumulate, s, round) : s;
}
