// Attention for few queries over long caches (flash-decoding): the key axis is split into n_chunks chunks, one
// workgroup per (chunk, head, query) computes that chunk's running max m, sum l and unnormalised accumulator
// o[D] in f32 (sdpa_split); sdpa_combine then merges the chunks of each (query, head):
// M = max m_c, L = sum l_c e^(m_c - M), out = round(sum o_c e^(m_c - M) / L), or 0 when no key is visible.
// Same math, masks, K/V storage and gate as sdpa_prefill.wgsl (see there).
// n_chunks is fixed by the cache capacity, not kv_len, so that one recorded decode step replays at any position
// with only kv_len / offset patched: each chunk takes ceil(kv_len / n_chunks) keys rounded up to a multiple of WG,
// and chunks past kv_len report l = 0, which the combine skips.
// Variant 1, pass 1 (sdpa_split): keys in blocks of WG; PARTS neighbouring threads share each key's dot product
//   (contiguous slices of its row: coalesced reads), thread t then sums key b + t's parts, every thread reads the
//   block's max, writes its own p = e^(s - m), then owns dims t + r*WG of o. PARTS = 1 is one thread per key
//   (uncoalesced: 64 threads read 64 rows at once); the wrapper takes the largest of 8, 4, 2 dividing D.
// Variant 1, pass 2 (sdpa_combine): a workgroup per (query, head); every thread reads all (m_c, l_c) and merges
//   its dims (t + r*WG) over the chunks, then rounds once (ROUND).

struct Params { seq: u32, heads: u32, kv_len: u32, cap: u32, offset: u32, scale: f32, n_chunks: u32, gate_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // [H, S, D]
@group(0) @binding(2) var<storage, read> k: array<u32>;        // [H, cap, D] f32 bits or packed bf16
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> part_o: array<f32>;  // [S, H, n_chunks, D]
@group(0) @binding(6) var<storage, read_write> part_ml: array<f32>; // [S, H, n_chunks, 2]
@group(0) @binding(7) var<storage, read_write> out: array<f32>;     // [S, H * D] (sdpa_combine)
@group(0) @binding(8) var<storage, read> gate: array<f32>;          // [S, gate_stride], block [0, H * D) (GATE)

override HD: u32 = 128;
override WG: u32 = 64;
override KV_BF16: bool = false;
override MASK: u32 = 0;
override ROUND: u32 = 0;
override GATE: bool = false;
// Threads per key in sdpa_split's scores (divides HD and WG).
override PARTS: u32 = 1;

const MAXC: u32 = 8u;          // HD <= WG * MAXC
const NEG: f32 = -1.0e30;

var<workgroup> qs: array<f32, HD>;
var<workgroup> sc: array<f32, WG>;
var<workgroup> pr: array<f32, WG>;
var<workgroup> scp: array<f32, WG * PARTS>;

// #include "common/gate.inc.wgsl"
// #include "common/mask.inc.wgsl"
// #include "attention/kv_load.inc.wgsl"

@compute @workgroup_size(WG)
fn sdpa_split(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let chunk = wid.x;
  let h = wid.y;
  let row = wid.z;
  let nc = (HD + WG - 1u) / WG;
  for (var d = t; d < HD; d += WG) { qs[d] = q[(h * p.seq + row) * HD + d] * p.scale; }
  var k_end = p.kv_len;
  if (MASK == 1u) { k_end = min(k_end, p.offset + row + 1u); }
  let len = ((p.kv_len + p.n_chunks - 1u) / p.n_chunks + WG - 1u) / WG * WG;
  let c0 = chunk * len;
  let c1 = min(c0 + len, k_end);

  var m = NEG;
  var l = 0.0;
  var acc: array<f32, MAXC>;
  let per = HD / PARTS;            // dims of one key each of its PARTS threads multiplies
  let part = t % PARTS;
  for (var b = c0; b < c1; b += WG) {
    workgroupBarrier();   // q loaded / last block's readers of sc, pr and scp done
    // PARTS neighbouring threads share a key and read contiguous slices of its row (coalesced loads).
    for (var i = 0u; i < PARTS; i++) {
      let kk = t / PARTS + i * (WG / PARTS);
      let jj = b + kk;
      var d = 0.0;
      if (jj < c1) {
        let base = (h * p.cap + jj) * HD + part * per;
        for (var x = 0u; x < per; x++) { d += qs[part * per + x] * k_at(base + x); }
      }
      scp[kk * PARTS + part] = d;
    }
    workgroupBarrier();
    let j = b + t;
    var s = NEG;
    if (j < c1 && visible(row, j)) {
      var d = 0.0;
      for (var i = 0u; i < PARTS; i++) { d += scp[t * PARTS + i]; }
      s = d;
    }
    sc[t] = s;
    workgroupBarrier();
    var bm = NEG;
    for (var c = 0u; c < WG; c++) { bm = max(bm, sc[c]); }
    let m_new = max(m, bm);
    var pj = 0.0;
    if (s > NEG) { pj = exp(s - m_new); }
    pr[t] = pj;
    workgroupBarrier();
    if (bm > NEG) {
      let alpha = exp(m - m_new);
      l *= alpha;
      for (var r = 0u; r < nc; r++) { acc[r] *= alpha; }
      let cnt = min(WG, c1 - b);
      for (var c = 0u; c < cnt; c++) {
        let w = pr[c];
        if (w > 0.0) {
          l += w;
          let base = (h * p.cap + b + c) * HD;
          for (var r = 0u; r < nc; r++) {
            let d = t + r * WG;
            if (d < HD) { acc[r] += w * v_at(base + d); }
          }
        }
      }
      m = m_new;
    }
  }
  let slot = (row * p.heads + h) * p.n_chunks + chunk;
  for (var r = 0u; r < nc; r++) {
    let d = t + r * WG;
    if (d < HD) { part_o[slot * HD + d] = acc[r]; }
  }
  if (t == 0u) { part_ml[2u * slot] = m; part_ml[2u * slot + 1u] = l; }
}

@compute @workgroup_size(WG)
fn sdpa_combine(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.x;
  let row = wid.y;
  let first = (row * p.heads + h) * p.n_chunks;
  var mx = NEG;
  for (var c = 0u; c < p.n_chunks; c++) {
    if (part_ml[2u * (first + c) + 1u] > 0.0) { mx = max(mx, part_ml[2u * (first + c)]); }
  }
  var l = 0.0;
  for (var c = 0u; c < p.n_chunks; c++) {
    let lc = part_ml[2u * (first + c) + 1u];
    if (lc > 0.0) { l += lc * exp(part_ml[2u * (first + c)] - mx); }
  }
  for (var d = t; d < HD; d += WG) {
    var o = 0.0;
    for (var c = 0u; c < p.n_chunks; c++) {
      let lc = part_ml[2u * (first + c) + 1u];
      if (lc > 0.0) { o += part_o[(first + c) * HD + d] * exp(part_ml[2u * (first + c)] - mx); }
    }
    var y = 0.0;
    if (l > 0.0) { y = round_out(o / l); }
    out[(row * p.heads + h) * HD + d] = gated(y, row, h * HD + d);
  }
}
