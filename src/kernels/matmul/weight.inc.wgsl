// A dense weight's elements widened to f32, and (halves.inc.wgsl) dot products of its packed halves, shared through
// `// #include "matmul/weight.inc.wgsl"` by the dense linear kernels (linear.inc.wgsl, matmul_f16.wgsl) and the
// tensor cores' f32 fallback (sgmat_prep.wgsl). The includer declares `w: array<u32>` (f32 bits, or bf16/f16
// packed two per word: element e in word e >> 1, low half when e is even) and `WDT` (an override or const: 0 f32,
// 1 bf16, 2 f16). Never compiled on its own.
// #include "matmul/halves.inc.wgsl"

// Weight element e of the chunk, widened to f32.
fn weight(e: u32) -> f32 {
  if (WDT == 0u) { return bitcast<f32>(w[e]); }
  let h = halves(w[e >> 1u]);
  return select(h.x, h.y, (e & 1u) == 1u);
}
