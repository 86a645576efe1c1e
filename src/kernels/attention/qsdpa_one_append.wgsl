// Decode's cache append fused into qsdpa_one.wgsl's scores, for two quantized cache sides (the model's decode step
// then has no rope_append dispatch): qone_scores_append is qone_scores (attention/qsdpa_one.inc.wgsl) whose query
// is gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's),
// and whose workgroup holding that position first quantizes the new key (RoPE'd) and value of its head into the
// cache, bit for bit as rope_append (the same element and group code, attention/quant_group.inc.wgsl): 2 HD / 64
// groups, four at a time over the 256 threads (one round at HD 64 and 128, two at 256). storageBarrier, then its
// scores read the new key back (no other workgroup reads that position; its other keys' packs were loaded first,
// key_pack); qsdpa_one.wgsl's qone_out follows unchanged and reads the new value. Cache heads = query heads: gqkv
// holds a key per query head.
// qone_scores_append_fold is the whole step in one dispatch: the workgroup that finishes a head's scores last (an
// atomic count per head, as qone_out's merge) runs qone_out's values for every chunk of the head in qone_out's
// order (head_values), so the output is qone_scores_append + qone_out's bit for bit. It reads only its own head's
// 256-byte-aligned span of `scores`, and the appended value from there (append_kv leaves a copy): another head's
// tail on the same core may have cached a line of the cache around that position before it was written. It
// binds 10 storage buffers (qsdpa_one.ts falls back to the two dispatches on devices with fewer).
@group(0) @binding(1) var<storage, read> src: array<f32>;               // gqkv [1, 4 * width], width = H * HD
@group(0) @binding(2) var<storage, read_write> cq: array<u32>;          // K: [H, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read_write> cs: array<f32>;          // [H, cap, HD/64]
@group(0) @binding(4) var<storage, read_write> cb: array<f32>;
@group(0) @binding(6) var<storage, read_write> vq: array<u32>;          // V: [H, cap, HD*V_BITS/32]
@group(0) @binding(7) var<storage, read_write> vs: array<f32>;
@group(0) @binding(8) var<storage, read_write> vb: array<f32>;
@group(0) @binding(9) var<storage, read_write> out: array<f32>;         // [1, H * HD] (fold)
// Per head: live chunks that have finished their scores (fold); 0 between dispatches (common/counters.ts).
@group(0) @binding(10) var<storage, read_write> done: array<atomic<u32>>;
// Declared for common/gate.inc.wgsl only: the fold reads the gate logits from src (gqkv's gate block) instead.
@group(0) @binding(11) var<storage, read> gate: array<f32>;

override V_BITS: u32 = 4;
override GATE: bool = true;

var<workgroup> fold_last: u32;

// #include "attention/qsdpa_one.inc.wgsl"
// #include "attention/qsdpa_one_values.inc.wgsl"
// #include "common/gate.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "quant/affine.inc.wgsl"

var<workgroup> g_min: array<f32, WG>;
var<workgroup> g_max: array<f32, WG>;
var<workgroup> g_lv: array<u32, WG>;

// #include "attention/quant_group.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return head_elem(p.width + h * HD, e, HD, p.kv_len - 1u, p.log2_base, true); }
fn v_word(i: u32) -> u32 { return vq[i]; }
fn v_scale(g: u32) -> f32 { return vs[g]; }
fn v_bias(g: u32) -> f32 { return vb[g]; }

// The appended value's copy in head h's span of `scores`: its V row's words, then its scales, then its biases.
fn vnew_at(h: u32) -> u32 { return cmax_at(h, p.n_chunks); }

fn key_vpack(h: u32, j: u32, d0: u32) -> VPack {
  if (j != p.kv_len - 1u) { return vpack(v_row(h, j), d0); }
  let groups = HD / 64u;
  let wpr = groups * 2u * V_BITS;
  let at = vnew_at(h);
  let w0 = at + d0 * V_BITS / 32u;
  let g = at + wpr + d0 / 64u;
  return VPack(scores[w0], scores[min(w0 + 1u, at + wpr - 1u)], bitcast<f32>(scores[g]), bitcast<f32>(scores[g + groups]));
}

// Quantizes the new key and value of head h at position `pos` into the cache (every thread calls it).
fn append_kv(h: u32, pos: u32, t: u32) {
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
      if (lane == 0u) { cs[at] = round_out(r.a.scale); cb[at] = round_out(r.a.bias); }
      if (lane < 2u * bits) { cq[at * 2u * bits + lane] = r.word; }
    }
    if (live && is_v) {
      let copy = vnew_at(h);
      let gi = g % gpr;
      if (lane == 0u) {
        vs[at] = round_out(r.a.scale);
        vb[at] = round_out(r.a.bias);
        scores[copy + 2u * bits * gpr + gi] = bitcast<u32>(round_out(r.a.scale));
        scores[copy + 2u * bits * gpr + gpr + gi] = bitcast<u32>(round_out(r.a.bias));
      }
      if (lane < 2u * bits) {
        vq[at * 2u * bits + lane] = r.word;
        scores[copy + gi * 2u * bits + lane] = r.word;
      }
    }
  }
}

@compute @workgroup_size(WG)
fn qone_scores_append(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  scores_append(wid, t);
}

@compute @workgroup_size(WG)
fn qone_scores_append_fold(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  scores_append(wid, t);
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  if (wid.x >= live) { return; }   // the same for the whole workgroup
  storageBarrier();   // the chunk's scores (and the appended value's copy) before its count
  if (t == 0u) { fold_last = select(0u, 1u, atomicAdd(&done[h], 1u) == live - 1u); }
  if (workgroupUniformLoad(&fold_last) == 0u) { return; }
  storageBarrier();   // the count before the other chunks' scores are read
  head_values(h, live, t);
  if (t == 0u) { atomicStore(&done[h], 0u); }
}

// Head h's output from every live chunk's scores, in one workgroup: qone_out's values of chunk 0, 1, ... (each
// chunk's slices added in order, chunk c into merge row c % rows), then the rows in order, as qone_out and its
// merge add them; the next chunk's loads are issued before a chunk's sums. The gate logits come from gqkv's gate
// block, loaded first.
fn head_values(h: u32, live: u32, t: u32) {
  let units = HD / 4u;
  let rows = WG / units;
  let u = t % units;
  let r = t / units;
  var g = vec4<f32>(0.0);
  if (r == 0u) { for (var j = 0u; j < 4u; j++) { g[j] = src[h * HD + 4u * u + j]; } }
  let sv = soft_batch(score_at(h, 0u), t);
  let d0 = (t % DG) * E;
  let sl = t / DG;
  var cv = chunk_vals(h, 0u, d0, sl);
  let stats = softmax_stats(h, live, t, sv);
  var o = vec4<f32>(0.0);
  for (var c = 0u; c < live; c++) {
    let cur = cv;
    if (c + 1u < live) { cv = chunk_vals(h, c + 1u, d0, sl); }
    chunk_sums(cur, c, d0, sl, stats);
    workgroupBarrier();
    if (r == c % rows) { o += slice_sum(u); }
    workgroupBarrier();   // every row has read red4 before the next chunk's sums overwrite it
  }
  red4[t] = o;   // row r's dims 4u .. 4u + 3 (t = r * units + u)
  workgroupBarrier();
  if (r == 0u) {
    var y = vec4<f32>(0.0);
    for (var k = 0u; k < rows; k++) { y += red4[k * units + u]; }
    for (var j = 0u; j < 4u; j++) { out[h * HD + 4u * u + j] = gate_by(round_out(y[j]), g[j]); }
  }
}

// qone_scores_append's work: the append (in the workgroup holding the new position), then the chunk's scores.
fn scores_append(wid: vec3u, t: u32) {
  let last = p.kv_len - 1u;
  let k0 = wid.x * CK;
  var kp = key_pack(wid.x, wid.y, t);
  if (k0 <= last && last < k0 + CK) {   // the same for the whole workgroup
    append_kv(wid.y, last, t);
    storageBarrier();
    if (k0 + t / PACKS >= last) { kp = key_pack(wid.x, wid.y, t); }   // the new key's pack, now written
  }
  chunk_scores(wid, t, kp);
}
