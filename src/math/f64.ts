// Row statistics of logits in float64, for comparisons and diagnostics (hrm/compare.ts, REFRACT's KLD statistics,
// the CPU sampler's greedy pick, the argmax kernel's reference): one home, importing nothing, so every layer that
// reads logits on the CPU can take it.

/** log softmax of row[off .. off + n) in float64, max-subtracted: row[v] - (max + log sum_v exp(row[v] - max)). */
export function logSoftmaxRow(row: ArrayLike<number>, off: number, n: number): Float64Array {
  let max = -Infinity;
  for (let v = 0; v < n; v++) max = Math.max(max, row[off + v]);
  let sum = 0;
  for (let v = 0; v < n; v++) sum += Math.exp(row[off + v] - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(n);
  for (let v = 0; v < n; v++) out[v] = row[off + v] - lse;
  return out;
}

/**
 * The index (from off) of the first maximum of row[off .. off + n): the first index on ties, as mx.argmax. A NaN
 * never wins a comparison, so callers that must refuse NaN rows check for them first.
 */
export function argmaxRow(row: ArrayLike<number>, off: number, n: number): number {
  let best = 0;
  for (let v = 1; v < n; v++) if (row[off + v] > row[off + best]) best = v;
  return best;
}
