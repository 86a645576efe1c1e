// Attention for one query per head that sees every key of a quantized cache (decode, S = 1), with mlx-lm's rounding
// points as qsdpa.wgsl (r() rounds to the dtype, ROUND; Metal's matmul order, f32 sums per run of 32 values):
//   qs = r(q * r(scale)); s_j = r(qmm(qs, K_j)); p = r(softmax_f32(s)); out = r(qmm(p, V)).
// qsdpa.wgsl's decode passes give a score row one workgroup per head and walk a key per thread, a long chain of
// loads on a GPU with far more cores than heads. Two dispatches, both a workgroup per (chunk of CK = 32 * WG / HD
// keys, head):
//  - qone_scores: a thread per (key, pack of 32 values) loads the pack's BITS words up front and sums
//    s * (q . levels) + b * (sum q) as qsdpa_scores does; a key's packs are added in order. Writes r(s_j) to
//    `scores` [H, cap] and the chunk's largest score after them. (The scores are attention/qsdpa_one.inc.wgsl,
//    shared with qsdpa_one_append.wgsl, which appends the new key and value first.)
//  - qone_out: M = the largest chunk max (every thread takes them all: a max is exact in any order); L = sum
//    e^(s_j - M) over all keys, summed as qsdpa_softmax sums (SOFT threads, strided, then a tree), so the weights
//    p_j = r(e^(s_j - M) * (1 / L)) are the passes' bit for bit (a sum merged from chunks' (max, sum) moved L by
//    several ulps of the GPU's exp, and every weight with it: one flipped f16 weight is ~10 ulps of a small output).
//    Every workgroup sums L itself (kv_len loads, U of them in flight per thread); none waits for another. Then the
//    chunk's values: a thread per (E = 8 dims, slice sl) adds p_j (s * level + b) over keys sl, sl + SL, sl + 2 SL,
//    sl + 3 SL of the chunk in that order; the SL slices are added in order into the chunk's sums in `part`. The
//    head's last chunk to finish (an atomic count per head, `done`, as attention/one_merge.inc.wgsl's fold) adds
//    the live chunks' sums: row r (of WG / (HD / 4) rows, 4 dims a thread) the chunks r, r + rows, ... in order,
//    then the rows in order; rounds, gates as ops' sigmoidGate (bit for bit) and sets the count back to 0. The
//    value sum's order is fixed by HD and kv_len alone.
// Every load that waits on nothing (the first U softmax scores, the words of the thread's values and their scores,
// then the chunk maxes) is issued before the first barrier, and no barrier waits on a tree that need not be one.
// The values as a workgroup per (32 dims, head) walking every key took 13.6 us a call at 641 keys on an H200 (48
// workgroups, most of the time waiting on loads one after another). (Before that, values split over key chunks
// with a third, merging dispatch measured slower than it: 38 us against 24 at 640 keys, an earlier build.)
// The chunk count comes from the reach (qsdpa_one.ts, reach.ts: at least kv_len, at most the capacity) and kv_len
// is a uniform, so a recorded decode step replays at any position of its reach. Keys past kv_len in a chunk read
// the last key and are left out; chunks past it return at once.

@group(0) @binding(1) var<storage, read> q: array<f32>;                  // [H, 1, HD]
@group(0) @binding(2) var<storage, read> cq: array<u32>;                 // K (scores) or V (out): [kv_heads, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read> cs: array<f32>;                 // [kv_heads, cap, HD/64]
@group(0) @binding(4) var<storage, read> cb: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;  // [H, n_chunks, HD/4]: each chunk's value sums
@group(0) @binding(7) var<storage, read_write> out: array<f32>;         // [1, H * HD]
@group(0) @binding(8) var<storage, read> gate: array<f32>;              // [1, >= H * HD]: columns [0, H * HD) (GATE)
// Per head: live chunks of this dispatch that have finished; 0 between dispatches (common/counters.ts).
@group(0) @binding(9) var<storage, read_write> done: array<atomic<u32>>;

override GATE: bool = false;
override SOFT: u32 = 64;   // threads of qone_out's softmax sum: qsdpa_softmax's WG (64, or 256 from 1024 keys of capacity)

// qone_out: a thread per (E dims, slice); KEYS = CK / SL keys a slice (4 at every HD).
const E: u32 = 8u;
const KEYS: u32 = 4u;
override DG: u32 = HD / E;
override SL: u32 = WG / DG;
const U: u32 = 16u;        // softmax scores (and chunk maxes) a thread loads before it adds them: below 1024
                           // keys, SOFT = 64 threads load every score and the workgroup every chunk max at once
const UNROLL: u32 = 8u;    // chunk sums a merging thread loads before it adds them

var<workgroup> red_l: array<f32, WG>;
var<workgroup> red4: array<vec4<f32>, WG * E / 4u>;   // the slices' sums [SL, HD / 4], then the merge's rows
var<workgroup> fold_last: u32;

// #include "attention/qsdpa_one.inc.wgsl"
// #include "common/gate.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return q[h * HD + e]; }

@compute @workgroup_size(WG)
fn qone_scores(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let kp = key_pack(wid.x, wid.y, t);
  load_query(wid.y, t);
  chunk_scores(wid, t, kp);
}

// Scores j0, j0 + SOFT, ..., U of them (past kv_len: the last key's, never added).
fn soft_batch(row: u32, j0: u32) -> array<f32, U> {
  var s: array<f32, U>;
  for (var i = 0u; i < U; i++) { s[i] = scores[row + min(j0 + i * SOFT, p.kv_len - 1u)]; }
  return s;
}

// The words, scale and bias of values d0 .. d0 + E - 1 of V row `vrow`: E * BITS bits from bit d0 * BITS of the
// row's stream, within two words at the bits a cache takes (2, 3, 4, 5, 6, 8). Kept packed until the weights are
// known (16 registers for a thread's keys, not 32).
struct VPack { lo: u32, hi: u32, s: f32, b: f32 }

fn vpack(vrow: u32, d0: u32) -> VPack {
  let groups = HD / 64u;
  let wpr = groups * 2u * BITS;
  let w0 = vrow * wpr + d0 * BITS / 32u;
  let g = vrow * groups + d0 / 64u;
  return VPack(cq[w0], cq[min(w0 + 1u, (vrow + 1u) * wpr - 1u)], cs[g], cb[g]);
}

// Value d0 + e of a VPack: s * level + b.
fn value(v: VPack, d0: u32, e: u32) -> f32 {
  let bit = d0 * BITS % 32u + e * BITS;
  let sh = bit & 31u;
  var lv = select(v.lo, v.hi, bit >= 32u) >> sh;
  if (sh + BITS > 32u) { lv |= v.hi << (32u - sh); }   // only from lo, into hi
  return v.s * f32(lv & ((1u << BITS) - 1u)) + v.b;
}

@compute @workgroup_size(WG)
fn qone_out(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  if (c >= live) { return; }   // the same for the whole workgroup
  let row = h * p.cap;
  let last = p.kv_len - 1u;
  var sv = soft_batch(row, t);
  let d0 = (t % DG) * E;
  let sl = t / DG;
  let vrow0 = (h / (p.heads / p.kv_heads)) * p.cap;
  var vals: array<VPack, KEYS>;
  var sj: array<f32, KEYS>;
  for (var i = 0u; i < KEYS; i++) {
    let j = min(c * CK + i * SL + sl, last);
    sj[i] = scores[row + j];
    vals[i] = vpack(vrow0 + j, d0);
  }
  // M by every thread from the chunk maxes, U loads at a time (a max is exact in any order: no tree to wait on).
  var big = -MAXF;
  for (var i0 = 0u; i0 < live; i0 += U) {
    var cm: array<f32, U>;
    for (var i = 0u; i < U; i++) { cm[i] = scores[cmax_at(h, min(i0 + i, live - 1u))]; }
    for (var i = 0u; i < U; i++) { big = max(big, cm[i]); }
  }
  var l = 0.0;
  if (t < SOFT) {
    for (var j0 = t; j0 < p.kv_len; j0 += U * SOFT) {
      if (j0 != t) { sv = soft_batch(row, j0); }
      for (var i = 0u; i < U; i++) {
        if (j0 + i * SOFT < p.kv_len) { l += exp(sv[i] - big); }
      }
    }
  }
  red_l[t] = l;
  workgroupBarrier();
  for (var n = SOFT / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red_l[t] += red_l[t + n]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red_l[0];
  var acc: array<f32, E>;
  for (var i = 0u; i < KEYS; i++) {
    if (c * CK + i * SL + sl <= last) {
      let pj = round_out(exp(sj[i] - big) * inv);
      for (var e = 0u; e < E; e++) { acc[e] += pj * value(vals[i], d0, e); }
    }
  }
  let units = HD / 4u;
  let at = sl * units + d0 / 4u;
  red4[at] = vec4<f32>(acc[0], acc[1], acc[2], acc[3]);
  red4[at + 1u] = vec4<f32>(acc[4], acc[5], acc[6], acc[7]);
  workgroupBarrier();
  if (t < units) {
    var o = vec4<f32>(0.0);
    for (var k = 0u; k < SL; k++) { o += red4[k * units + t]; }
    part[(h * p.n_chunks + c) * units + t] = o;
  }
  storageBarrier();   // the chunk's sums before its count
  if (t == 0u) { fold_last = select(0u, 1u, atomicAdd(&done[h], 1u) == live - 1u); }
  if (workgroupUniformLoad(&fold_last) == 0u) { return; }
  storageBarrier();   // the count before the other chunks' sums are read
  merge(h, live, t);
  if (t == 0u) { atomicStore(&done[h], 0u); }
}

// Head h's output from its live chunks' sums (see the header); the gate is loaded first, to arrive meanwhile.
fn merge(h: u32, live: u32, t: u32) {
  let units = HD / 4u;
  let rows = WG / units;
  let u = t % units;
  let r = t / units;
  var g = vec4<f32>(0.0);
  if (r == 0u) { g = gate4(h * HD + 4u * u); }
  var o = vec4<f32>(0.0);
  for (var c0 = r; c0 < live; c0 += UNROLL * rows) {
    var oc: array<vec4<f32>, UNROLL>;
    for (var j = 0u; j < UNROLL; j++) { oc[j] = part[(h * p.n_chunks + min(c0 + j * rows, live - 1u)) * units + u]; }
    for (var j = 0u; j < UNROLL; j++) {
      if (c0 + j * rows < live) { o += oc[j]; }
    }
  }
  red4[t] = o;   // row r's dims 4u .. 4u + 3 (t = r * units + u)
  workgroupBarrier();
  if (r == 0u) {
    var y = vec4<f32>(0.0);
    for (var k = 0u; k < rows; k++) { y += red4[k * units + u]; }
    for (var j = 0u; j < 4u; j++) { out[h * HD + 4u * u + j] = gate_by(round_out(y[j]), g[j]); }
  }
}
