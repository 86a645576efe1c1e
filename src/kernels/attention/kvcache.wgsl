// Head-major copies [H, cap, D] at positions pos0..pos0+S-1, optionally with RoPE (rotate-half) at absolute
// positions rope_off + s, from a source addressed as src[s * s_stride + col0 + h * h_stride + d]: a column block of
// the fused projection gqkv [S, 4*H*D] (gate | q | k | v, head-major inside a block), or a [H, S, D] tensor.
// Serves ropeQ / ropeK / takeV (cap = S, pos0 = 0), appendKV and writeFull (the cache, pos0 = offset).
// Entry heads_f32: one thread per element, f32 destination, output rounded once (ROUND).
// Entry heads_bf16: one thread per destination u32 word (two bf16 values); D is even, so a word never
//   straddles positions and no two threads write one word.
// The angle and sin/cos code is rope.wgsl's (rope/angle.inc.wgsl; the tests compare ropeQ with rope()).

struct Params {
  n: u32, seq: u32, hd: u32, col0: u32, s_stride: u32, h_stride: u32, cap: u32, pos0: u32, rope_off: u32,
  scale: f32, log2_base: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;   // f32 bits (heads_f32) or packed bf16 (heads_bf16)

override WG: u32 = 64;
override ROPE: bool = true;
override ROUND: u32 = 0;

// #include "common/round.inc.wgsl"

// #include "rope/angle.inc.wgsl"

// Element e of the new block in [H, S, D] order: its (possibly roped) value, unrounded.
fn value(e: u32) -> f32 {
  let d = e % p.hd;
  let hs = e / p.hd;
  let s = hs % p.seq;
  let h = hs / p.seq;
  let row = s * p.s_stride + p.col0 + h * p.h_stride;
  let x = src[row + d];
  if (!ROPE) { return x; }
  let half = p.hd / 2u;
  let i = d % half;
  let sc = sincos(angle(i, half, p.rope_off + s, p.scale, p.log2_base));
  if (d < half) { return x * sc.y - src[row + d + half] * sc.x; }
  return src[row + i] * sc.x + x * sc.y;
}

// Destination element index of new-block element e.
fn dest(e: u32) -> u32 {
  let hs = e / p.hd;
  return ((hs / p.seq) * p.cap + p.pos0 + hs % p.seq) * p.hd + e % p.hd;
}

@compute @workgroup_size(WG)
fn heads_f32(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let e = gid.x + gid.y * nwg.x * WG;
  if (e >= p.n) { return; }
  dst[dest(e)] = bitcast<u32>(round_out(value(e)));
}

@compute @workgroup_size(WG)
fn heads_bf16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let w = gid.x + gid.y * nwg.x * WG;
  if (w >= p.n / 2u) { return; }
  let lo = bitcast<u32>(round_bf16(value(2u * w)));
  let hi = bitcast<u32>(round_bf16(value(2u * w + 1u)));
  dst[dest(2u * w) / 2u] = (lo >> 16u) | (hi & 0xffff0000u);
}
