// Prefill attention as two batched matmuls (sdpa-mm.ts), for a GPU where sdpa_prefill's per-query loop is the
// bottleneck: S = q K^T and O = P V run on the tiled matmul kernel (a head per workgroups.z), around three passes
// here. f32 inside and one rounding at the output, as sdpa_prefill (only the summation order differs):
//  - kv_f32: a thread per element: K and V of head h as f32 rows Kc[h, j, :], Vc[h, j, :], j < kvp (keys kv_len..
//    zero, so the products' padding adds nothing; the P V product reads Vc as a [keys, D] matrix);
//  - softmax_rows: a workgroup per (query, head) row of S: s'_j = scale * S_j where key j is visible (MASK,
//    common/mask.inc.wgsl), M = max s', P_j = e^(s'_j - M) (0 where not visible), written over S; L = sum P_j;
//  - finish: out[s, h*D + d] = gated(r(O / L)), 0 for a query that sees no key.

struct Params { seq: u32, heads: u32, kv_len: u32, kvp: u32, cap: u32, offset: u32, scale: f32, gate_stride: u32, hd: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<u32>;             // [H, cap, D] f32 bits or packed bf16
@group(0) @binding(2) var<storage, read> v: array<u32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;      // [H, kvp, D]
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;      // [H, kvp, D]
@group(0) @binding(5) var<storage, read_write> s: array<f32>;       // [H, seq, kvp]: scores, then weights
@group(0) @binding(6) var<storage, read_write> l: array<f32>;       // [H, seq]: the weights' sums
@group(0) @binding(7) var<storage, read> mask: array<u32>;          // see MASK
@group(0) @binding(8) var<storage, read_write> out: array<f32>;     // [seq, H * D]: O, then the output
@group(0) @binding(9) var<storage, read> gate: array<f32>;          // [seq, gate_stride] (GATE)

// #include "attention/sdpa_mm.inc.wgsl"

@compute @workgroup_size(WG)
fn kv_f32(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.heads * p.kvp * p.hd) { return; }
  let d = i % p.hd;
  let j = (i / p.hd) % p.kvp;
  let h = i / (p.hd * p.kvp);
  var kx = 0.0;
  var vx = 0.0;
  if (j < p.kv_len) {
    let at = (h * p.cap + j) * p.hd + d;
    kx = k_at(at);
    vx = v_at(at);
  }
  kc[i] = kx;
  vc[i] = vx;
}

@compute @workgroup_size(WG)
fn softmax_rows(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let i = wid.x;   // query
  let h = wid.y;
  let total = softmax_row(t, i, (h * p.seq + i) * p.kvp, true);
  if (t == 0u) { l[h * p.seq + i] = total; }
}

// softmax_row's hook: the weights stay in s only.
fn weight_out(row: u32, j: u32, e: f32) {}

@compute @workgroup_size(WG)
fn finish(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let at = finish_at(gid, nwg);
  let i = at.x;
  if (i >= p.seq * p.heads * p.hd) { return; }
  let row = at.y;
  let col = at.z;
  let total = l[(col / p.hd) * p.seq + row];
  var y = 0.0;
  if (total > 0.0) { y = round_out(out[i] / total); }
  out[i] = gated(y, row, col);
}
