// float64 references for sdpa.ts and kvcache.ts: plain loops.
import { ropeAngleRef } from '../rope/rope.ref.ts';

/** Host-side masks, as AttnMask with plain arrays. */
export type MaskRef =
  | { kind: 'none' }
  | { kind: 'causal' }
  | { kind: 'prefix'; tokenTypes: ArrayLike<number> }
  | { kind: 'explicit'; mask: ArrayLike<number> /* [S, kvLen] */ };

/** May query i (absolute position offset + i) attend key j? (see AttnMask) */
export function visibleRef(m: MaskRef, i: number, j: number, offset: number, kvLen: number): boolean {
  switch (m.kind) {
    case 'none': return true;
    case 'causal': return j <= offset + i;
    case 'prefix': return j <= offset + i || (m.tokenTypes[offset + i] === 1 && m.tokenTypes[j] === 1);
    case 'explicit': return m.mask[i * kvLen + j] !== 0;
  }
}

export interface SdpaRefOptions {
  heads: number; seq: number; dim: number; cap: number; kvLen: number; offset: number; mask: MaskRef; scale: number;
}

/** headsRef's options: the gqkv layout, the column block, and RoPE's use, base and first position. */
interface HeadsRefOptions {
  heads: number; headDim: number; seq: number; block: number; rope: boolean; base: number; offset: number;
}

/**
 * out[s, h*D + d] = sum_j softmax_j(scale * q[h,s] . k[h,j]) v[h,j,d] over visible keys j < kvLen; 0 for a query that
 * sees no key. q [H, S, D]; k, v [H, cap, D]; out [S, H*D].
 */
export function sdpaRef(q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>,
  o: SdpaRefOptions): Float64Array {
  const { heads: H, seq: S, dim: D, cap, kvLen } = o;
  const out = new Float64Array(S * H * D);
  const scores = new Float64Array(kvLen);
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < S; i++) {
      let max = -Infinity;
      for (let j = 0; j < kvLen; j++) {
        if (!visibleRef(o.mask, i, j, o.offset, kvLen)) { scores[j] = -Infinity; continue; }
        let s = 0;
        for (let d = 0; d < D; d++) s += q[(h * S + i) * D + d] * k[(h * cap + j) * D + d];
        scores[j] = s * o.scale;
        max = Math.max(max, scores[j]);
      }
      if (max === -Infinity) continue;
      let sum = 0;
      for (let j = 0; j < kvLen; j++) { scores[j] = Math.exp(scores[j] - max); sum += scores[j]; }
      for (let j = 0; j < kvLen; j++) {
        if (scores[j] === 0) continue;
        for (let d = 0; d < D; d++) out[(i * H + h) * D + d] += (scores[j] / sum) * v[(h * cap + j) * D + d];
      }
    }
  }
  return out;
}

/**
 * The [H, S, D] head-major copy of column block `block` (0 gate, 1 q, 2 k, 3 v) of gqkv [S, 4*H*D], with RoPE at
 * positions offset + s when `rope` (angle as rope.ref.ts forms it).
 */
export function headsRef(gqkv: ArrayLike<number>, o: HeadsRefOptions): Float64Array {
  const { heads: H, headDim: D, seq: S } = o;
  const half = D / 2;
  const out = new Float64Array(H * S * D);
  for (let h = 0; h < H; h++) {
    for (let s = 0; s < S; s++) {
      const row = s * 4 * H * D + o.block * H * D + h * D;
      for (let d = 0; d < D; d++) {
        let y = gqkv[row + d];
        if (o.rope) {
          const i = d % half;
          const t = ropeAngleRef(i, half, o.offset + s, o.base);
          y = d < half ? gqkv[row + d] * Math.cos(t) - gqkv[row + d + half] * Math.sin(t) : gqkv[row +
            i] * Math.sin(t) + gqkv[row + d] * Math.cos(t);
        }
        out[(h * S + s) * D + d] = y;
      }
    }
  }
  return out;
}
