// float64 reference for rope.ts and the RoPE in kvcache.ts: plain loops.
// The angle is formed as the kernels (and MLX's Metal kernel) form it, in f32 steps (Math.fround), because at
// position 4000 one f32 ulp of theta is 2.4e-4 rad: an exact-f64 angle would test f32 angle rounding, not the
// kernel. Everything after the angle (sin, cos, products) is float64.

/** theta = (scale * pos) * exp2(-(i / half) * log2(base)), each step rounded to f32. */
export function ropeAngleRef(i: number, half: number, pos: number, base: number, scale = 1): number {
  const f = Math.fround;
  const invFreq = f(2 ** f(-f(i / half) * f(Math.log2(base))));
  return f(f(scale * pos) * invFreq);
}

/** x [rows, S, D] (rows = B*H): rotate-half RoPE at positions offset + s. */
export function ropeRef(x: ArrayLike<number>, seq: number, dim: number,
  opts: { base: number; scale?: number; offset: number }): Float64Array {
  const half = dim / 2;
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    const pos = opts.offset + (r % seq);
    for (let i = 0; i < half; i++) {
      const t = ropeAngleRef(i, half, pos, opts.base, opts.scale ?? 1);
      const c = Math.cos(t), s = Math.sin(t);
      const x1 = x[r * dim + i], x2 = x[r * dim + i + half];
      out[r * dim + i] = x1 * c - x2 * s;
      out[r * dim + i + half] = x1 * s + x2 * c;
    }
  }
  return out;
}
