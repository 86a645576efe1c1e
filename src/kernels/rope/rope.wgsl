// RoPE, non-traditional (rotate-half, as mx.fast.rope(x, D, traditional=False, base, scale, offset)), on
// x [B, H, S, D] (any leading axes folded into rows of S positions).
// For pair i in [0, D/2): inv_freq = exp2(-(i / (D/2)) * log2(base)); theta = (scale * (offset + s)) * inv_freq;
// out_i = x_i cos - x_{i+D/2} sin, out_{i+D/2} = x_i sin + x_{i+D/2} cos, all in f32, rounded once (ROUND).
// Variant 1 (rope): one thread per pair.
// Angle and sin/cos: rope/angle.inc.wgsl (shared with the fused gqkv paths, kvcache.wgsl and rope_append.wgsl).

struct Params { n_pairs: u32, seq: u32, half: u32, offset: u32, scale: f32, log2_base: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;
override ROUND: u32 = 0;

// #include "common/round.inc.wgsl"

// #include "rope/angle.inc.wgsl"

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
