// Declarations and helpers shared by the dense linear kernels (matmul.wgsl: matrix-vector; matmul_rows.wgsl: CPU
// drivers; matmul_tiled.wgsl: prefill), through `// #include "matmul/linear.inc.wgsl"`: the uniforms and bindings,
// the weight dtype and fusion constants, x normalisation, weight unpacking and the output side (gemv_out.inc.wgsl).
// See matmul.wgsl for the variants and fusions. Never compiled on its own.

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Wide views used only by gemv_vec4 and gemv_rows4.
@group(0) @binding(4) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> w4: array<vec4<u32>>;

// #include "matmul/gemv_opts.inc.wgsl"

// Fusions (matmul.wgsl's header).
override NORM: bool = false;
override SWIGLU: bool = false;   // needs an even ROWS in the workgroup kernels
override ACC: bool = false;

// Sums per lane, ROWS * MB: up to 4 x 4 in gemv_vec4 / gemv_word, 8 x 4 in gemv_upl (matmul_upl.wgsl).
const MAXACC: u32 = 32u;

// #include "common/round.inc.wgsl"

// #include "matmul/gemv_out.inc.wgsl"

// An x value as the dot product uses it: rms-normalised and rounded with NORM (inv = the row's inverse RMS).
fn xn(v: f32, inv: f32) -> f32 {
  if (NORM) { return round_out(v * inv); }
  return v;
}

fn xn4(v: vec4<f32>, inv: f32) -> vec4<f32> {
  if (NORM) { return vec4<f32>(round_out(v.x * inv), round_out(v.y * inv), round_out(v.z * inv), round_out(v.w * inv)); }
  return v;
}

// rmsNorm's scale from a row's sum of squares.
fn inv_rms(ss: f32) -> f32 {
  return inverseSqrt(ss / f32(p.K) + p.eps);
}

// #include "matmul/weight.inc.wgsl"

// dot of one vec4<u32> of weights with the x values it multiplies: a (f32 weights), or a then b (halves).
fn dot_unit(wv: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), a); }
  return dot_halves(wv, a, b);
}

// The (normalised) x values one weight unit of x4 row position xi multiplies: a, and b for halves.
fn x_unit(xi: u32, inv: f32) -> array<vec4<f32>, 2> {
  let a = xn4(x4[xi], inv);
  if (WDT == 0u) { return array<vec4<f32>, 2>(a, a); }
  return array<vec4<f32>, 2>(a, xn4(x4[xi + 1u], inv));
}
