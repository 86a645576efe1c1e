// RoPE's angle and sin/cos, shared through `// #include "rope/angle.inc.wgsl"` by rope.wgsl and the fused gqkv
// paths (attention/kvcache.wgsl, attention/rope_append.wgsl), so that all of them rotate bit for bit alike.
// Never compiled on its own.
// sin/cos: our own Cody-Waite reduction by pi/2 and Cephes polynomials, because WGSL only bounds the builtins
// on [-pi, pi] (absolute error 2^-11) and angles reach thousands of radians; this gives ~1 ulp of the f32 angle
// on every adapter.

// (sin t, cos t) for f32 t, |t| < ~1e4 exact reduction (k * PIO2_1 and k * PIO2_2 exact for k < 2^13).
fn sincos(t: f32) -> vec2f {
  let k = round(t * 0.636619772367581343);
  let r = ((t - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8;
  let z = r * r;
  let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
  let c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
  switch (i32(k) & 3) {
    case 0: { return vec2f(s, c); }
    case 1: { return vec2f(c, -s); }
    case 2: { return vec2f(-s, -c); }
    default: { return vec2f(-c, s); }
  }
}

// theta for pair i at absolute position pos, as MLX's Metal kernel forms it.
fn angle(i: u32, half: u32, pos: u32, scale: f32, log2_base: f32) -> f32 {
  let inv_freq = exp2(-(f32(i) / f32(half)) * log2_base);
  return (scale * f32(pos)) * inv_freq;
}
