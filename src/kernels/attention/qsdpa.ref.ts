// CPU reference for qsdpa.ts: mlx-lm's quantized_scaled_dot_product_attention in float64 with the dtype roundings
// at MLX's op boundaries, from dequantized K/V (exact level * scale + bias).
import type { Round } from '../common/codes.ts';
import { GROUP, dtypeMin, packedCols, roundTo, unpackLevel } from '../quant/quant.ref.ts';
import { visibleRef, type MaskRef } from './sdpa.ref.ts';

export interface QsdpaRefOptions {
  heads: number; kvHeads: number; seq: number; dim: number; cap: number; kvLen: number; offset: number;
  mask: MaskRef; scale: number; round: Round;
  /** 'dtype': the two matmuls as MLX's CPU backend computes them (sequential, every op rounded). */
  accumulate?: 'f32' | 'dtype';
}

/** q [heads, seq, dim] against the cache behind `kv`; returns [seq, heads*dim] before the final output rounding. */
export function qsdpaRef(q: ArrayLike<number>, kv: KvAccess, o: QsdpaRefOptions): Float64Array {
  const { heads, kvHeads, seq, dim, kvLen, offset, mask, round } = o;
  const r = (x: number) => roundTo(round, x);
  const seqOps = o.accumulate === 'dtype';
  const sc = r(o.scale);
  const out = new Float64Array(seq * heads * dim);
  const s = new Float64Array(kvLen);
  for (let h = 0; h < heads; h++) {
    const kvh = Math.floor(h / (heads / kvHeads));
    for (let i = 0; i < seq; i++) {
      const qs = Array.from({ length: dim }, (_, d) => r(q[(h * seq + i) * dim + d] * sc));
      let mx = -Infinity;
      for (let j = 0; j < kvLen; j++) {
        let acc = 0;
        for (let d = 0; d < dim; d++) {
          acc = seqOps ? r(acc + r(qs[d] * kv.kOp(kvh, j, d))) : acc + qs[d] * kv.k(kvh, j, d);
        }
        s[j] = visibleRef(mask, i, j, offset, kvLen) ? r(acc) : dtypeMin(round);
        mx = Math.max(mx, s[j]);
      }
      let sum = 0;
      for (let j = 0; j < kvLen; j++) sum += Math.exp(s[j] - mx);
      const pr = Array.from(s, (x) => r(Math.exp(x - mx) / sum));
      for (let d = 0; d < dim; d++) {
        let acc = 0;
        for (let j = 0; j < kvLen; j++) acc = seqOps ? r(acc + r(pr[j] * kv.vOp(kvh, j, d))) : acc +
          pr[j] * kv.v(kvh, j, d);
        out[i * heads * dim + h * dim + d] = acc;
      }
    }
  }
  return out;
}

/** Dequantized cache values: exact (k, v) and as MLX's CPU computes them in the dtype (kOp, vOp). */
export interface KvAccess {
  k(h: number, j: number, d: number): number;
  v(h: number, j: number, d: number): number;
  kOp(h: number, j: number, d: number): number;
  vOp(h: number, j: number, d: number): number;
}

export interface QuantSideRef {
  bits: number; q: ArrayLike<number>; scales: ArrayLike<number>; biases: ArrayLike<number>;
}

/** KvAccess over host copies of quantized cache sides laid out [kvHeads, cap, dim] (QuantKV). */
export function kvAccess(k: QuantSideRef, v: QuantSideRef, cap: number, dim: number, round: Round): KvAccess {
  const at = (side: QuantSideRef, h: number, j: number, d: number, ops: boolean) => {
    const row = h * cap + j, g = row * (dim / GROUP) + Math.floor(d / GROUP);
    const lv = unpackLevel(side.q, row * packedCols(dim, side.bits), d, side.bits);
    return ops ? roundTo(round, roundTo(round, side.scales[g] * lv) + side.biases[g]) : lv * side.scales[g] +
      side.biases[g];
  };
  return {
    k: (h, j, d) => at(k, h, j, d, false), v: (h, j, d) => at(v, h, j, d, false),
    kOp: (h, j, d) => at(k, h, j, d, true), vOp: (h, j, d) => at(v, h, j, d, true),
  };
}
