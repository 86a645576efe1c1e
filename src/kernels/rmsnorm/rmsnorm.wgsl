// RMSNorm without weight, as mx.fast.rms_norm(x, None, eps): y = x * rsqrt(mean(x^2) + eps) per row.
// Variant 1 (rms_norm): one workgroup per row; each thread sums squares of a strided slice in f32, a tree
// reduction in shared memory gives the row sum, then every thread scales its slice. The output is rounded
// once (ROUND: 0 none, 1 bf16, 2 f16; MLX's kernel computes in f32 and casts the product to the input dtype).

struct Params { rows: u32, dim: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 256;   // threads per row; a power of two
override ROUND: u32 = 0;

var<workgroup> partial: array<f32, WG>;

// #include "common/round.inc.wgsl"

@compute @workgroup_size(WG)
fn rms_norm(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) t: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }   // uniform per workgroup
  let base = row * p.dim;
  var acc = 0.0;
  for (var j = t; j < p.dim; j += WG) { let v = x[base + j]; acc += v * v; }
  partial[t] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { partial[t] += partial[t + s]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(partial[0] / f32(p.dim) + p.eps);
  for (var j = t; j < p.dim; j += WG) { out[base + j] = round_out(x[base + j] * inv); }
}
