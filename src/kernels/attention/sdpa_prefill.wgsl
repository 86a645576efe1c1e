// Fused attention for many queries: out[s, h*D + :] = softmax(scale * q[h, s] . k[h, j] + mask) v[h, j] over the
// first kv_len cached keys, with scores, running max and sum in f32 (online softmax) and one rounding at the output
// (ROUND), as MLX's Metal SDPA. Masked keys contribute nothing; a query with no visible key outputs 0.
// Variant 1 (sdpa_prefill): a workgroup per (query block of BQ, head), TPQ threads per query. Keys stream in
// tiles of BK through shared memory: K tile -> scores of the tile (each thread a few full dot products) -> V tile
// -> every thread updates its query's max/sum and its strided slice of the accumulator (dims lane + r*TPQ).
// Shared memory: (BQ + BK) * (D + 1) + BQ * BK floats; rows padded by one float so the lanes of a query, which
// read different key rows at the same column, hit different banks.
// K and V are bound as u32 words: f32 bits, or two bf16 per word (KV_BF16) as the packed cache stores them.
// GATE: the stored value y becomes r(r(sigmoid(g)) * y), g = gate[row * gate_stride + h*D + d], exactly ops'
// sigmoidGate on the output (HRM's attention gate, the first H*D columns of gqkv), without its own dispatch.
// Masks (MASK): 0 none, 1 causal (key j visible to query i when j <= offset + i), 2 prefix (causal, or both
// token types 1; types read from `mask`), 3 explicit (mask[i * kv_len + j] != 0).

struct Params { seq: u32, heads: u32, kv_len: u32, cap: u32, offset: u32, scale: f32, gate_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // [H, S, D]
@group(0) @binding(2) var<storage, read> k: array<u32>;        // [H, cap, D]
@group(0) @binding(3) var<storage, read> v: array<u32>;        // [H, cap, D]
@group(0) @binding(4) var<storage, read> mask: array<u32>;     // see MASK
@group(0) @binding(5) var<storage, read_write> out: array<f32>; // [S, H * D]
@group(0) @binding(6) var<storage, read> gate: array<f32>;      // [S, gate_stride] (GATE)

override HD: u32 = 128;
override WGS: u32 = 64;          // threads per workgroup
override BQ: u32 = 8;            // queries per workgroup
override TPQ: u32 = WGS / BQ;    // threads per query
override BK: u32 = 16;
override KV_BF16: bool = false;
override MASK: u32 = 0;
override ROUND: u32 = 0;
override GATE: bool = false;

const MAXC: u32 = 32u;          // accumulator slots per thread: HD <= TPQ * MAXC
const NEG: f32 = -1.0e30;       // "no score": WGSL does not promise infinities

var<workgroup> qs: array<f32, BQ * (HD + 1u)>;
var<workgroup> kv: array<f32, BK * (HD + 1u)>;
var<workgroup> sc: array<f32, BQ * BK>;

// #include "common/gate.inc.wgsl"
// #include "common/mask.inc.wgsl"
// #include "attention/kv_load.inc.wgsl"

@compute @workgroup_size(WGS)
fn sdpa_prefill(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.y;
  let q0 = wid.x * BQ;
  let qi = t / TPQ;
  let lane = t % TPQ;
  let row = q0 + qi;
  let live = row < p.seq;
  let KS = HD + 1u;
  let nthreads = WGS;
  let nc = (HD + TPQ - 1u) / TPQ;

  for (var e = t; e < BQ * HD; e += nthreads) {
    let r = q0 + e / HD;
    var x = 0.0;
    if (r < p.seq) { x = q[(h * p.seq + r) * HD + e % HD] * p.scale; }
    qs[(e / HD) * KS + e % HD] = x;
  }
  // Causal: no query of this block sees past offset + its last query.
  var k_end = p.kv_len;
  if (MASK == 1u) { k_end = min(k_end, p.offset + min(q0 + BQ, p.seq)); }

  var m = NEG;
  var l = 0.0;
  var acc: array<f32, MAXC>;
  for (var k0 = 0u; k0 < k_end; k0 += BK) {
    workgroupBarrier();   // Q loaded / last tile's readers of kv and sc done
    for (var e = t; e < BK * HD; e += nthreads) {
      let j = k0 + e / HD;
      var x = 0.0;
      if (j < k_end) { x = k_at((h * p.cap + j) * HD + e % HD); }
      kv[(e / HD) * KS + e % HD] = x;
    }
    workgroupBarrier();
    for (var c = lane; c < BK; c += TPQ) {
      let j = k0 + c;
      var s = NEG;
      if (live && j < k_end && visible(row, j)) {
        var d = 0.0;
        for (var x = 0u; x < HD; x++) { d += qs[qi * KS + x] * kv[c * KS + x]; }
        s = d;
      }
      sc[qi * BK + c] = s;
    }
    workgroupBarrier();
    for (var e = t; e < BK * HD; e += nthreads) {
      let j = k0 + e / HD;
      var x = 0.0;
      if (j < k_end) { x = v_at((h * p.cap + j) * HD + e % HD); }
      kv[(e / HD) * KS + e % HD] = x;
    }
    workgroupBarrier();
    var bm = NEG;
    for (var c = 0u; c < BK; c++) { bm = max(bm, sc[qi * BK + c]); }
    if (bm > NEG) {
      let m_new = max(m, bm);
      let alpha = exp(m - m_new);
      l *= alpha;
      for (var r = 0u; r < nc; r++) { acc[r] *= alpha; }
      for (var c = 0u; c < BK; c++) {
        let s = sc[qi * BK + c];
        if (s > NEG) {
          let pj = exp(s - m_new);
          l += pj;
          for (var r = 0u; r < nc; r++) {
            let d = lane + r * TPQ;
            if (d < HD) { acc[r] += pj * kv[c * KS + d]; }
          }
        }
      }
      m = m_new;
    }
  }
  if (!live) { return; }
  for (var r = 0u; r < nc; r++) {
    let d = lane + r * TPQ;
    if (d < HD) {
      var o = 0.0;
      if (l > 0.0) { o = round_out(acc[r] / l); }
      out[(row * p.heads + h) * HD + d] = gated(o, row, h * HD + d);
    }
  }
}
