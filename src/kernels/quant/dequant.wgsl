// Dequantization of group-wise (GS values) affine quantized rows (packing as in quant.wgsl), as mx.dequantize computes it:
//   w' = round(round(level * scale) + bias)     with the stored scale/bias, each op rounded to the dtype (ROUND)
// (MLX multiplies and adds in the input dtype, so a half dtype rounds twice; in f32 the two f32 roundings are kept
// apart by round_op (quant/packed.inc.wgsl), which stops a compiler from contracting them into one fma).
// Variant 1 (dequantize): one thread per output element, over the first `used` rows of each block of `block` rows
// (a cache [heads, capacity] decoded over the positions in use; used = block for a whole tensor).

struct Params { n: u32, cols: u32, zero: u32, block: u32, used: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
@group(0) @binding(3) var<storage, read> biases: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

override BITS: u32 = 4;
override ROUND: u32 = 0;
override GS: u32 = 64;
override WG: u32 = 64;

// #include "quant/packed.inc.wgsl"

fn packed_word(i: u32) -> u32 { return q[i]; }

@compute @workgroup_size(WG)
fn dequantize(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let r = i / p.cols;
  let row = (r / p.used) * p.block + r % p.used;
  let c = i % p.cols;
  let g = row * (p.cols / GS) + c / GS;
  out[row * p.cols + c] = round_op(round_op(level(row * (p.cols / 32u) * BITS, c) * scales[g]) + biases[g]);
}
