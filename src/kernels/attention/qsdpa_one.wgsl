// Attention for one query per head that sees every key of a quantized cache (decode, S = 1), with mlx-lm's rounding
// points as qsdpa.wgsl (r() rounds to the dtype, ROUND; Metal's matmul order, f32 sums per run of 32 values):
//   qs = r(q * r(scale)); s_j = r(qmm(qs, K_j)); p = r(softmax_f32(s)); out = r(qmm(p, V)).
// qsdpa.wgsl's decode passes give a score row one workgroup per head and walk a key per thread, a long chain of
// loads on a GPU with far more cores than heads. Two dispatches:
//  - qone_scores: a workgroup per (chunk of CK = 32 * WG / HD keys, head); a thread per (key, pack of 32 values)
//    loads the pack's BITS words up front and sums s * (q . levels) + b * (sum q) as qsdpa_scores does; a key's
//    packs are added in order. Writes r(s_j) to `scores` [H, cap] and the chunk's largest score after them.
//    (The scores are attention/qsdpa_one.inc.wgsl, shared with qsdpa_one_append.wgsl, which appends the new key
//    and value first.)
//  - qone_out: a workgroup per (DB = 32 dims, head): M = the largest chunk max; L = sum e^(s_j - M) over all keys,
//    summed as qsdpa_softmax sums (SOFT threads, strided, then a tree), so the weights p_j = r(e^(s_j - M) * (1 / L))
//    are the passes' bit for bit (a sum merged from chunks' (max, sum) moved L by several ulps of the GPU's exp, and
//    every weight with it: one flipped f16 weight is ~10 ulps of a small output); then sum_j p_j (s * level + b)
//    over every key, rounded and gated as ops' sigmoidGate (bit for bit).
// Splitting the values over key chunks too (a third, merging dispatch) was slower on an H200: q8 at 640 keys 38 us
// a call against 24 (the passes: 39), at 2048 keys 46 against 31 (passes 45).
// The chunk count comes from the capacity and kv_len is a uniform, so a recorded decode step replays at any
// position. Keys past kv_len in a score chunk read the last key and are left out.

@group(0) @binding(1) var<storage, read> q: array<f32>;                  // [H, 1, HD]
@group(0) @binding(2) var<storage, read> cq: array<u32>;                 // K (scores) or V (out): [kv_heads, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read> cs: array<f32>;                 // [kv_heads, cap, HD/64]
@group(0) @binding(4) var<storage, read> cb: array<f32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;         // [1, H * HD]
@group(0) @binding(8) var<storage, read> gate: array<f32>;              // [1, >= H * HD]: columns [0, H * HD) (GATE)

override GATE: bool = false;
override SOFT: u32 = 64;   // threads of qone_out's softmax sum: qsdpa_softmax's WG (64, or 256 from 1024 keys of capacity)

// qone_out: DB dims of a head per workgroup; a thread per (E dims, key slice), the keys of a slice strided by SL.
const DB: u32 = 32u;
const E: u32 = 8u;
const DG: u32 = DB / E;
const SL: u32 = WG / DG;

var<workgroup> red_l: array<f32, WG>;
var<workgroup> red8: array<f32, SL * DB>;   // qone_out: the slices' sums, added by a tree

// #include "attention/qsdpa_one.inc.wgsl"
// #include "common/sigmoid.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return q[h * HD + e]; }

@compute @workgroup_size(WG)
fn qone_scores(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  chunk_scores(wid, t);
}

@compute @workgroup_size(WG)
fn qone_out(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  var m = -MAXF;
  for (var i = t; i < live; i += WG) { m = max(m, scores[cmax_at(h, i)]); }
  red[t] = m;
  workgroupBarrier();
  for (var n = WG / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red[t] = max(red[t], red[t + n]); }
    workgroupBarrier();
  }
  let big = red[0];
  var l = 0.0;
  if (t < SOFT) {
    for (var j = t; j < p.kv_len; j += SOFT) { l += exp(scores[h * p.cap + j] - big); }
  }
  red_l[t] = l;
  workgroupBarrier();
  for (var n = SOFT / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red_l[t] += red_l[t + n]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red_l[0];
  let dl = (t % DG) * E;
  let d0 = wid.x * DB + dl;
  let sl = t / DG;
  let groups = HD / 64u;
  let wpr = groups * 2u * BITS;
  let kvh = h / (p.heads / p.kv_heads);
  var acc: array<f32, E>;
  for (var j = sl; j < p.kv_len; j += SL) {
    let pj = round_out(exp(scores[h * p.cap + j] - big) * inv);
    let vrow = kvh * p.cap + j;
    let sc = cs[vrow * groups + d0 / 64u];
    let bi = cb[vrow * groups + d0 / 64u];
    for (var e = 0u; e < E; e++) { acc[e] += pj * (sc * level(vrow * wpr, d0 + e) + bi); }
  }
  for (var e = 0u; e < E; e++) { red8[sl * DB + dl + e] = acc[e]; }
  workgroupBarrier();
  for (var n = SL / 2u; n > 0u; n >>= 1u) {
    for (var i = t; i < n * DB; i += WG) { red8[i] += red8[i + n * DB]; }
    workgroupBarrier();
  }
  if (t < DB) {
    let i = h * HD + wid.x * DB + t;
    var y = round_out(red8[t]);
    if (GATE) { y = round_out(round_out(sigmoid(gate[i])) * y); }
    out[i] = y;
  }
}
