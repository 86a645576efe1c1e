// Attention for one query per head that sees every key of a quantized cache (decode, S = 1), with mlx-lm's rounding
// points as qsdpa.wgsl (r() rounds to the dtype, ROUND; Metal's matmul order, f32 sums per run of 32 values):
//   qs = r(q * r(scale)); s_j = r(qmm(qs, K_j)); p = r(softmax_f32(s)); out = r(qmm(p, V)).
// qsdpa.wgsl's decode passes give a score row one workgroup per head and walk a key per thread, a long chain of
// loads on a GPU with far more cores than heads. Two dispatches:
//  - qone_scores: a workgroup per (chunk of CK = 32 * WG / HD keys, head); a thread per (key, pack of 32 values)
//    loads the pack's BITS words up front and sums s * (q . levels) + b * (sum q) as qsdpa_scores does; a key's
//    packs are added in order. Writes r(s_j) to `scores` [H, cap] and the chunk's largest score to `cmax`.
//  - qone_out: a workgroup per (DB = 32 dims, head): M = the largest chunk max; L = sum e^(s_j - M) over all keys,
//    summed as qsdpa_softmax sums (SOFT threads, strided, then a tree), so the weights p_j = r(e^(s_j - M) * (1 / L))
//    are the passes' bit for bit (a sum merged from chunks' (max, sum) moved L by several ulps of the GPU's exp, and
//    every weight with it: one flipped f16 weight is ~10 ulps of a small output); then sum_j p_j (s * level + b)
//    over every key, rounded and gated as ops' sigmoidGate (bit for bit).
// Splitting the values over key chunks too (a third, merging dispatch) was slower on an H200: q8 at 640 keys 38 us
// a call against 24 (the passes: 39), at 2048 keys 46 against 31 (passes 45).
// The chunk count comes from the capacity and kv_len is a uniform, so a recorded decode step replays at any
// position. Keys past kv_len in a score chunk read the last key and are left out.

struct Params { kv_len: u32, cap: u32, heads: u32, kv_heads: u32, scale: f32, n_chunks: u32, zero: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;                  // [H, 1, HD]
@group(0) @binding(2) var<storage, read> cq: array<u32>;                 // K (scores) or V (out): [kv_heads, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read> cs: array<f32>;                 // [kv_heads, cap, HD/64]
@group(0) @binding(4) var<storage, read> cb: array<f32>;
@group(0) @binding(5) var<storage, read_write> scores: array<f32>;      // [H, cap]
@group(0) @binding(6) var<storage, read_write> cmax: array<f32>;        // [H, n_chunks]: each chunk's largest score
@group(0) @binding(7) var<storage, read_write> out: array<f32>;         // [1, H * HD]
@group(0) @binding(8) var<storage, read> gate: array<f32>;              // [1, >= H * HD]: columns [0, H * HD) (GATE)

override HD: u32 = 128;    // 64, 128 or 256
override BITS: u32 = 4;    // 2..8
override ROUND: u32 = 0;
override GATE: bool = false;
override SOFT: u32 = 64;   // threads of qone_out's softmax sum: qsdpa_softmax's WG (64, or 256 from 1024 keys of capacity)

const WG: u32 = 256u;
const MAXF: f32 = 3.4028234663852886e38;
override PACKS: u32 = HD / 32u;          // threads per key in qone_scores
override CK: u32 = WG / PACKS;           // keys per chunk
// qone_out: DB dims of a head per workgroup; a thread per (E dims, key slice), the keys of a slice strided by SL.
const DB: u32 = 32u;
const E: u32 = 8u;
const DG: u32 = DB / E;
const SL: u32 = WG / DG;

var<workgroup> qsh: array<f32, HD>;
var<workgroup> red: array<f32, WG>;
var<workgroup> red_l: array<f32, WG>;
var<workgroup> red8: array<f32, SL * DB>;   // qone_out: the slices' sums, added by a tree

// #include "quant/packed.inc.wgsl"
// #include "common/sigmoid.inc.wgsl"

// packed.inc.wgsl's packed binding: K (scores) or V (out).
fn packed_word(i: u32) -> u32 { return cq[i]; }

// Value e (0..31) of a pack whose BITS words are in w (it may straddle two words for 3, 5, 6 and 7 bits).
fn unpack(w: ptr<function, array<u32, 8>>, e: u32) -> f32 {
  let bit = e * BITS;
  let i = bit >> 5u;
  let sh = bit & 31u;
  var x = (*w)[i] >> sh;
  if (sh + BITS > 32u) { x |= (*w)[i + 1u] << (32u - sh); }
  return f32(x & ((1u << BITS) - 1u));
}

@compute @workgroup_size(WG)
fn qone_scores(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return; }   // the same for the whole workgroup
  let sc = round_op(p.scale);
  for (var e = t; e < HD; e += WG) { qsh[e] = round_op(q[h * HD + e] * sc); }
  let last = p.kv_len - 1u;
  let j = k0 + t / PACKS;
  let pk = t % PACKS;
  let groups = HD / 64u;
  let krow = (h / (p.heads / p.kv_heads)) * p.cap + min(j, last);
  let wb = (krow * groups * 2u + pk) * BITS;
  var w: array<u32, 8>;
  for (var i = 0u; i < BITS; i++) { w[i] = cq[wb + i]; }
  let s = cs[krow * groups + pk / 2u];
  let b = cb[krow * groups + pk / 2u];
  workgroupBarrier();
  var dt = 0.0;
  var xs = 0.0;
  for (var e = 0u; e < 32u; e++) {
    let qv = qsh[pk * 32u + e];
    dt += qv * unpack(&w, e);
    xs += qv;
  }
  red[t] = s * dt + b * xs;
  workgroupBarrier();
  var sj = -MAXF;
  if (t < CK) {
    var acc = 0.0;
    for (var i = 0u; i < PACKS; i++) { acc += red[t * PACKS + i]; }
    if (k0 + t <= last) {
      sj = round_out(acc);
      scores[h * p.cap + k0 + t] = sj;
    }
  }
  // The chunk's max by a tree over its CK keys.
  workgroupBarrier();
  if (t < CK) { red[t] = sj; }
  workgroupBarrier();
  for (var n = CK / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red[t] = max(red[t], red[t + n]); }
    workgroupBarrier();
  }
  if (t == 0u) { cmax[h * p.n_chunks + c] = red[0]; }
}

@compute @workgroup_size(WG)
fn qone_out(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  let first = h * p.n_chunks;
  var m = -MAXF;
  for (var i = t; i < live; i += WG) { m = max(m, cmax[first + i]); }
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
