// float64 references for elementwise.ts.

/** out = a + b */
export function addRef(a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  return Float64Array.from(a, (x, i) => x + b[i]);
}

/** out[r] = sum_j a[r*cols + j] */
export function sumRowsRef(a: ArrayLike<number>, cols: number): Float64Array {
  const out = new Float64Array(a.length / cols);
  for (let i = 0; i < a.length; i++) out[Math.floor(i / cols)] += a[i];
  return out;
}
