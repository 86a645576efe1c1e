// float64 references for ops.ts, in plain loops. `round` applies the same rounding points as the kernels (each
// MLX op's output rounded to the model dtype); with 'none' everything stays float64.
import { roundBf16, roundF16 } from '../../tensor/dtype.ts';
import type { Round } from '../common/codes.ts';
import { argmaxRow } from '../../math/f64.ts';

/** A value rounded as an op output in that dtype (via f32, as the kernels hold it); 'none' keeps it as is. */
export function roundAs(round: Round, v: number): number {
  if (round === 'bf16') return roundBf16(v);
  if (round === 'f16') return roundF16(v);
  return v;
}

/** sigmoid, the form MLX uses: y = 1 / (1 + exp(|v|)); v < 0 ? y : 1 - y. */
export function sigmoidRef(v: number): number {
  const y = 1 / (1 + Math.exp(Math.abs(v)));
  return v < 0 ? y : 1 - y;
}

/** out[s, h] = r(table[ids[s], h] * r(scale)); table [V, H]. Like MLX, a Python-float scale takes the dtype. */
export function embedRef(ids: ArrayLike<number>, table: ArrayLike<number>, H: number, scale: number,
  round: Round = 'none'): Float64Array {
  const out = new Float64Array(ids.length * H);
  const sc = roundAs(round, scale);
  for (let s = 0; s < ids.length; s++) {
    for (let h = 0; h < H; h++) out[s * H + h] = roundAs(round, table[ids[s] * H + h] * sc);
  }
  return out;
}

/** out = r(a + b) */
export function addRef(a: ArrayLike<number>, b: ArrayLike<number>, round: Round = 'none'): Float64Array {
  return Float64Array.from(a, (v, i) => roundAs(round, v + b[i]));
}

/** out[s, i] = r(r(g * r(sigmoid(g))) * u) with g = gu[s, i], u = gu[s, I + i]; gu [S, 2I]. */
export function siluMulRef(gu: ArrayLike<number>, S: number, I: number, round: Round = 'none'): Float64Array {
  const out = new Float64Array(S * I);
  for (let s = 0; s < S; s++) {
    for (let i = 0; i < I; i++) {
      const g = gu[s * 2 * I + i], u = gu[s * 2 * I + I + i];
      out[s * I + i] = roundAs(round, roundAs(round, g * roundAs(round, sigmoidRef(g))) * u);
    }
  }
  return out;
}

/** out[s, i] = r(r(sigmoid(gqkv[s, i])) * o[s, i]); gqkv [S, 4D], o [S, D] (D = heads * head_dim). */
export function sigmoidGateRef(gqkv: ArrayLike<number>, o: ArrayLike<number>, S: number, D: number,
  round: Round = 'none'): Float64Array {
  const out = new Float64Array(S * D);
  for (let s = 0; s < S; s++) {
    for (let i = 0; i < D; i++) out[s * D + i] = roundAs(round,
      roundAs(round, sigmoidRef(gqkv[s * 4 * D + i])) * o[s * D + i]);
  }
  return out;
}

function rowMax(x: ArrayLike<number>, base: number, cols: number, scale: number): number {
  let m = -Infinity;
  for (let j = 0; j < cols; j++) m = Math.max(m, x[base + j] * scale);
  return m;
}

/** out[r] = log sum_j exp(x[r, j] / temperature), max-subtracted. */
export function logSumExpRowsRef(x: ArrayLike<number>, cols: number, temperature = 1): Float64Array {
  const rows = x.length / cols;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const m = rowMax(x, r * cols, cols, 1 / temperature);
    let s = 0;
    for (let j = 0; j < cols; j++) s += Math.exp(x[r * cols + j] / temperature - m);
    out[r] = m + Math.log(s);
  }
  return out;
}

/** out[r, j] = x[r, j] / T - logsumexp(x[r] / T) */
export function logSoftmaxRowsRef(x: ArrayLike<number>, cols: number, temperature = 1): Float64Array {
  const lse = logSumExpRowsRef(x, cols, temperature);
  return Float64Array.from(x, (v, i) => v / temperature - lse[Math.floor(i / cols)]);
}

/** out[r, j] = softmax(x[r] / T)_j */
export function softmaxRowsRef(x: ArrayLike<number>, cols: number, temperature = 1): Float64Array {
  return logSoftmaxRowsRef(x, cols, temperature).map(Math.exp);
}

/** out[r] = sum_j P_j (log P_j - log Q_j), P = softmax(p[r]), Q = softmax(q[r]). */
export function klRowsRef(p: ArrayLike<number>, q: ArrayLike<number>, cols: number): Float64Array {
  const lp = logSoftmaxRowsRef(p, cols), lq = logSoftmaxRowsRef(q, cols);
  const out = new Float64Array(p.length / cols);
  for (let i = 0; i < lp.length; i++) out[Math.floor(i / cols)] += Math.exp(lp[i]) * (lp[i] - lq[i]);
  return out;
}

/** out[r] = first j with x[r, j] = max_j x[r, j] (mx.argmax); 0xffffffff for a row holding a NaN. */
export function argmaxRowsRef(x: ArrayLike<number>, cols: number): Uint32Array {
  const out = new Uint32Array(x.length / cols);
  for (let r = 0; r < out.length; r++) {
    const best = argmaxRow(x, r * cols, cols);
    let nan = false;
    for (let j = 0; j < cols; j++) nan ||= Number.isNaN(x[r * cols + j]);
    out[r] = nan ? 0xffffffff : best;
  }
  return out;
}
