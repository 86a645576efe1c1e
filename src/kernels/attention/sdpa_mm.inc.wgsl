// What prefill attention's matmul form shares around its two products (sdpa_mm.wgsl in f32, sdpa_mm_f16.wgsl on
// tensor cores), through `// #include "attention/sdpa_mm.inc.wgsl"`: the options (sdpa-mm.ts passes all four, so
// the defaults never apply), the row workgroup and the helpers of its passes. The includer declares the uniforms
// `p` (seq, heads, kv_len, kvp, cap, offset, scale, gate_stride, hd), the bindings k, v, s, mask, out and gate,
// and softmax_row's hook `weight_out` (softmax_row.inc.wgsl). Never compiled on its own.

override KV_BF16: bool = false;
override MASK: u32 = 0;
override ROUND: u32 = 0;
override GATE: bool = false;

const WG: u32 = 256u;
const NEG: f32 = -1.0e30;   // "no score": WGSL does not promise infinities

var<workgroup> red: array<f32, WG>;

// #include "common/gate.inc.wgsl"
// #include "common/mask.inc.wgsl"
// #include "attention/kv_load.inc.wgsl"
// #include "attention/softmax_row.inc.wgsl"

// The finish passes' element: thread (gid, nwg) of a 2-D grid of WG-wide workgroups takes out[i] = out[row, col] of
// [seq, heads * hd]; i is past the end (>= seq * heads * hd) for the threads that have none.
fn finish_at(gid: vec3u, nwg: vec3u) -> vec3u {
  let i = gid.x + gid.y * nwg.x * WG;
  let width = p.heads * p.hd;
  return vec3u(i, i / width, i % width);
}
