// The merge half of sdpa_one.wgsl (see there), shared through `// #include "attention/one_merge.inc.wgsl"` after
// attention/one_split.inc.wgsl by sdpa_one.wgsl and sdpa_one_append.wgsl: `merge` is the whole of the separate
// one_merge dispatch and the tail of the folded splits (`fold`), one function so that both forms give the same bits.
// Never compiled on its own.

@group(0) @binding(6) var<storage, read_write> out: array<f32>;    // [1, H * D]
@group(0) @binding(7) var<storage, read> gate: array<f32>;         // [1, >= H * D]: columns [0, H * D) (GATE)
// Per head: live chunks of this dispatch that have finished (fold); 0 between dispatches.
@group(0) @binding(9) var<storage, read_write> done: array<atomic<u32>>;

var<workgroup> fold_last: u32;

// #include "common/gate.inc.wgsl"

// Head h's live chunks merged: M = max m_c, L = sum l_c e^(m_c - M), out = round(sum o_c e^(m_c - M) / L), gated,
// or 0 (gated) when there is no key. Each thread loads at most a couple of values per step, never walks a chain:
// the max is one load a thread and a tree; thread t then takes the dims 4 u .. 4 u + 3 (u = t % (D / 4)) of the
// chunks r, r + rows, ... (r = t / (D / 4)), UNROLL of them loaded before any is added (the first UNROLL before
// the max's tree), and the rows' sums are added by a tree. The order of every sum is fixed by D and kv_len alone.
// The gate is loaded first, to arrive while the rest runs.
const UNROLL: u32 = 4u;

// (m, l) and dims 4 u .. 4 u + 3 of the sums of chunks c0, c0 + rows, ... (UNROLL of them, from `first`; past the
// last live chunk, `lastc`, its results again: loaded, never added).
struct ChunkParts { ml: array<vec2<f32>, UNROLL>, o: array<vec4<f32>, UNROLL> }

fn chunk_parts(first: u32, c0: u32, rows: u32, lastc: u32, u: u32) -> ChunkParts {
  var cp: ChunkParts;
  for (var j = 0u; j < UNROLL; j++) {
    let c = min(c0 + j * rows, lastc);
    cp.ml[j] = part_ml[first + c];
    cp.o[j] = part_o[(first + c) * (HD / 4u) + u];
  }
  return cp;
}

fn merge(h: u32, t: u32) {
  let live = (p.kv_len + CK - 1u) / CK;
  let first = h * p.slots;
  let units = HD / 4u;
  let rows = WG / units;
  let u = t % units;
  let r = t / units;
  var g = vec4<f32>(0.0);
  if (r == 0u) { g = gate4(h * HD + 4u * u); }
  // This thread's first UNROLL chunks, loaded before the max's tree so that their latency overlaps it (with no
  // key, live is 0: chunk 0's stale results are loaded and never added).
  let lastc = max(live, 1u) - 1u;
  var cp = chunk_parts(first, r, rows, lastc, u);
  var mx = NEG;
  for (var c = t; c < live; c += WG) { mx = max(mx, part_ml[first + c].x); }
  sp[t] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { sp[t] = max(sp[t], sp[t + s]); }
    workgroupBarrier();
  }
  let M = sp[0];
  var o = vec4<f32>(0.0);
  var l = 0.0;
  for (var c0 = r; c0 < live; c0 += UNROLL * rows) {
    if (c0 != r) { cp = chunk_parts(first, c0, rows, lastc, u); }
    for (var j = 0u; j < UNROLL; j++) {
      if (c0 + j * rows < live) {
        let w = exp(cp.ml[j].x - M);
        o += cp.o[j] * w;
        l += cp.ml[j].y * w;
      }
    }
  }
  // part: row r's sums of dims 4u.. at 4 t (t = r * units + u), its l at 4 WG + r.
  let b = 4u * t;
  part[b] = o.x; part[b + 1u] = o.y; part[b + 2u] = o.z; part[b + 3u] = o.w;
  if (u == 0u) { part[4u * WG + r] = l; }
  workgroupBarrier();
  for (var s = rows / 2u; s > 0u; s >>= 1u) {
    if (r < s) {
      let bs = b + 4u * s * units;
      for (var j = 0u; j < 4u; j++) { part[b + j] += part[bs + j]; }
      if (u == 0u) { part[4u * WG + r] += part[4u * WG + r + s]; }
    }
    workgroupBarrier();
  }
  if (r == 0u) {
    let L = part[4u * WG];
    for (var j = 0u; j < 4u; j++) {
      let col = h * HD + 4u * u + j;
      var y = 0.0;
      if (L > 0.0) { y = round_out(part[b + j] / L); }
      out[col] = gate_by(y, g[j]);
    }
  }
}

// The tail of a folded split, after chunk wid.x of head wid.y wrote its part_o / part_ml: the head's last live
// chunk to finish (counted in done[h]) merges, then sets the count back to 0 for the next dispatch. No workgroup
// waits for another. With no key at all nothing counts and chunk 0 writes the zeros.
fn fold(wid: vec3u, t: u32) {
  let h = wid.y;
  let live = (p.kv_len + CK - 1u) / CK;
  if (live == 0u) {
    if (wid.x == 0u) { merge(h, t); }
    return;
  }
  if (wid.x >= live) { return; }
  storageBarrier();   // the chunk's writes before its count
  if (t == 0u) { fold_last = select(0u, 1u, atomicAdd(&done[h], 1u) == live - 1u); }
  if (workgroupUniformLoad(&fold_last) == 0u) { return; }
  storageBarrier();   // the count before the other chunks' results are read
  merge(h, t);
  if (t == 0u) { atomicStore(&done[h], 0u); }
}
