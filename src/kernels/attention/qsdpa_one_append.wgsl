// Decode's cache append fused into qsdpa_one.wgsl's scores, for two quantized cache sides (the model's decode step
// then has no rope_append dispatch): qone_scores_append is qone_scores (attention/qsdpa_one.inc.wgsl) whose query
// is gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's),
// and whose workgroup holding that position first quantizes the new key (RoPE'd) and value of its head into the
// cache, bit for bit as rope_append (the same element and group code, attention/quant_group.inc.wgsl): 2 HD / 64
// groups, four at a time over the 256 threads (one round at HD 64 and 128, two at 256), after its query is RoPE'd
// into workgroup memory (so the two sets of loads are in flight together). Its scores then take the
// new key's pack from workgroup memory (the words, scale and bias it wrote: no second trip to memory; its other
// keys' packs were loaded first, key_pack); qsdpa_one.wgsl's qone_out follows unchanged and reads the new value
// (written a dispatch earlier). Cache heads = query heads: gqkv holds a key per query head.
// qone_fused is the whole step in one dispatch, a workgroup per (chunk, head) as qone_out: every workgroup
// quantizes the new key itself (only the chunk holding it writes the key and value to the cache), computes every
// score of its head into workgroup memory (a thread per key, its packs in order: pack_part, the bits of
// qone_scores'), M by a tree, and from the scores L and its chunk's values as qone_out does
// (attention/qsdpa_one_values.inc.wgsl), merged by the head's last chunk to finish: qone_scores_append + qone_out's
// bits without the dispatch boundary (a dispatch's launch and drain are most of a decode layer's attention) and
// without a trip of the scores through memory. Each score is computed by every chunk of its head (K read that
// often from L2); a workgroup holds its head's scores (SCAP >= cap floats), so qsdpa_one.ts takes this form where
// that and its 10 storage bindings fit the device. (A form scoring a pack a thread, a round of CK keys at a time
// with a barrier between, took 21 us a call at 641 keys on an H200 against 17 for the two dispatches.)
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
// Declared for common/gate.inc.wgsl's gated(), which no entry here calls: qone_fused's gate logits are src's.
@group(0) @binding(12) var<storage, read> gate: array<f32>;

override V_BITS: u32 = 4;
override GATE: bool = true;
override SCAP: u32 = 1024;   // (fused) scores a workgroup holds: >= cap

// #include "attention/qsdpa_one.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "quant/affine.inc.wgsl"
// #include "common/gate.inc.wgsl"
// #include "attention/qsdpa_one_values.inc.wgsl"

var<workgroup> ssc: array<f32, SCAP>;   // (fused) the head's scores

var<workgroup> g_min: array<f32, WG>;
var<workgroup> g_max: array<f32, WG>;
var<workgroup> g_lv: array<u32, WG>;
var<workgroup> nkw: array<u32, 64>;   // the new key's packed words (HD * BITS / 32 <= 64)
var<workgroup> nks: array<f32, 4>;    // its scales and biases, a group of 64 each
var<workgroup> nkb: array<f32, 4>;

// #include "attention/quant_group.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return head_elem(p.width + h * HD, e, HD, p.kv_len - 1u, p.log2_base, true); }

// Quantizes the new key and value of head h at position `pos`: the key's words, scales and biases into nkw / nks /
// nkb, and both into the cache when `to_cache` (the same for the whole workgroup). Every thread calls it.
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
  // The query (RoPE'd from gqkv) before the append: its loads are in flight with the new key's and value's.
  load_query(wid.y, t);
  if (k0 <= last && last < k0 + CK) {   // the same for the whole workgroup
    append_kv(wid.y, last, t, true);
    workgroupBarrier();
    if (k0 + t / PACKS >= last) { kp = new_pack(t); }   // the new key's (keys past it: never added)
  }
  chunk_scores(wid, t, kp);
}

// The new key's pack of thread t, as key_pack would read it from the cache once written: from nkw / nks / nkb.
fn new_pack(t: u32) -> KeyPack {
  return new_pack_of(t % PACKS);
}

fn new_pack_of(pk: u32) -> KeyPack {
  var kp: KeyPack;
  for (var i = 0u; i < BITS; i++) { kp.w[i] = nkw[pk * BITS + i]; }
  kp.s = nks[pk / 2u];
  kp.b = nkb[pk / 2u];
  return kp;
}

fn soft_score(h: u32, j: u32) -> f32 { return ssc[j]; }
fn v_word(i: u32) -> u32 { return vq[i]; }
fn v_scale(g: u32) -> f32 { return vs[g]; }
fn v_bias(g: u32) -> f32 { return vb[g]; }
fn gate_logits(h: u32, u: u32) -> vec4<f32> {
  var g = vec4<f32>(0.0);
  if (GATE) { for (var j = 0u; j < 4u; j++) { g[j] = src[h * HD + 4u * u + j]; } }
  return g;
}

// Key j's score, a thread's whole key: its packs' parts in order (the new key's from workgroup memory), rounded.
fn key_score(h: u32, j: u32, last: u32) -> f32 {
  var acc = 0.0;
  for (var pk = 0u; pk < PACKS; pk++) {
    var kp: KeyPack;
    if (j == last) { kp = new_pack_of(pk); } else { kp = pack_at(h, j, pk); }
    acc += pack_part(kp, pk);
  }
  return round_out(acc);
}

@compute @workgroup_size(WG)
fn qone_fused(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let last = p.kv_len - 1u;
  let live = (p.kv_len + CK - 1u) / CK;
  if (c >= live) { return; }   // the same for the whole workgroup
  let sl = t / DG;
  let d0 = (t % DG) * E;
  var vals = chunk_vpacks(h, c, d0, sl);   // loads that wait on nothing, in flight meanwhile
  load_query(h, t);
  let holds = c == last / CK;
  append_kv(h, last, t, holds);
  workgroupBarrier();   // qsh and the new key's pack
  storageBarrier();     // (the chunk holding the new position) its value, written, before it is read
  if (holds) {
    for (var i = 0u; i < KEYS; i++) {
      if (slot_key(c, i, sl) == last) { vals[i] = vpack(v_row(h, last), d0); }
    }
  }
  var big = -MAXF;
  for (var j = t; j < p.kv_len; j += WG) {
    let sj = key_score(h, j, last);
    ssc[j] = sj;
    big = max(big, sj);
  }
  // M by a tree over the threads' maxes (a max is exact in any order).
  red[t] = big;
  workgroupBarrier();
  for (var n = WG / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red[t] = max(red[t], red[t + n]); }
    workgroupBarrier();
  }
  let M = red[0];
  chunk_values(h, c, live, t, vals, chunk_sj(h, c, sl), M, softmax_inv(h, M, t, soft_batch(h, t)));
}
