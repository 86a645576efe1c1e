// Attention for one query per head that sees every key of a quantized cache (decode, S = 1), with mlx-lm's rounding
// points as qsdpa.wgsl (r() rounds to the dtype, ROUND; Metal's matmul order, f32 sums per run of 32 values):
//   qs = r(q * r(scale)); s_j = r(qmm(qs, K_j)); p = r(softmax_f32(s)); out = r(qmm(p, V)).
// qsdpa.wgsl's decode passes give a score row one workgroup per head and walk a key per thread, a long chain of
// loads on a GPU with far more cores than heads. Two dispatches, both a workgroup per (chunk of CK = 32 * WG / HD
// keys, head):
//  - qone_scores: a thread per (key, pack of 32 values) loads the pack's BITS words up front and sums
//    s * (q . levels) + b * (sum q) as qsdpa_scores does; a key's packs are added in order. Writes r(s_j) to
//    `scores` [H, cap] and the chunk's largest score after them. (The scores are attention/qsdpa_one.inc.wgsl,
//    shared with qsdpa_one_append.wgsl, which appends the new key and value first.)
//  - qone_out: M = the largest chunk max (every thread takes them all: a max is exact in any order); L = sum
//    e^(s_j - M) over all keys, summed as qsdpa_softmax sums (SOFT threads, strided, then a tree), so the weights
//    p_j = r(e^(s_j - M) * (1 / L)) are the passes' bit for bit (a sum merged from chunks' (max, sum) moved L by
//    several ulps of the GPU's exp, and every weight with it: one flipped f16 weight is ~10 ulps of a small output).
//    Every workgroup sums L itself (kv_len loads, U of them in flight per thread); none waits for another. Then the
//    chunk's values: a thread per (E = 8 dims, slice sl) adds p_j (s * level + b) over keys sl, sl + SL, sl + 2 SL,
//    sl + 3 SL of the chunk in that order; the SL slices are added in order into the chunk's sums in `part`. The
//    head's last chunk to finish (an atomic count per head, `done`, as attention/one_merge.inc.wgsl's fold) adds
//    the live chunks' sums: row r (of WG / (HD / 4) rows, 4 dims a thread) the chunks r, r + rows, ... in order,
//    then the rows in order; rounds, gates as ops' sigmoidGate (bit for bit) and sets the count back to 0. The
//    value sum's order is fixed by HD and kv_len alone.
//    (The values and the merge are attention/qsdpa_one_values.inc.wgsl, shared with qsdpa_one_append.wgsl's
//    qone_fused, which runs the whole step in one dispatch.)
// Every load that waits on nothing (the first U softmax scores, the words of the thread's values and their scores,
// then the chunk maxes) is issued before the first barrier, and no barrier waits on a tree that need not be one.
// The values as a workgroup per (32 dims, head) walking every key took 13.6 us a call at 641 keys on an H200 (48
// workgroups, most of the time waiting on loads one after another). (Before that, values split over key chunks
// with a third, merging dispatch measured slower than it: 38 us against 24 at 640 keys, an earlier build.)
// The chunk count comes from the capacity and kv_len is a uniform, so a recorded decode step replays at any
// position. Keys past kv_len in a chunk read the last key and are left out; chunks past it return at once.

@group(0) @binding(1) var<storage, read> q: array<f32>;                  // [H, 1, HD]
@group(0) @binding(2) var<storage, read> cq: array<u32>;                 // K (scores) or V (out): [kv_heads, cap, HD*BITS/32]
@group(0) @binding(3) var<storage, read> cs: array<f32>;                 // [kv_heads, cap, HD/64]
@group(0) @binding(4) var<storage, read> cb: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;  // [H, n_chunks, HD/4]: each chunk's value sums
@group(0) @binding(7) var<storage, read_write> out: array<f32>;         // [1, H * HD]
@group(0) @binding(8) var<storage, read> gate: array<f32>;              // [1, >= H * HD]: columns [0, H * HD) (GATE)
// Per head: live chunks of this dispatch that have finished; 0 between dispatches (common/counters.ts).
@group(0) @binding(9) var<storage, read_write> done: array<atomic<u32>>;

override GATE: bool = false;
override V_BITS: u32 = 4;   // qone_out's BITS (its binding cq is V)

// #include "attention/qsdpa_one.inc.wgsl"
// #include "common/gate.inc.wgsl"
// #include "attention/qsdpa_one_values.inc.wgsl"

fn qv(h: u32, e: u32) -> f32 { return q[h * HD + e]; }
fn soft_score(h: u32, j: u32) -> f32 { return scores[h * p.cap + j]; }
fn v_word(i: u32) -> u32 { return cq[i]; }
fn v_scale(g: u32) -> f32 { return cs[g]; }
fn v_bias(g: u32) -> f32 { return cb[g]; }
fn gate_logits(h: u32, u: u32) -> vec4<f32> { return gate4(h * HD + 4u * u); }

@compute @workgroup_size(WG)
fn qone_scores(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let kp = key_pack(wid.x, wid.y, t);
  load_query(wid.y, t);
  chunk_scores(wid, t, kp);
}

@compute @workgroup_size(WG)
fn qone_out(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  if (c >= live) { return; }   // the same for the whole workgroup
  let sv = soft_batch(h, t);
  let sl = t / DG;
  let sj = chunk_sj(h, c, sl);
  let vals = chunk_vpacks(h, c, (t % DG) * E, sl);
  // M by every thread from the chunk maxes, U loads at a time (a max is exact in any order: no tree to wait on).
  var big = -MAXF;
  for (var i0 = 0u; i0 < live; i0 += U) {
    var cm: array<f32, U>;
    for (var i = 0u; i < U; i++) { cm[i] = scores[cmax_at(h, min(i0 + i, live - 1u))]; }
    for (var i = 0u; i < U; i++) { big = max(big, cm[i]); }
  }
  chunk_values(h, c, live, t, vals, sj, big, softmax_inv(h, big, t, sv));
}
