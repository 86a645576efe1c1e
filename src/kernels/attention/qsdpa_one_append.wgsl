// Decode's cache append fused into qsdpa_one.wgsl's scores, for two quantized cache sides (the model's decode step
// then has no rope_append dispatch): qone_scores_append is qone_scores (attention/qsdpa_one.inc.wgsl) whose query
// is gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's),
// and whose workgroup holding that position first quantizes the new key (RoPE'd) and value of its head into the
// cache, bit for bit as rope_append (the same element and group code, attention/quant_group.inc.wgsl): 2 HD / 64
// groups, four at a time over the 256 threads (one round at HD 64 and 128, two at 256). storageBarrier, then its
// scores read the new key back (no other workgroup reads that position; its other keys' packs were loaded first,
// key_pack); qsdpa_one.wgsl's qone_out follows unchanged and reads the new value. Cache heads = query heads: gqkv
// holds a key per query head.
// qone_fused is the whole step in one dispatch, a workgroup per (chunk, head) as qone_out: every workgroup
// quantizes the new key itself (only the chunk holding it writes the key and value to the cache), computes every
// score of its head (qone_scores' code; WG keys a round, PACKS chunks, the next round's packs loaded first) into
// workgroup memory, and from them M, L and its chunk's values as qone_out (attention/qsdpa_one_values.inc.wgsl),
// merged by the head's last chunk to finish: the bits of qone_scores_append + qone_out, without the dispatch
// boundary between them and without a second read of the scores. Each score is computed by every chunk of its
// head (K read live times from L2); a workgroup holds the head's scores (SCAP >= cap floats), so qsdpa_one.ts
// takes this form where that and its 10 storage bindings fit the device.
@group(0) @binding(1) var<storage, read> src: array<f32>;               // gqkv [1, 4 * width], width = H * HD
@group(0) @binding(2) var<storage, read_write> cq: array<u32>;          // K: [H, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read_write> cs: array<f32>;          // [H, cap, HD/64]
@group(0) @binding(4) var<storage, read_write> cb: array<f32>;
@group(0) @binding(6) var<storage, read_write> vq: array<u32>;          // V: [H, cap, HD*V_BITS/32]
@group(0) @binding(7) var<storage, read_write> vs: array<f32>;
@group(0) @binding(8) var<storage, read_write> vb: array<f32>;
@group(0) @binding(9) var<storage, read_write> part: array<vec4<f32>>;  // (fused) [H, n_chunks, HD/4]: chunks' value sums
@group(0) @binding(10) var<storage, read_write> out: array<f32>;        // (fused) [1, H * HD]
// (fused) Per head: live chunks that have finished; 0 between dispatches (common/counters.ts).
@group(0) @binding(11) var<storage, read_write> done: array<atomic<u32>>;
// Declared for common/gate.inc.wgsl only: the fused kernel reads the gate logits from src (gqkv's gate block).
@group(0) @binding(12) var<storage, read> gate: array<f32>;

override V_BITS: u32 = 4;
override GATE: bool = true;
override SCAP: u32 = 1024;   // (fused) scores a workgroup holds: >= cap
const MAX_RF: u32 = 8u;      // (fused) RF = PACKS <= 8 (HD <= 256)

// #include "attention/qsdpa_one.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "quant/affine.inc.wgsl"
// #include "common/gate.inc.wgsl"
// #include "attention/qsdpa_one_values.inc.wgsl"

var<workgroup> ssc: array<f32, SCAP>;       // (fused) the head's scores
var<workgroup> nkw: array<u32, 64>;         // (fused) the new key's packed words (HD * BITS / 32 <= 64)
var<workgroup> nks: array<f32, 4>;          // (fused) its scales and biases, a group of 64 each
var<workgroup> nkb: array<f32, 4>;

var<workgroup> g_min: array<f32, WG>;
var<workgroup> g_max: array<f32, WG>;
var<workgroup> g_lv: array<u32, WG>;

// #include "attention/quant_group.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return head_elem(p.width + h * HD, e, HD, p.kv_len - 1u, p.log2_base, true); }
fn v_word(i: u32) -> u32 { return vq[i]; }
fn v_scale(g: u32) -> f32 { return vs[g]; }
fn v_bias(g: u32) -> f32 { return vb[g]; }
fn soft_score(h: u32, j: u32) -> f32 { return ssc[j]; }
fn gate_logits(h: u32, u: u32) -> vec4<f32> {
  var g = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) { g[j] = src[h * HD + 4u * u + j]; }
  return g;
}

// Quantizes the new key and value of head h at position `pos`: into the cache when `to_cache` (the same for the
// whole workgroup), the key's words, scales and biases into nkw / nks / nkb always (every thread calls it).
fn append_kv(h: u32, pos: u32, t: u32, to_cache: bool) {
  let gpr = HD / GROUP;
  let slot = t / GROUP;
  let lane = t % GROUP;
  for (var g0 = 0u; g0 < 2u * gpr; g0 += WG / GROUP) {
    let g = g0 + slot;   // groups [0, gpr) are K's, [gpr, 2 gpr) V's
    let live = g < 2u * gpr;
    let is_v = g >= gpr;
    var x = 0.0;
    if (live) { x = head_elem(select(2u, 3u, is_v) * p.width + h * HD, (g % gpr) * GROUP + lane, HD, pos, p.log2_base, !is_v); }
    let bits = select(BITS, V_BITS, is_v);
    let r = quant_lanes(x, slot, lane, bits);
    let at = (h * p.cap + pos) * gpr + g % gpr;
    if (live && !is_v) {
      if (lane == 0u) {
        nks[g] = round_out(r.a.scale);
        nkb[g] = round_out(r.a.bias);
        if (to_cache) { cs[at] = nks[g]; cb[at] = nkb[g]; }
      }
      if (lane < 2u * bits) {
        nkw[g * 2u * bits + lane] = r.word;
        if (to_cache) { cq[at * 2u * bits + lane] = r.word; }
      }
    }
    if (live && is_v && to_cache) {
      if (lane == 0u) { vs[at] = round_out(r.a.scale); vb[at] = round_out(r.a.bias); }
      if (lane < 2u * bits) { vq[at * 2u * bits + lane] = r.word; }
    }
  }
}

@compute @workgroup_size(WG)
fn qone_scores_append(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let last = p.kv_len - 1u;
  let k0 = wid.x * CK;
  var kp = key_pack(wid.x, wid.y, t);
  if (k0 <= last && last < k0 + CK) {   // the same for the whole workgroup
    append_kv(wid.y, last, t, true);
    storageBarrier();
    if (k0 + t / PACKS >= last) { kp = key_pack(wid.x, wid.y, t); }   // the new key's pack, now written
  }
  chunk_scores(wid, t, kp);
}

// The new key's pack of thread t (as key_pack reads it from the cache), from nkw / nks / nkb.
fn new_pack(t: u32) -> KeyPack {
  var kp: KeyPack;
  let pk = t % PACKS;
  for (var i = 0u; i < BITS; i++) { kp.w[i] = nkw[pk * BITS + i]; }
  kp.s = nks[pk / 2u];
  kp.b = nkb[pk / 2u];
  return kp;
}

@compute @workgroup_size(WG)
fn qone_fused(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let last = p.kv_len - 1u;
  let live = (p.kv_len + CK - 1u) / CK;
  if (c >= live) { return; }   // the same for the whole workgroup
  // Round r scores keys r WG .. r WG + WG - 1: RF = PACKS chunks, a pack of each a thread; the next round's packs
  // are loaded before this round's sums.
  var kp: array<KeyPack, MAX_RF>;
  for (var i = 0u; i < RF; i++) { kp[i] = key_pack(i, h, t); }
  let holds = c == last / CK;
  append_kv(h, last, t, holds);
  storageBarrier();   // (the chunk holding the new position) its value, written, before chunk_vpacks reads it
  let sl = t / DG;
  let v = chunk_vpacks(h, c, (t % DG) * E, sl);
  load_query(h, t);
  // Every score of the head (the new key's pack from nkw) and the largest.
  var big = -MAXF;
  let rounds = (p.kv_len + WG - 1u) / WG;
  for (var r = 0u; r < rounds; r++) {
    var cur = kp;
    for (var i = 0u; i < RF; i++) {
      if ((r * RF + i) * CK + t / PACKS == last) { cur[i] = new_pack(t); }
    }
    if (r + 1u < rounds) {
      for (var i = 0u; i < RF; i++) { kp[i] = key_pack((r + 1u) * RF + i, h, t); }
    }
    workgroupBarrier();   // qsh written (round 0), red read (later rounds)
    for (var i = 0u; i < RF; i++) { pack_part(cur[i], i * WG + t); }
    workgroupBarrier();
    let j = r * WG + t;
    if (j < p.kv_len) {
      let sj = key_score(t);
      ssc[j] = sj;
      big = max(big, sj);
    }
  }
  // M by a tree over the threads' maxes (a max is exact in any order).
  workgroupBarrier();
  red[t] = big;
  workgroupBarrier();
  for (var n = WG / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red[t] = max(red[t], red[t + n]); }
    workgroupBarrier();
  }
  let M = red[0];
  let stats = softmax_stats(h, M, t, soft_batch(h, t));
  chunk_values(h, c, live, t, v, chunk_sj(h, c, sl), stats);
}
