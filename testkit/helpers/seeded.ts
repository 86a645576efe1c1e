// Seeded random numbers for tests (mulberry32), so every failure reproduces.

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n values uniform in [-scale, scale). */
export function randn(seed: number, n: number, scale = 1): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

/** n attention-gate logits: uniform in [-6, 6) with saturating (+-100), zero and tiny values mixed in. */
export function gateLogits(seed: number, n: number): Float32Array {
  const g = randn(seed, n, 6);
  for (let i = 0; i < n; i += 37) g[i] = [100, -100, 0, 1e-30, -3e-8][(i / 37) % 5];
  return g;
}
