// Compare two logits tensors [S, V] (ours vs MLX, or two of our modes) in float64: the numbers people use to
// cross-check numerics. KL is KL(A || B) per position from max-subtracted log-sum-exp.
import { ShapeError } from '../errors.ts';
import { argmaxRow, logSoftmaxRow } from '../math/f64.ts';

export interface LogitsComparison {
  positions: number;
  vocab: number;
  maxAbsDiff: number;
  meanKl: number;
  maxKl: number;
  /** Share of positions whose argmax agrees. */
  top1Agreement: number;
  perPositionKl: number[];
}

/** Compare logits A and B, both [S, V] row-major. */
export function compareLogits(a: ArrayLike<number>, b: ArrayLike<number>, shapeA: readonly number[],
  shapeB: readonly number[] = shapeA): LogitsComparison {
  if (shapeA.length !== 2 || shapeA.join() !== shapeB.join() || a.length !== b.length) {
    throw new ShapeError('compare',
      `logits shapes differ or are not [S, V]: [${shapeA.join(', ')}] vs [${shapeB.join(', ')}]`);
  }
  const [S, V] = shapeA;
  let maxAbsDiff = 0, agree = 0;
  const kl: number[] = [];
  for (let s = 0; s < S; s++) {
    const off = s * V;
    for (let v = 0; v < V; v++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(a[off + v] - b[off + v]));
    const pa = logSoftmaxRow(a, off, V), pb = logSoftmaxRow(b, off, V);
    let k = 0;
    for (let v = 0; v < V; v++) k += Math.exp(pa[v]) * (pa[v] - pb[v]);
    kl.push(k);
    if (argmaxRow(a, off, V) === argmaxRow(b, off, V)) agree++;
  }
  return {
    positions: S, vocab: V, maxAbsDiff,
    meanKl: kl.reduce((x, y) => x + y, 0) / Math.max(1, S), maxKl: Math.max(0, ...kl),
    top1Agreement: S ? agree / S : 1, perPositionKl: kl,
  };
}
