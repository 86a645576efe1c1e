// Attention for one query per head that sees every key (decode, S = 1), shaped for a GPU with far more cores than
// heads. A split and a merge, as two dispatches or one:
//  - one_split: a workgroup per (chunk of CK keys, head). Scores: PK = WG / CK threads per key, each a strided
//    slice of the key's 16-byte units (8 bf16 or 4 f32); the slices are summed in shared memory. The chunk's max m,
//    weights e^(s - m) and their sum l stay in shared memory. Values: the threads form groups of `upr` (units per
//    row), group g takes keys g, g + groups, ... so each group reads whole rows coalesced; the groups' sums are
//    added in shared memory. Writes the chunk's unnormalised o[D] and (m, l). Chunks past kv_len return at once.
//    (The split is attention/one_split.inc.wgsl, shared with sdpa_one_append.wgsl, which appends the new key and
//    value first.)
//  - one_merge: a workgroup per head: M = max m_c, L = sum l_c e^(m_c - M), out = round(sum o_c e^(m_c - M) / L),
//    then the gate (as ops' sigmoidGate, bit for bit), or 0 when there is no key (attention/one_merge.inc.wgsl).
//  - one_split_fold: one_split whose last live chunk of a head to finish runs that head's merge (an atomic count
//    per head; no workgroup waits for another): one dispatch, the same bits as one_split + one_merge. WGSL orders
//    storage writes between workgroups only across dispatches, so the fold relies on the barrier before the count
//    and the one after it reaching the whole device: checked on the CPU drivers by the tests and on the GPU
//    machine by testkit/kernels/sdpa-fold.check.ts (bench/parity.ts); one_split + one_merge is the reference and the
//    fallback (sdpa-one.ts `merge: 'separate'`, DeviceOptions.kernels.decodeMerge).
// Every thread issues a couple of independent loads and no thread walks a long chain of them: a single workgroup
// per head (12 on HRM-1B, on a 132-SM H200) took 119 us at 641 keys, split-key flash decoding with 64-key blocks
// 82 us. The chunk count comes from the reach (sdpa_one.ts, reach.ts: at least kv_len, at most the capacity), the
// live chunks from kv_len (a uniform), so a recorded decode step replays at any position of its reach. f32 inside;
// keys past kv_len read the last key with weight 0.

@group(0) @binding(1) var<storage, read> q: array<f32>;         // [H, 1, D]
@group(0) @binding(2) var<storage, read> k4: array<vec4<u32>>;  // [H, cap, D]: f32 bits or packed bf16
@group(0) @binding(3) var<storage, read> v4: array<vec4<u32>>;

// #include "attention/one_split.inc.wgsl"
// #include "attention/one_merge.inc.wgsl"

fn qv(h: u32, d: u32) -> f32 { return q[h * HD + d]; }

@compute @workgroup_size(WG)
fn one_split(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  split(wid, t, chunk_start(wid, t));
}

@compute @workgroup_size(WG)
fn one_merge(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  merge(wid.x, t);
}

@compute @workgroup_size(WG)
fn one_split_fold(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  split(wid, t, chunk_start(wid, t));
  fold(wid, t);
}
