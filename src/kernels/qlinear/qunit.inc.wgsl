// qgemv4's 16-byte unit of packed 4- or 8-bit levels and its dot product with x, shared through
// `// #include "qlinear/qunit.inc.wgsl"` by qgemv4 (qlinear_vec4.wgsl), qgemv_wide (qlinear_wide.wgsl) and
// qgemv_mlp.wgsl, after qlinear/qxs.inc.wgsl (`XSH`: x read from the staged `xs` instead of `x4`). The includer
// declares `BITS` (4 or 8), `x4` and `xn4(v, inv)` (x as the dot products use it). Never compiled on its own.

// qgemv4's unit: one vec4<u32> of packed levels of a row (32 values at 4 bits, 16 at 8), QU = 32 / BITS quads of
// 4 values, all in one group (GS >= 32). A level is taken in place, masked within its half word, as level * 2^s
// (s < 16: its offset there), against x pre-scaled by 2^-s (MLX's qmv trick: powers of two, so every product is the
// unshifted one unless |x| < 2^-114). The masked bits become an f32 by or-ing in 2^23's exponent and subtracting
// 2^23 (exact): full-rate integer and float ops instead of an int-to-float conversion, which NVIDIA GPUs run at a
// fraction of the float rate (it was most of qgemv's work per value, next to shift, mask and fma).
fn quad_levels(wv: vec4<u32>, q: u32) -> vec4<f32> {
  var v: vec4<u32>;
  if (BITS == 8u) {
    let w = wv[q];
    v = vec4<u32>(w, w, w >> 16u, w >> 16u) & vec4<u32>(0xffu, 0xff00u, 0xffu, 0xff00u);
  } else {
    v = vec4<u32>(wv[q / 2u] >> (16u * (q & 1u))) & vec4<u32>(0xfu, 0xf0u, 0xf00u, 0xf000u);
  }
  return bitcast<vec4<f32>>(v | vec4<u32>(0x4b000000u)) - vec4<f32>(8388608.0);
}

fn quad_scale() -> vec4<f32> {
  if (BITS == 8u) { return vec4<f32>(1.0, 0.00390625, 1.0, 0.00390625); }
  return vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625);
}

// x values of unit u of the x row starting at vec4 xr4 (normalised and rounded with NORM), pre-scaled, and their sum.
struct XUnit { q: array<vec4<f32>, 8>, sum: f32 }

fn unit_x4(xr4: u32, u: u32, inv: f32) -> XUnit {
  var xu: XUnit;
  var s = vec4<f32>(0.0);
  for (var q = 0u; q < 32u / BITS; q++) {
    let i = u * (32u / BITS) + q;
    var v: vec4<f32>;
    if (XSH) { v = xs[i]; } else { v = xn4(x4[xr4 + i], inv); }
    s += v;
    xu.q[q] = v * quad_scale();
  }
  xu.sum = dot(s, vec4<f32>(1.0));
  return xu;
}

// scale * sum(x * level) + bias * sum(x) over one unit (sb = its group's scale and bias).
fn unit_dot4(wv: vec4<u32>, sb: vec2<f32>, xu: XUnit) -> f32 {
  var d = 0.0;
  for (var q = 0u; q < 32u / BITS; q++) { d += dot(xu.q[q], quad_levels(wv, q)); }
  return sb.x * d + sb.y * xu.sum;
}
