// Attention over a quantized KV cache, as mlx-lm's quantized_scaled_dot_product_attention (unfused, with its
// rounding points; r() rounds to the dtype, ROUND):
//   qs = r(q * r(scale)); s_j = r(qmm(qs, K_j)); masked s_j = dtype min; p = r(softmax_f32(s)); out = r(qmm(p, V)).
// Queries come in chunks of `rows` rows starting at query q0; the scores of a chunk live in `scores`
// [heads, rows, stride] (stride >= kv_len: the cache capacity for few queries, so that the buffer, like every
// workgroup count, does not depend on kv_len and a recorded decode step replays at any position).
// ACC as in qmm.wgsl (0 Metal: f32 sums per run of 32 values; 1 MLX CPU: every op rounded, sequential). Query
// head h reads cache head h / (heads / kv_heads). Loops over the TQ queries of a thread have constant bounds (rows
// past the chunk repeat its last row and are not written), so their accumulators stay in registers.
// Variant 1, pass 1 (qsdpa_scores): a workgroup scales and rounds TQ query rows into shared memory once; then
//   one thread per key j walks the key's packed row (each word loaded once) against those rows.
// Variant 1, pass 2 (qsdpa_softmax): one workgroup per score row: max and sum by tree reductions, then
//   p = r(e^(s - max) * (1 / sum)) in place.
// Variant 1, pass 3 (qsdpa_pv): workgroup (64 dims, KS key slices) per (TQ queries, head, 64 dims, key chunk):
//   each thread dequantizes its dim over a contiguous slice of the chunk's keys once and sums p_j * value for TQ
//   queries; the slices are added in order. With one chunk (splits = 1) the sum is rounded into `out`; with
//   several (long caches, few queries) each chunk writes its f32 partial to `part` [splits, rows, heads * dim]
//   and qsdpa_combine adds the chunks in order and rounds. KS = 1 and one chunk keep the sequential order ACC 1
//   needs. A chunk is ceil(kv_len / splits) keys (chunks past kv_len are empty and add zeros).
// GATE (the pass that writes `out`): y becomes r(r(sigmoid(g)) * y), g = gate[row * gate_stride + h*dim + d], exactly
//   ops' sigmoidGate on the output (HRM's attention gate, the first heads*dim columns of gqkv).

struct Params {
  seq: u32, heads: u32, kv_heads: u32, kv_len: u32, cap: u32, offset: u32, q0: u32, rows: u32, dim: u32, scale: f32,
  splits: u32, stride: u32, gate_stride: u32, zero: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // [heads, seq, dim]
@group(0) @binding(2) var<storage, read> cq: array<u32>;       // K (pass 1) or V (pass 3): [kv_heads, cap, dim*BITS/32]
@group(0) @binding(3) var<storage, read> cs: array<f32>;       // [kv_heads, cap, dim/64]
@group(0) @binding(4) var<storage, read> cb: array<f32>;
@group(0) @binding(5) var<storage, read> mask: array<u32>;      // prefix: token types [kv_len]; explicit: mask [seq, kv_len]
@group(0) @binding(6) var<storage, read_write> scores: array<f32>;  // [heads, rows, stride]
@group(0) @binding(7) var<storage, read_write> out: array<f32>;     // [seq, heads * dim]
@group(0) @binding(8) var<storage, read_write> part: array<f32>;    // [splits, rows, heads * dim]
@group(0) @binding(9) var<storage, read> gate: array<f32>;          // [seq, gate_stride] (GATE)

override BITS: u32 = 4;
override ROUND: u32 = 0;
override ACC: u32 = 0;
override MASK: u32 = 0;    // 0 none, 1 causal, 2 prefix, 3 explicit
override TQ: u32 = 1;      // queries per thread (passes 1 and 3), <= 8, TQ * dim <= 1024
override KS: u32 = 1;      // key slices per workgroup in pass 3, 64 * KS <= 256
override WG: u32 = 64;     // threads of passes 1 and 2 (and of the combine), <= 256
override GATE: bool = false;

const MAXTQ: u32 = 8u;

var<workgroup> red: array<f32, 2048>;   // pass 2: [WG]; pass 3: [KS * 64][MAXTQ]
var<workgroup> qsh: array<f32, 1024>;   // pass 1: [TQ][dim] scaled queries

fn packed_word(i: u32) -> u32 { return cq[i]; }

// #include "quant/packed.inc.wgsl"
// #include "common/gate.inc.wgsl"
// #include "common/mask.inc.wgsl"

// Most negative finite value of the dtype: what mlx-lm writes into masked scores.
fn dtype_min() -> f32 {
  if (ROUND == 1u) { return -3.3895313892515355e38; }
  if (ROUND == 2u) { return -65504.0; }
  return -3.4028234663852886e38;
}

@compute @workgroup_size(WG)
fn qsdpa_scores(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let j = gid.x;
  let h = wid.y;
  let i0 = wid.z * TQ;
  let last = min(TQ, p.rows - i0) - 1u;
  let sc = round_op(p.scale);
  for (var e = lid; e < TQ * p.dim; e += WG) {
    let t = min(e / p.dim, last);
    qsh[e] = round_op(q[(h * p.seq + p.q0 + i0 + t) * p.dim + e % p.dim] * sc);
  }
  workgroupBarrier();
  if (j >= p.kv_len) { return; }
  let kvh = h / (p.heads / p.kv_heads);
  let groups = p.dim / 64u;
  let krow = kvh * p.cap + j;
  let base = krow * groups * 2u * BITS;
  var acc: array<f32, MAXTQ>;
  var dot: array<f32, MAXTQ>;
  var xs: array<f32, MAXTQ>;
  for (var t = 0u; t < TQ; t++) { acc[t] = 0.0; }
  for (var pk = 0u; pk < 2u * groups; pk++) {
    let s = cs[krow * groups + pk / 2u];
    let b = cb[krow * groups + pk / 2u];
    for (var t = 0u; t < TQ; t++) { dot[t] = 0.0; xs[t] = 0.0; }
    var win = pack_window(base + pk * BITS);
    for (var e = 0u; e < 32u; e++) {
      let lv = pack_level(&win, e);
      for (var t = 0u; t < TQ; t++) {
        let qv = qsh[t * p.dim + pk * 32u + e];
        if (ACC == 1u) {
          acc[t] = round_op(acc[t] + round_op(qv * round_op(round_op(s * lv) + b)));
        } else {
          dot[t] += qv * lv;
          xs[t] += qv;
        }
      }
    }
    if (ACC == 0u) {
      for (var t = 0u; t < TQ; t++) { acc[t] += s * dot[t] + b * xs[t]; }
    }
  }
  for (var t = 0u; t < TQ; t++) {
    let i = i0 + t;
    if (t <= last) { scores[(h * p.rows + i) * p.stride + j] = select(dtype_min(), round_out(acc[t]), visible(p.q0 + i, j)); }
  }
}

@compute @workgroup_size(WG)
fn qsdpa_softmax(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let row = (wid.y * p.rows + wid.x) * p.stride;
  var mx = -3.4028234663852886e38;
  for (var j = t; j < p.kv_len; j += WG) { mx = max(mx, scores[row + j]); }
  red[t] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] = max(red[t], red[t + s]); }
    workgroupBarrier();
  }
  mx = red[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var j = t; j < p.kv_len; j += WG) { sum += exp(scores[row + j] - mx); }
  red[t] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] += red[t + s]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];
  for (var j = t; j < p.kv_len; j += WG) { scores[row + j] = round_out(exp(scores[row + j] - mx) * inv); }
}

@compute @workgroup_size(64, KS)
fn qsdpa_pv(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let d = wid.x * 64u + lid.x;
  let i0 = wid.y * TQ;
  let last = min(TQ, p.rows - i0) - 1u;
  let h = wid.z % p.heads;
  let c = wid.z / p.heads;
  let kvh = h / (p.heads / p.kv_heads);
  let groups = p.dim / 64u;
  let wpr = groups * 2u * BITS;
  let chunk = (p.kv_len + p.splits - 1u) / p.splits;
  let c0 = c * chunk;
  let c1 = clamp(p.kv_len, c0, c0 + chunk);   // empty past kv_len
  let per = (c1 - c0 + KS - 1u) / KS;
  let j1 = min(c1, c0 + (lid.y + 1u) * per);
  var acc: array<f32, MAXTQ>;
  for (var t = 0u; t < TQ; t++) { acc[t] = 0.0; }
  if (d < p.dim) {
    for (var j = c0 + lid.y * per; j < j1; j++) {
      let vrow = kvh * p.cap + j;
      let lv = level(vrow * wpr, d);
      let s = cs[vrow * groups + d / 64u];
      let b = cb[vrow * groups + d / 64u];
      if (ACC == 1u) {
        let w = round_op(round_op(s * lv) + b);
        for (var t = 0u; t < TQ; t++) { acc[t] = round_op(acc[t] + round_op(scores[(h * p.rows + i0 + min(t, last)) * p.stride + j] * w)); }
      } else {
        let w = s * lv + b;
        for (var t = 0u; t < TQ; t++) { acc[t] += scores[(h * p.rows + i0 + min(t, last)) * p.stride + j] * w; }
      }
    }
  }
  if (KS > 1u) {
    for (var t = 0u; t < TQ; t++) { red[(lid.y * 64u + lid.x) * MAXTQ + t] = acc[t]; }
    workgroupBarrier();
    if (lid.y != 0u) { return; }
    for (var t = 0u; t < TQ; t++) {
      var total = 0.0;
      for (var k = 0u; k < KS; k++) { total += red[(k * 64u + lid.x) * MAXTQ + t]; }
      acc[t] = total;
    }
  }
  if (d >= p.dim) { return; }
  let width = p.heads * p.dim;
  for (var t = 0u; t < TQ; t++) {
    if (t <= last) {
      let at = (i0 + t) * width + h * p.dim + d;
      if (p.splits == 1u) {
        out[p.q0 * width + at] = gated(round_out(acc[t]), p.q0 + i0 + t, h * p.dim + d);
      } else {
        part[c * p.rows * width + at] = acc[t];
      }
    }
  }
}

@compute @workgroup_size(WG)
fn qsdpa_combine(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  let n = p.rows * p.heads * p.dim;
  if (i >= n) { return; }
  var total = 0.0;
  for (var c = 0u; c < p.splits; c++) { total += part[c * n + i]; }
  out[p.q0 * p.heads * p.dim + i] = gated(round_out(total), p.q0 + i / (p.heads * p.dim), i % (p.heads * p.dim));
}
