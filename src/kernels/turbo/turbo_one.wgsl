// Decode attention read from two TurboQuant sides (turbo/format.ts) in one dispatch: a workgroup of 128 threads per
// (chunk of CK = 32 keys, head), over the chunks of the keys' reach (turbo-one.ts, plan/reach.ts: at least kv_len, at
// most the capacity; positions in uniforms, so a recorded decode step replays at any position of its reach; chunks
// past kv_len return at once). Cache heads = query heads (gqkv holds a key a head).
//  - The chunk holding the new position kv_len - 1 first codes the step's key (RoPE'd) and value of its head into
//    the cache: turbo_rope_append's element and turbo/code.inc.wgsl's coder, so bit for bit its append.
//  - Scores from the codes: the rotation R = D(s2) H/sqrt(128) D(s1) is orthonormal and a block decodes to
//    R^T (norm * centroids), so q . k = (R q) . (norm * centroids); each workgroup rotates its head's query once
//    (scaled) and a key's score is sum over groups of norm_g * sum_t q'_t * centroid(code_t): no inverse transform
//    per key. Four threads a key, P / 4 rotated dims each (within one group), added in order.
//  - The chunk's softmax (its max m, weights e^(s - m), their sum l) and its values in the rotated domain
//    (sum_j w_j norm_j centroid(code_jd)), a thread per rotated dim of each group, into part_o / part_ml.
//  - The head's last chunk to finish (an atomic count per head, `done`, as attention/one_merge.inc.wgsl's fold; no
//    workgroup waits for another) merges: M = max m_c, L = sum l_c e^(m_c - M), o' = sum o'_c e^(m_c - M) / L, then
//    rotates o' back once per group (R^T, linear), rounds per ROUND, gates as ops' sigmoidGate and sets the count
//    back to 0. (one_merge.inc.wgsl's merge writes its output unrotated, so this one is its own.)
// The result differs from turbo_dequant then sdpa only by float order (and, for bf16 activations, by the decoded
// keys and values not being rounded to bf16 first): tests/kernels/turbo/turbo-one.test.ts states the tolerance.

struct Params { kv_len: u32, cap: u32, dim: u32, groups: u32, slots: u32, width: u32, log2_base: f32, scale: f32,
  gate_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;                  // gqkv [1, 4 * width], width = H * dim
@group(0) @binding(2) var<storage, read> gate: array<f32>;                 // gqkv again: the gate block
@group(0) @binding(3) var<storage, read_write> kc: array<u32>;             // K codes [H, cap, groups * words(K)]
@group(0) @binding(4) var<storage, read_write> vc: array<u32>;             // V codes [H, cap, groups * words(V)]
@group(0) @binding(5) var<storage, read_write> part_o: array<f32>;         // [H, slots, groups * 128], rotated
@group(0) @binding(6) var<storage, read_write> part_ml: array<vec2<f32>>;  // [H, slots] (m, l)
@group(0) @binding(7) var<storage, read_write> out: array<f32>;            // [1, H * dim]
// Per head: live chunks of this dispatch that have finished; 0 between dispatches (common/counters.ts).
@group(0) @binding(8) var<storage, read_write> done: array<atomic<u32>>;

override K_TYPE: u32 = 3u;
override V_TYPE: u32 = 3u;
override ROUND: u32 = 0u;
override GATE: bool = true;

// #include "common/gate.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "turbo/code.inc.wgsl"

const CK = 32u;          // keys a chunk
const TPK = 4u;          // threads a key's score
const MAXG = 2u;         // groups a head: head dims up to 256
const NEG = -1.0e30;
const UNROLL = 8u;       // chunk sums a merging thread loads before it adds them

var<workgroup> kblk: array<u32, CK * 17u * MAXG>;   // the chunk's K blocks: key j's words from j * groups * words
var<workgroup> vblk: array<u32, CK * 17u * MAXG>;   // and its V blocks
var<workgroup> knorm: array<f32, CK * MAXG>;        // their norms, [key, group]
var<workgroup> vnorm: array<f32, CK * MAXG>;
var<workgroup> kcent: array<f32, 16>;               // K's and V's codebooks: workgroup memory, not private arrays
var<workgroup> vcent: array<f32, 16>;               // indexed by a value (local memory on some GPUs)
var<workgroup> qr: array<f32, G * MAXG>;            // the rotated query, scaled
var<workgroup> sp: array<f32, G>;                   // partial scores
var<workgroup> pw: array<f32, CK>;                  // scores, then weights
var<workgroup> wsh: array<f32, G>;                  // merge: a tile of chunks' weights
var<workgroup> fold_last: u32;

// Byte b of the K (k) or V block words from `base` in workgroup memory.
fn blk_byte(k: bool, base: u32, b: u32) -> u32 {
  var w = 0u;
  if (k) { w = kblk[base + (b >> 2u)]; } else { w = vblk[base + (b >> 2u)]; }
  return (w >> (8u * (b & 3u))) & 0xffu;
}

// Centroid of element e of the staged V block at base (format.ts's layouts).
fn value_centroid(base: u32, e: u32) -> f32 {
  var idx = 0u;
  if (V_TYPE == 4u) {
    idx = (blk_byte(false, base, 4u + (e >> 1u)) >> (4u * (e & 1u))) & 15u;
  } else {
    idx = (blk_byte(false, base, 2u + (e >> 2u)) >> (2u * (e & 3u))) & 3u;
    if (V_TYPE == 3u) { idx |= ((blk_byte(false, base, 34u + (e >> 3u)) >> (e & 7u)) & 1u) << 2u; }
  }
  return vcent[idx];
}

// The K codes of elements e0 .. e0 + 31 (e0 a multiple of 32) of the staged block at kb, in at most 4 words (a
// thread's score reads them once, not a byte or two an element): turbo4 8 indices a word; turbo2/3 the low 2 bits
// 16 a word in words 0 and 1, turbo3's high bits in word 2 (the fork's bytes start 2 bytes into a word).
fn key_piece(kb: u32, e0: u32) -> array<u32, 4> {
  var w: array<u32, 4>;
  if (K_TYPE == 4u) {
    for (var i = 0u; i < 4u; i++) { w[i] = kblk[kb + 1u + e0 / 8u + i]; }
    return w;
  }
  let a = kb + e0 / 16u;
  w[0] = (kblk[a] >> 16u) | (kblk[a + 1u] << 16u);
  w[1] = (kblk[a + 1u] >> 16u) | (kblk[a + 2u] << 16u);
  if (K_TYPE == 3u) { w[2] = (kblk[kb + 8u + e0 / 32u] >> 16u) | (kblk[kb + 9u + e0 / 32u] << 16u); }
  return w;
}

// Index of element e (0..31) of a key_piece.
fn piece_index(w: ptr<function, array<u32, 4>>, e: u32) -> u32 {
  if (K_TYPE == 4u) { return ((*w)[e >> 3u] >> (4u * (e & 7u))) & 15u; }
  var i = ((*w)[e >> 4u] >> (2u * (e & 15u))) & 3u;
  if (K_TYPE == 3u) { i |= (((*w)[2] >> e) & 1u) << 2u; }
  return i;
}

// Codes the step's key (RoPE'd) and value of head h into position `pos`, as turbo_rope_append does.
fn append_kv(h: u32, pos: u32, t: u32) {
  for (var side = 0u; side < 2u; side++) {
    let is_k = side == 0u;
    let ty = select(V_TYPE, K_TYPE, is_k);
    let w = block_words(ty);
    for (var g = 0u; g < p.groups; g++) {
      let e = g * G + t;
      var v = 0.0;
      if (e < p.dim) { v = head_elem(select(3u, 2u, is_k) * p.width + h * p.dim, e, p.dim, pos, p.log2_base, is_k); }
      code_group(ty, v, t);
      if (t < w) {
        let at = ((h * p.cap + pos) * p.groups + g) * w + t;
        if (is_k) { kc[at] = block_word(ty, t); } else { vc[at] = block_word(ty, t); }
      }
    }
  }
}

// The chunk's blocks (keys past kv_len read the last key, never added) into kblk / vblk and the codebooks into
// kcent / vcent, then the blocks' norms.
fn stage(h: u32, k0: u32, t: u32) {
  if (t < 16u) {
    kcent[t] = centroid(K_TYPE, min(t, (1u << K_TYPE) - 1u));
    vcent[t] = centroid(V_TYPE, min(t, (1u << V_TYPE) - 1u));
  }
  let last = p.kv_len - 1u;
  let kw = p.groups * block_words(K_TYPE);
  let vw = p.groups * block_words(V_TYPE);
  for (var i = t; i < CK * kw; i += G) { kblk[i] = kc[(h * p.cap + min(k0 + i / kw, last)) * kw + i % kw]; }
  for (var i = t; i < CK * vw; i += G) { vblk[i] = vc[(h * p.cap + min(k0 + i / vw, last)) * vw + i % vw]; }
  workgroupBarrier();
  if (t < CK * p.groups) {
    let j = t / p.groups;
    let g = t % p.groups;
    let kb = j * kw + g * block_words(K_TYPE);
    let vb = j * vw + g * block_words(V_TYPE);
    knorm[t] = f16_value(blk_byte(true, kb, 0u) | (blk_byte(true, kb, 1u) << 8u));
    vnorm[t] = f16_value(blk_byte(false, vb, 0u) | (blk_byte(false, vb, 1u) << 8u));
  }
}

// Element t of each group of head h's query, RoPE'd at pos and rounded as ropeQ rounds it (0 past the head): loaded
// before the chunk's blocks are staged, so that both sets of loads are in flight together.
fn query_elems(h: u32, pos: u32, t: u32) -> array<f32, MAXG> {
  var x: array<f32, MAXG>;
  for (var g = 0u; g < MAXG; g++) {
    let e = g * G + t;
    if (g < p.groups && e < p.dim) { x[g] = head_elem(p.width + h * p.dim, e, p.dim, pos, p.log2_base, true); }
  }
  return x;
}

// The query's elements (query_elems) rotated per group and scaled, into qr.
fn rotate_query(x: array<f32, MAXG>, t: u32) {
  for (var g = 0u; g < p.groups; g++) {
    let e = g * G + t;
    xs[t] = x[g] * sign1(t);
    workgroupBarrier();
    butterflies(t);
    qr[e] = xs[t] * (INV_SQRT_G * sign2(t)) * p.scale;
    workgroupBarrier();
  }
}

@compute @workgroup_size(128)
fn turbo_one(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return; }   // the same for the whole workgroup
  let last = p.kv_len - 1u;
  if (last < k0 + CK) {
    append_kv(h, last, t);
    storageBarrier();   // the new blocks, before the chunk stages them
  }
  let qx = query_elems(h, last, t);
  stage(h, k0, t);
  rotate_query(qx, t);
  // Scores: key t / TPK, dims d0 .. d0 + P / TPK of the rotated query (one group's).
  let dpt = p.groups * G / TPK;
  let j = t / TPK;
  let d0 = (t % TPK) * dpt;
  let g = d0 / G;
  let kb = j * p.groups * block_words(K_TYPE) + g * block_words(K_TYPE);
  var dt = 0.0;
  for (var e0 = 0u; e0 < dpt; e0 += 32u) {
    var w = key_piece(kb, d0 % G + e0);
    for (var e = 0u; e < 32u; e++) { dt += qr[d0 + e0 + e] * kcent[piece_index(&w, e)]; }
  }
  sp[t] = knorm[j * p.groups + g] * dt;
  workgroupBarrier();
  if (t < CK) {
    var s = 0.0;
    for (var i = 0u; i < TPK; i++) { s += sp[t * TPK + i]; }
    pw[t] = select(NEG, s, k0 + t <= last);
  }
  workgroupBarrier();
  var m = NEG;
  for (var i = 0u; i < CK; i++) { m = max(m, pw[i]); }
  workgroupBarrier();   // every thread has the max before the scores turn into weights
  if (t < CK) { pw[t] = select(0.0, exp(pw[t] - m), k0 + t <= last); }
  workgroupBarrier();
  // Values in the rotated domain: thread t the element t of each group, the chunk's keys in order.
  let slot = h * p.slots + c;
  let vw = p.groups * block_words(V_TYPE);
  for (var gg = 0u; gg < p.groups; gg++) {
    var acc = 0.0;
    for (var i = 0u; i < CK; i++) {
      let vb = i * vw + gg * block_words(V_TYPE);
      acc += pw[i] * vnorm[i * p.groups + gg] * value_centroid(vb, t);
    }
    part_o[slot * p.groups * G + gg * G + t] = acc;
  }
  if (t == 0u) {
    var l = 0.0;
    for (var i = 0u; i < CK; i++) { l += pw[i]; }
    part_ml[slot] = vec2<f32>(m, l);
  }
  let live = (p.kv_len + CK - 1u) / CK;
  storageBarrier();   // the chunk's results before its count
  if (t == 0u) { fold_last = select(0u, 1u, atomicAdd(&done[h], 1u) == live - 1u); }
  if (workgroupUniformLoad(&fold_last) == 0u) { return; }
  storageBarrier();   // the count before the other chunks' results are read
  merge(h, live, t);
  if (t == 0u) { atomicStore(&done[h], 0u); }
}

// #include "turbo/merge.inc.wgsl"
