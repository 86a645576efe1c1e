// float64 references for qlinear.ts: the quantized matrix as each variant multiplies it, then matmul's fused
// reference (matmul.ref.ts), and the summed magnitudes that bound an f32 evaluation of it.
import type { Round } from '../common/codes.ts';
import { packedCols, unpackLevel, dequantizeExact, dequantizeRef } from '../quant/quant.ref.ts';
import { matmulFusedRef, type FusedRefOptions } from '../matmul/matmul.ref.ts';
import { roundAs } from '../ops/ops.ref.ts';

/** A quantized [N, K] matrix on the CPU (packed levels, f32 scales and biases per group). */
export interface QuantMatrixRef {
  q: ArrayLike<number>; scales: ArrayLike<number>; biases: ArrayLike<number>; N: number; K: number; bits: number;
  groupSize: number;
}

/**
 * W as a variant uses it: 'exact' (qgemv / qrows sum scale * level + bias in f32, the float64 value is the
 * reference) or, for the tiled variant, MLX's qmm loader rounding r(r(scale * level) + bias) in the dtype.
 */
export function qweightRef(w: QuantMatrixRef, as: 'exact' | Round): Float64Array {
  if (as === 'exact' || as === 'none') return dequantizeExact(w.q, w.scales, w.biases, w.N, w.K, w.bits, w.groupSize);
  return Float64Array.from(dequantizeRef(w.q, w.scales, w.biases, w.N, w.K,
    { bits: w.bits, groupSize: w.groupSize, round: as }));
}

/** qlinear(x, w, opts) in float64 over qweightRef(w, as). */
export function qlinearRef(x: ArrayLike<number>, w: QuantMatrixRef, M: number,
  o: FusedRefOptions & { as?: 'exact' | Round } = {}): Float64Array {
  return matmulFusedRef(x, qweightRef(w, o.as ?? 'exact'), M, w.N, w.K, o);
}

/**
 * sum_k |x[m, k]| * (|scale| * level + |bias|): what the f32 error of the per-pack form scale * sum(x level) +
 * bias * sum(x) scales with (the dequantized value alone can hide a cancellation between its two terms).
 */
export function qlinearAbsRef(x: ArrayLike<number>, w: QuantMatrixRef, M: number): Float64Array {
  const { N, K, bits, groupSize } = w;
  const wpr = packedCols(K, bits), gpr = K / groupSize;
  const out = new Float64Array(M * N);
  for (let n = 0; n < N; n++) {
    for (let k = 0; k < K; k++) {
      const g = n * gpr + Math.floor(k / groupSize);
      const a = Math.abs(w.scales[g]) * unpackLevel(w.q, n * wpr, k, bits) + Math.abs(w.biases[g]);
      for (let m = 0; m < M; m++) out[m * N + n] += Math.abs(x[m * K + k]) * a;
    }
  }
  return out;
}

/** qembed: out[s, j] = r(dequantize(W)[ids[s], j] * scale), mx.dequantize rounding each op to the dtype. */
export function qembedRef(ids: ArrayLike<number>, w: QuantMatrixRef, scale: number, round: Round): Float64Array {
  const table = round === 'none' ? dequantizeExact(w.q, w.scales, w.biases, w.N, w.K, w.bits, w.groupSize)
    : dequantizeRef(w.q, w.scales, w.biases, w.N, w.K, { bits: w.bits, groupSize: w.groupSize, round });
  const out = new Float64Array(ids.length * w.K);
  const s = roundAs(round, scale);
  for (let i = 0; i < ids.length; i++) {
    for (let j = 0; j < w.K; j++) out[i * w.K + j] = roundAs(round, table[Math.min(ids[i], w.N - 1) * w.K + j] * s);
  }
  return out;
}
