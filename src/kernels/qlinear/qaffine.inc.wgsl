// The scale and bias of a quantized weight's group, shared through `// #include "qlinear/qaffine.inc.wgsl"` by the
// quantized linear kernels (qlinear.inc.wgsl) and qgemv_mlp.wgsl. The includer declares `p.K` (values a row), `GS`,
// `SDT` (the stored dtype: 0 f32, 1 bf16, 2 f16) and the bindings `scales`, `biases` ([rows, K / GS], halves two a
// word). Never compiled on its own.
// #include "common/half.inc.wgsl"

// Groups a weight row.
fn row_groups() -> u32 { return p.K / GS; }

// Element g of a scales / biases array of the stored dtype, as f32.
fn stored(word: u32, g: u32) -> f32 {
  if (SDT == 0u) { return bitcast<f32>(word); }
  let h = select(unpack2x16bf16(word), unpack2x16float(word), SDT == 2u);
  return select(h.x, h.y, (g & 1u) == 1u);
}

// (scale, bias) of the group holding value k of weight row n.
fn affine_at(n: u32, k: u32) -> vec2<f32> {
  let g = n * row_groups() + k / GS;
  let i = select(g >> 1u, g, SDT == 0u);
  return vec2<f32>(stored(scales[i], g), stored(biases[i], g));
}
