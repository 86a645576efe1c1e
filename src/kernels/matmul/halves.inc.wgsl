// Packed 16-bit weights widened to f32 and dotted with f32 values, shared through
// `// #include "matmul/halves.inc.wgsl"` by weight.inc.wgsl (the dense linear kernels) and gemv_mlp.wgsl. The
// includer declares `WDT` (an override or const: 0 f32, 1 bf16, 2 f16). Never compiled on its own.
// #include "common/half.inc.wgsl"

// Both halves of a packed word, (element 2i, element 2i + 1).
fn halves(word: u32) -> vec2<f32> {
  if (WDT == 2u) { return unpack2x16float(word); }
  return unpack2x16bf16(word);
}

// dot of one vec4<u32> of packed halves (8 weights, in element order) with the x values they multiply: a, then b.
fn dot_halves(wv: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
  let h0 = halves(wv.x);
  let h1 = halves(wv.y);
  let h2 = halves(wv.z);
  let h3 = halves(wv.w);
  return dot(vec4<f32>(h0.x, h1.x, h2.x, h3.x), vec4<f32>(a.x, a.z, b.x, b.z))
       + dot(vec4<f32>(h0.y, h1.y, h2.y, h3.y), vec4<f32>(a.y, a.w, b.y, b.w));
}
