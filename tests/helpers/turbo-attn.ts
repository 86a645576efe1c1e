// Float64 decode attention over TurboQuant-coded keys and values (turbo_one's oracle): each cached row coded by the
// reference coder (turbo.ref.ts, bit for bit the GPU's append), decoded as centroid x norm (the fork's rotated
// domain) and rotated back in float64 (R^T, no f32 rounding), then softmax(q k^T * scale) V in float64.
import {
  TURBO_CENTROIDS, TURBO_GROUP, TURBO_SIGNS1, TURBO_SIGNS2, turboSign, type TurboType,
} from '../../src/kernels/turbo/format.ts';
import { encodeHead, unpackBlock } from '../../src/kernels/turbo/turbo.ref.ts';
import { f16ToF32 } from '../../src/tensor/dtype.ts';

/** A group through D(first) H/sqrt(128) D(second) in float64 (R: s1 then s2; R^T: s2 then s1). */
function rotate64(x: readonly number[], first: readonly number[], second: readonly number[]): number[] {
  const y = x.map((v, i) => v * turboSign(first, i));
  for (let h = 1; h < TURBO_GROUP; h *= 2) {
    for (let i = 0; i < TURBO_GROUP; i += 2 * h) {
      for (let j = i; j < i + h; j++) [y[j], y[j + h]] = [y[j] + y[j + h], y[j] - y[j + h]];
    }
  }
  return y.map((v, i) => v * turboSign(second, i) / Math.sqrt(TURBO_GROUP));
}

/** R x per group of a padded head vector. */
export function rotateHead64(x: readonly number[]): number[] {
  return groups(x).flatMap((g) => rotate64(g, TURBO_SIGNS1, TURBO_SIGNS2));
}

/** R^T x per group. */
export function unrotateHead64(x: readonly number[]): number[] {
  return groups(x).flatMap((g) => rotate64(g, TURBO_SIGNS2, TURBO_SIGNS1));
}

function groups(x: readonly number[]): number[][] {
  return Array.from({ length: x.length / TURBO_GROUP }, (_, g) => x.slice(g * TURBO_GROUP, (g + 1) * TURBO_GROUP));
}

/** A row coded as the cache codes it, then its padded rotated-domain values (centroid x norm, float64). */
export function codedRotated(t: TurboType, row: ArrayLike<number>, dim: number): number[] {
  return encodeHead(t, row, dim).flatMap((b) => {
    const { idx, norm } = unpackBlock(t, b);
    return idx.map((i) => Math.fround(TURBO_CENTROIDS[t][i]) * f16ToF32(norm));
  });
}

export interface Attn64 { out: number[]; maxScore: number; maxValue: number }

/** One head: softmax(q . k_j * scale) over rows k, v (original-domain float64 vectors of length dim). */
export function attend64(q: readonly number[], k: readonly number[][], v: readonly number[][], scale: number): Attn64 {
  const s = k.map((kj) => kj.reduce((a, x, d) => a + x * q[d], 0) * scale);
  const m = Math.max(...s);
  const w = s.map((x) => Math.exp(x - m));
  const l = w.reduce((a, b) => a + b, 0);
  const out = q.map((_, d) => v.reduce((a, vj, j) => a + w[j] * vj[d], 0) / l);
  const maxValue = Math.max(...v.flatMap((r) => r.map(Math.abs)));
  return { out, maxScore: Math.max(...s.map(Math.abs)), maxValue };
}
