// RoPE, non-traditional (rotate-half, as mx.fast.rope(x, D, traditional=False, base, scale, offset)), on
// x [B, H, S, D] (any leading axes folded into rows of S positions).
// For pair i in [0, D/2): inv_freq = exp2(-(i / (D/2)) * log2(base)); theta = (scale * (offset + s)) * inv_freq;
// out_i = x_i cos - x_{i+D/2} sin, out_{i+D/2} = x_i sin + x_{i+D/2} cos, all in f32, rounded once (ROUND).
// Variant 1 (rope): one thread per pair.
// sin/cos: our own Cody-Waite reduction by pi/2 and Cephes polynomials, because WGSL only bounds the builtins
// on [-pi, pi] (absolute error 2^-11) and angles reach thousands of radians; this gives ~1 ulp of the f32 angle
// on every adapter. kvcache.wgsl carries the same angle code for the fused gqkv path (tests compare the two).

struct Params { n_pairs: u32, seq: u32, half: u32, offset: u32, scale: f32, log2_base: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;
override ROUND: u32 = 0;

fn to_bf16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return v; }
  return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}

fn to_f16(v: f32) -> f32 {
  if (abs(v) < 6.103515625e-05) { return round(v * 16777216.0) * 5.9604644775390625e-08; }  // subnormal grid 2^-24
  let b = bitcast<u32>(v);
  let r = bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);
  if (abs(r) > 65504.0) { return bitcast<f32>((b & 0x80000000u) | 0x7f800000u); }
  return r;
}

fn round_out(v: f32) -> f32 {
  if (ROUND == 1u) { return to_bf16(v); }
  if (ROUND == 2u) { return to_f16(v); }
  return v;
}

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

@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= p.n_pairs) { return; }
  let row = idx / p.half;
  let i = idx % p.half;
  let sc = sincos(angle(i, p.half, p.offset + row % p.seq, p.scale, p.log2_base));
  let a = row * 2u * p.half + i;
  let x1 = x[a];
  let x2 = x[a + p.half];
  out[a] = round_out(x1 * sc.y - x2 * sc.x);
  out[a + p.half] = round_out(x1 * sc.x + x2 * sc.y);
}
