// float64 reference for rmsnorm.ts: plain loops.

/** y[r, j] = x[r, j] / sqrt(mean_j(x[r, j]^2) + eps) */
export function rmsNormRef(x: ArrayLike<number>, dim: number, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let ss = 0;
    for (let j = 0; j < dim; j++) ss += x[r * dim + j] ** 2;
    const inv = 1 / Math.sqrt(ss / dim + eps);
    for (let j = 0; j < dim; j++) out[r * dim + j] = x[r * dim + j] * inv;
  }
  return out;
}
