// CPU reference of random.wgsl's generator (u32 arithmetic), in float64 before the final f32 rounding.

function pcg(v: number): number {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> (((state >>> 28) + 4) >>> 0)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** Value i of fillRandom(seed, scale), as the GPU computes it in f32. */
export function randomValueRef(i: number, seed: number, scale: number): number {
  const u = Math.fround((pcg((seed ^ pcg(i)) >>> 0) >>> 8) / 16777216);
  return Math.fround(scale * Math.fround(2 * u - 1));
}
