// The values half of qsdpa_one.wgsl (see there), shared through `// #include "attention/qsdpa_one_values.inc.wgsl"`
// after attention/qsdpa_one.inc.wgsl by qsdpa_one.wgsl (qone_out, after qone_scores) and qsdpa_one_append.wgsl
// (qone_fused: the scores, the values and the merge in one dispatch): the softmax sum, a chunk's weighted value
// sums and the merge, one set of functions so that both forms give the same bits. The includer declares `override
// V_BITS: u32`, `override GATE: bool`, bindings `part: array<vec4<f32>>` ([H, n_chunks, HD / 4]), `out: array<f32>`
// and `done: array<atomic<u32>>`, and the functions `v_word(i) -> u32`, `v_scale(g) -> f32`, `v_bias(g) -> f32`
// (its V binding), `soft_score(h, j) -> f32` (score j of head h) and `gate_logits(h, u) -> vec4<f32>` (the gate
// logits of head h's dims 4 u .. 4 u + 3; zeros without GATE). Never compiled on its own.

override SOFT: u32 = 64;   // threads of the softmax sum: qsdpa_softmax's WG (64, or 256 from 1024 keys of capacity)

// A thread per (E dims, slice); KEYS = CK / SL keys a slice of a chunk (4 at every HD).
const E: u32 = 8u;
const KEYS: u32 = 4u;
override DG: u32 = HD / E;
override SL: u32 = WG / DG;
const U: u32 = 8u;         // softmax scores a thread loads before it adds them
const UNROLL: u32 = 8u;    // chunk sums a merging thread loads before it adds them

var<workgroup> red_l: array<f32, WG>;
var<workgroup> red4: array<vec4<f32>, WG * E / 4u>;   // the slices' sums [SL, HD / 4], then the merge's rows
var<workgroup> fold_last: u32;

// Scores j0, j0 + SOFT, ..., U of them (past kv_len: the last key's, never added).
fn soft_batch(h: u32, j0: u32) -> array<f32, U> {
  var s: array<f32, U>;
  for (var i = 0u; i < U; i++) { s[i] = soft_score(h, min(j0 + i * SOFT, p.kv_len - 1u)); }
  return s;
}

// 1 / L of head h's softmax, L = sum e^(s_j - big) as qsdpa_softmax sums it (SOFT threads, strided, then a tree), so
// the weights are the passes' bit for bit. `first`: the thread's first soft_batch, loaded earlier. Every thread
// calls it (barriers).
fn softmax_inv(h: u32, big: f32, t: u32, first: array<f32, U>) -> f32 {
  var sv = first;
  var l = 0.0;
  if (t < SOFT) {
    for (var j0 = t; j0 < p.kv_len; j0 += U * SOFT) {
      if (j0 != t) { sv = soft_batch(h, j0); }
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
  return 1.0 / red_l[0];
}

// The words, scale and bias of values d0 .. d0 + E - 1 of a V row: E * V_BITS bits from bit d0 * V_BITS of the
// row's stream, within two words at the bits a cache takes (2, 3, 4, 5, 6, 8). Kept packed until the weights are
// known (16 registers for a thread's keys, not 32).
struct VPack { lo: u32, hi: u32, s: f32, b: f32 }

fn vpack(vrow: u32, d0: u32) -> VPack {
  let groups = HD / 64u;
  let wpr = groups * 2u * V_BITS;
  let w0 = vrow * wpr + d0 * V_BITS / 32u;
  let g = vrow * groups + d0 / 64u;
  return VPack(v_word(w0), v_word(min(w0 + 1u, (vrow + 1u) * wpr - 1u)), v_scale(g), v_bias(g));
}

// Value d0 + e of a VPack: s * level + b.
fn value(v: VPack, d0: u32, e: u32) -> f32 {
  let bit = d0 * V_BITS % 32u + e * V_BITS;
  let sh = bit & 31u;
  var lv = select(v.lo, v.hi, bit >= 32u) >> sh;
  if (sh + V_BITS > 32u) { lv |= v.hi << (32u - sh); }   // only from lo, into hi
  return v.s * f32(lv & ((1u << V_BITS) - 1u)) + v.b;
}

// The key of a thread's slot i in chunk c: c * CK + i * SL + sl (past kv_len the last key's, never added).
fn slot_key(c: u32, i: u32, sl: u32) -> u32 { return min(c * CK + i * SL + sl, p.kv_len - 1u); }

// The V row of key j of head h.
fn v_row(h: u32, j: u32) -> u32 { return (h / (p.heads / p.kv_heads)) * p.cap + j; }

// The value packs of a thread's keys of chunk c (dims d0 ..), loaded before they are needed.
fn chunk_vpacks(h: u32, c: u32, d0: u32, sl: u32) -> array<VPack, KEYS> {
  var v: array<VPack, KEYS>;
  for (var i = 0u; i < KEYS; i++) { v[i] = vpack(v_row(h, slot_key(c, i, sl)), d0); }
  return v;
}

// The scores of a thread's keys of chunk c.
fn chunk_sj(h: u32, c: u32, sl: u32) -> array<f32, KEYS> {
  var s: array<f32, KEYS>;
  for (var i = 0u; i < KEYS; i++) { s[i] = soft_score(h, slot_key(c, i, sl)); }
  return s;
}

// Chunk c of head h: each thread's weighted values p_j = r(e^(s_j - big) inv) over its keys in key order, the slices
// added in order into the chunk's sums in `part`; then the head's last chunk to finish (an atomic count per head,
// `done`) merges and sets the count back to 0. Every thread calls it (barriers).
fn chunk_values(h: u32, c: u32, live: u32, t: u32, v: array<VPack, KEYS>, sj: array<f32, KEYS>, big: f32, inv: f32) {
  let d0 = (t % DG) * E;
  let sl = t / DG;
  var acc: array<f32, E>;
  for (var i = 0u; i < KEYS; i++) {
    if (c * CK + i * SL + sl < p.kv_len) {
      let pj = round_out(exp(sj[i] - big) * inv);
      for (var e = 0u; e < E; e++) { acc[e] += pj * value(v[i], d0, e); }
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

// Head h's output from its live chunks' sums: row r (of WG / (HD / 4) rows, 4 dims a thread) adds the chunks r,
// r + rows, ... in order, then the rows are added in order; rounded, gated. The gate is loaded first, to arrive
// meanwhile.
fn merge(h: u32, live: u32, t: u32) {
  let units = HD / 4u;
  let rows = WG / units;
  let u = t % units;
  let r = t / units;
  var g = vec4<f32>(0.0);
  if (r == 0u) { g = gate_logits(h, u); }
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
