// Decode's cache append fused into qsdpa_one.wgsl's scores, for two quantized cache sides (the model's decode step
// then has no rope_append dispatch): qone_scores_append is qone_scores (attention/qsdpa_one.inc.wgsl) whose query
// is gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's),
// and whose workgroup holding that position first quantizes the new key (RoPE'd) and value of its head into the
// cache, bit for bit as rope_append (the same element and group code, attention/quant_group.inc.wgsl): 2 HD / 64
// groups, four at a time over the 256 threads (one round at HD 64 and 128, two at 256), the first round's elements
// loaded before its query is RoPE'd into workgroup memory (so the two sets of loads are in flight together). Its
// scores then take the new key's pack from workgroup memory (the words, scale and bias it wrote: no second trip to
// memory; its other keys' packs were loaded first, key_pack); qsdpa_one.wgsl's qone_out follows unchanged and
// reads the new value (written a dispatch earlier). Cache heads = query heads: gqkv holds a key per query head.

@group(0) @binding(1) var<storage, read> src: array<f32>;               // gqkv [1, 4 * width], width = H * HD
@group(0) @binding(2) var<storage, read_write> cq: array<u32>;          // K: [H, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read_write> cs: array<f32>;          // [H, cap, HD/64]
@group(0) @binding(4) var<storage, read_write> cb: array<f32>;
@group(0) @binding(6) var<storage, read_write> vq: array<u32>;          // V: [H, cap, HD*V_BITS/32]
@group(0) @binding(7) var<storage, read_write> vs: array<f32>;
@group(0) @binding(8) var<storage, read_write> vb: array<f32>;

override V_BITS: u32 = 4;

// #include "attention/qsdpa_one.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "quant/affine.inc.wgsl"

var<workgroup> g_min: array<f32, WG>;
var<workgroup> g_max: array<f32, WG>;
var<workgroup> g_lv: array<u32, WG>;
var<workgroup> nkw: array<u32, 64>;   // the new key's packed words (HD * BITS / 32 <= 64)
var<workgroup> nks: array<f32, 4>;    // its scales and biases, a group of 64 each
var<workgroup> nkb: array<f32, 4>;

// #include "attention/quant_group.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return head_elem(p.width + h * HD, e, HD, p.kv_len - 1u, p.log2_base, true); }

// The element thread t quantizes in the round of groups from g0: element t % GROUP of group g0 + t / GROUP, the new
// key's (RoPE'd) for groups [0, gpr), the value's for [gpr, 2 gpr); 0 past them.
fn kv_elem(h: u32, pos: u32, t: u32, g0: u32) -> f32 {
  let gpr = HD / GROUP;
  let g = g0 + t / GROUP;
  if (g >= 2u * gpr) { return 0.0; }
  let is_v = g >= gpr;
  return head_elem(select(2u, 3u, is_v) * p.width + h * HD, (g % gpr) * GROUP + t % GROUP, HD, pos, p.log2_base, !is_v);
}

// Quantizes the new key and value of head h at position `pos` into the cache (every thread calls it); x0 is the
// thread's element of the first round (kv_elem(h, pos, t, 0), loaded by the caller before the query's).
fn append_kv(h: u32, pos: u32, t: u32, x0: f32) {
  let gpr = HD / GROUP;
  let slot = t / GROUP;
  let lane = t % GROUP;
  for (var g0 = 0u; g0 < 2u * gpr; g0 += WG / GROUP) {
    let g = g0 + slot;   // groups [0, gpr) are K's, [gpr, 2 gpr) V's
    let live = g < 2u * gpr;
    let is_v = g >= gpr;
    var x = x0;
    if (g0 > 0u) { x = kv_elem(h, pos, t, g0); }
    let bits = select(BITS, V_BITS, is_v);
    let r = quant_lanes(x, slot, lane, bits);
    let at = (h * p.cap + pos) * gpr + g % gpr;
    if (live && !is_v) {
      if (lane == 0u) {
        nks[g] = round_out(r.a.scale);
        nkb[g] = round_out(r.a.bias);
        cs[at] = nks[g];
        cb[at] = nkb[g];
      }
      if (lane < 2u * bits) {
        nkw[g * 2u * bits + lane] = r.word;
        cq[at * 2u * bits + lane] = r.word;
      }
    }
    if (live && is_v) {
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
  // The new key's and value's elements, then the query (RoPE'd from gqkv): their loads are in flight together.
  let appending = k0 <= last && last < k0 + CK;   // the same for the whole workgroup
  var x0 = 0.0;
  if (appending) { x0 = kv_elem(wid.y, last, t, 0u); }
  load_query(wid.y, t);
  if (appending) {
    append_kv(wid.y, last, t, x0);
    workgroupBarrier();
    if (k0 + t / PACKS >= last) { kp = new_pack(t); }   // the new key's (keys past it: never added)
  }
  chunk_scores(wid, t, kp);
}

// The new key's pack of thread t, as key_pack would read it from the cache once written: from nkw / nks / nkb.
fn new_pack(t: u32) -> KeyPack {
  var kp: KeyPack;
  let pk = t % PACKS;
  for (var i = 0u; i < BITS; i++) { kp.w[i] = nkw[pk * BITS + i]; }
  kp.s = nks[pk / 2u];
  kp.b = nkb[pk / 2u];
  return kp;
}
