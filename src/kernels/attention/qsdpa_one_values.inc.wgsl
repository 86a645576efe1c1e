// The values half of qsdpa_one.wgsl (see there), shared through `// #include "attention/qsdpa_one_values.inc.wgsl"`
// after attention/qsdpa_one.inc.wgsl by qsdpa_one.wgsl (qone_out: a workgroup per chunk, merged by the head's last)
// and qsdpa_one_append.wgsl (qone_scores_append_fold: the head's last chunk to finish its scores runs every chunk's
// values): the softmax's M and L, a chunk's weighted value sums and the loads they wait on, one set of functions so
// that both forms give the same bits. The includer declares `override V_BITS: u32` and `fn key_vpack(h, j, d0) ->
// VPack` (the VPack of values d0.. of key j of head h, normally `vpack(v_row(h, j), d0)`), and `fn v_word(i) ->
// u32`, `fn v_scale(g) -> f32`, `fn v_bias(g) -> f32` (its V binding). Never compiled on its own.

override SOFT: u32 = 64;   // threads of the softmax sum: qsdpa_softmax's WG (64, or 256 from 1024 keys of capacity)

// A thread per (E dims, slice); KEYS = CK / SL keys a slice of a chunk (4 at every HD).
const E: u32 = 8u;
const KEYS: u32 = 4u;
override DG: u32 = HD / E;
override SL: u32 = WG / DG;
const U: u32 = 8u;         // softmax scores a thread loads before it adds them

var<workgroup> red_l: array<f32, WG>;
var<workgroup> red4: array<vec4<f32>, WG * E / 4u>;   // the slices' sums [SL, HD / 4], then the merge's rows

// V row of key j of head h (a cache head per heads / kv_heads query heads).
fn v_row(h: u32, j: u32) -> u32 { return (h / (p.heads / p.kv_heads)) * p.cap + j; }

// Scores j0, j0 + SOFT, ..., U of them (past kv_len: the last key's, never added).
fn soft_batch(row: u32, j0: u32) -> array<f32, U> {
  var s: array<f32, U>;
  for (var i = 0u; i < U; i++) { s[i] = score(row + min(j0 + i * SOFT, p.kv_len - 1u)); }
  return s;
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

// A thread's keys of chunk c (c * CK + i * SL + sl, i < KEYS; past kv_len the last key's, never added): their
// values' packs and scores, loaded before they are needed.
struct ChunkVals { v: array<VPack, KEYS>, s: array<f32, KEYS> }

fn chunk_vals(h: u32, c: u32, d0: u32, sl: u32) -> ChunkVals {
  var cv: ChunkVals;
  for (var i = 0u; i < KEYS; i++) {
    let j = min(c * CK + i * SL + sl, p.kv_len - 1u);
    cv.s[i] = score(score_at(h, j));
    cv.v[i] = key_vpack(h, j, d0);
  }
  return cv;
}

// (M, 1 / L) of head h's softmax: M the largest chunk max (every thread takes them all, U loads at a time: a max is
// exact in any order, no tree to wait on); L = sum e^(s_j - M) as qsdpa_softmax sums it (SOFT threads, strided,
// then a tree), so the weights are the passes' bit for bit. `sv`: the thread's first soft_batch, loaded earlier.
// Every thread calls it (barriers).
fn softmax_stats(h: u32, live: u32, t: u32, first: array<f32, U>) -> vec2<f32> {
  var big = -MAXF;
  for (var i0 = 0u; i0 < live; i0 += U) {
    var cm: array<f32, U>;
    for (var i = 0u; i < U; i++) { cm[i] = score(cmax_at(h, min(i0 + i, live - 1u))); }
    for (var i = 0u; i < U; i++) { big = max(big, cm[i]); }
  }
  var sv = first;
  var l = 0.0;
  if (t < SOFT) {
    for (var j0 = t; j0 < p.kv_len; j0 += U * SOFT) {
      if (j0 != t) { sv = soft_batch(score_at(h, 0u), j0); }
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
  return vec2<f32>(big, 1.0 / red_l[0]);
}

// Chunk c's weighted values for dims d0 .. d0 + E - 1 over the thread's keys, in key order, into red4 [SL, HD / 4]
// (the caller adds the slices in order after a barrier).
fn chunk_sums(cv: ChunkVals, c: u32, d0: u32, sl: u32, stats: vec2<f32>) {
  var acc: array<f32, E>;
  for (var i = 0u; i < KEYS; i++) {
    if (c * CK + i * SL + sl < p.kv_len) {
      let pj = round_out(exp(cv.s[i] - stats.x) * stats.y);
      for (var e = 0u; e < E; e++) { acc[e] += pj * value(cv.v[i], d0, e); }
    }
  }
  let at = sl * (HD / 4u) + d0 / 4u;
  red4[at] = vec4<f32>(acc[0], acc[1], acc[2], acc[3]);
  red4[at + 1u] = vec4<f32>(acc[4], acc[5], acc[6], acc[7]);
}

// Dims 4 u .. 4 u + 3 of the chunk whose sums chunk_sums left in red4: its slices added in order.
fn slice_sum(u: u32) -> vec4<f32> {
  var o = vec4<f32>(0.0);
  for (var k = 0u; k < SL; k++) { o += red4[k * (HD / 4u) + u]; }
  return o;
}
