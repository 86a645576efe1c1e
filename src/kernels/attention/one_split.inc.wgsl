// The split half of sdpa_one.wgsl (see there), shared through `// #include "attention/one_split.inc.wgsl"` by
// sdpa_one.wgsl (K/V read-only) and sdpa_one_append.wgsl (K/V written first): the kernels differ only in where the
// query comes from and in the bindings' access, and a writable K/V binding could not take a K that is also V.
// The includer declares `k4`, `v4` (array<vec4<u32>>, [H, cap, D]: f32 bits or packed bf16) and `fn qv(h, d) -> f32`
// (element d of head h's query). Never compiled on its own.
// A head's chunk results start `slots` (a multiple of 32) slots apart, so no two heads share a 256-byte span of
// part_o or part_ml: a folded merge (attention/one_merge.inc.wgsl) reads its head's while other heads' chunks may
// still be writing theirs, and a span that an earlier merge on the same core cached must not hold its head's data.

struct Params { kv_len: u32, cap: u32, scale: f32, slots: u32, gate_stride: u32, width: u32, log2_base: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read_write> part_o: array<vec4<f32>>;  // [H, slots, D / 4]
@group(0) @binding(5) var<storage, read_write> part_ml: array<vec2<f32>>; // [H, slots] (m, l)

override HD: u32 = 128;
override KV_BF16: bool = false;
override ROUND: u32 = 0;
override GATE: bool = false;

// 16-byte units of K (and of V) a thread holds: max(1, HD / elements per unit / PK), set by sdpa-one.ts (1..8).
override UPT: u32 = 2;

const WG: u32 = 256u;
const CK: u32 = 32u;
const MAXU: u32 = 8u;
const PK: u32 = WG / CK;
const NEG: f32 = -1.0e30;

// q scaled, per 16-byte unit: the even elements of a bf16 unit (or the 4 of an f32 unit), and the odd ones.
var<workgroup> qe: array<vec4<f32>, HD / 4u>;
var<workgroup> qo: array<vec4<f32>, HD / 4u>;
var<workgroup> sp: array<f32, WG>;
var<workgroup> pr: array<f32, CK>;
var<workgroup> part: array<f32, WG * 8u>;   // groups * HD = WG * elements per unit

// #include "common/round.inc.wgsl"

fn epu() -> u32 { return select(4u, 8u, KV_BF16); }

// Elements 0, 2, 4, 6 of a bf16 unit, or the 4 elements of an f32 unit.
fn even(w: vec4<u32>) -> vec4<f32> {
  if (KV_BF16) { return bitcast<vec4<f32>>(w << vec4<u32>(16u)); }
  return bitcast<vec4<f32>>(w);
}

// Elements 1, 3, 5, 7 of a bf16 unit (f32 units have none).
fn odd(w: vec4<u32>) -> vec4<f32> {
  if (KV_BF16) { return bitcast<vec4<f32>>(w & vec4<u32>(0xffff0000u)); }
  return vec4<f32>(0.0);
}

// This thread's K and V units of chunk c of head h (keys past kv_len read the last key): K units t % PK + i PK of
// key k0 + t / PK, V unit t % upr of keys k0 + t / upr + i (WG / upr), i < UPT. split() takes them instead of
// loading as it goes, so every load of the chunk is in flight before the query is RoPE'd and scaled (and, in
// sdpa_one_append.wgsl, before the new key is written): one memory latency a chunk instead of three in a row.
struct ChunkUnits { k: array<vec4<u32>, MAXU>, v: array<vec4<u32>, MAXU> }

fn key_row(h: u32, j: u32) -> u32 { return h * p.cap + min(j, p.kv_len - 1u); }

// The key of this thread's V unit i in the chunk from k0; past the chunk's last key (rows of fewer than 8 units
// have more thread groups than keys, whose sums are left out) it reads that key, so no thread reads another
// chunk's keys, which the appending chunk may be writing.
fn v_key(k0: u32, t: u32, i: u32) -> u32 { return min(k0 + t / (HD / epu()) + i * (WG / (HD / epu())), k0 + CK - 1u); }

fn chunk_units(c: u32, h: u32, t: u32) -> ChunkUnits {
  let upr = HD / epu();
  let k0 = c * CK;
  var u: ChunkUnits;
  if (k0 >= p.kv_len) { return u; }   // split() returns at once
  for (var i = 0u; i < UPT; i++) {
    u.k[i] = k4[key_row(h, k0 + t / PK) * upr + min(t % PK + i * PK, upr - 1u)];
    u.v[i] = v4[key_row(h, v_key(k0, t, i)) * upr + t % upr];
  }
  return u;
}

// Head h's query, scaled, into qe / qo for chunk c's split (nothing for a chunk past kv_len): an element a thread
// (qv may RoPE it: a chain of loads and arithmetic that eight elements a thread in a row made the longest part of
// the split). split() reads them after a barrier.
fn load_query(c: u32, h: u32, t: u32) {
  if (c * CK >= p.kv_len) { return; }
  for (var e = t; e < HD; e += WG) {
    let ui = e / epu();
    let j = e % epu();
    let x = qv(h, e) * p.scale;
    if (!KV_BF16) { qe[ui][j] = x; qo[ui][j] = 0.0; } else if (j % 2u == 0u) { qe[ui][j / 2u] = x; } else { qo[ui][j / 2u] = x; }
  }
}

// Chunk wid.x of head wid.y's units, then its query into qe / qo: the chunk's loads are in flight before the
// query's chain runs. Every split starts so (sdpa_one_append.wgsl's issues the new key's and value's loads between).
fn chunk_start(wid: vec3u, t: u32) -> ChunkUnits {
  let units = chunk_units(wid.x, wid.y, t);
  load_query(wid.x, wid.y, t);
  return units;
}

// Chunk wid.x of head wid.y, from its units and the query load_query left in qe / qo: scores, weights and weighted
// values of its keys into part_o / part_ml.
fn split(wid: vec3u, t: u32, units: ChunkUnits) {
  let c = wid.x;
  let h = wid.y;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return; }   // the same for the whole workgroup
  let upr = HD / epu();
  let last = p.kv_len - 1u;
  workgroupBarrier();   // the query's elements, from every thread
  var d = 0.0;
  for (var i = 0u; i < UPT; i++) {
    let ui = t % PK + i * PK;
    if (ui < upr) { d += dot(even(units.k[i]), qe[ui]) + dot(odd(units.k[i]), qo[ui]); }   // rows of < PK units
  }
  sp[t] = d;
  workgroupBarrier();
  if (t < CK) {
    var s = 0.0;
    for (var i = 0u; i < PK; i++) { s += sp[t * PK + i]; }
    pr[t] = select(NEG, s, k0 + t <= last);
  }
  workgroupBarrier();
  var m = NEG;
  for (var i = 0u; i < CK; i++) { m = max(m, pr[i]); }
  workgroupBarrier();   // every thread has the max before the scores turn into weights
  if (t < CK) {
    let s = pr[t];
    pr[t] = select(0.0, exp(s - m), s > NEG);
  }
  workgroupBarrier();
  let groups = WG / upr;
  let g = t / upr;
  let u = t % upr;
  var ae = vec4<f32>(0.0);
  var ao = vec4<f32>(0.0);
  for (var i = 0u; i < UPT; i++) {
    let j = g + i * groups;
    if (j < CK) {   // groups > CK for rows of < PK units
      let pj = pr[j];
      ae += pj * even(units.v[i]);
      ao += pj * odd(units.v[i]);
    }
  }
  let b = g * HD + u * epu();
  if (KV_BF16) {
    part[b] = ae.x; part[b + 1u] = ao.x; part[b + 2u] = ae.y; part[b + 3u] = ao.y;
    part[b + 4u] = ae.z; part[b + 5u] = ao.z; part[b + 6u] = ae.w; part[b + 7u] = ao.w;
  } else {
    part[b] = ae.x; part[b + 1u] = ae.y; part[b + 2u] = ae.z; part[b + 3u] = ae.w;
  }
  workgroupBarrier();
  let slot = h * p.slots + c;
  for (var u4 = t; u4 < HD / 4u; u4 += WG) {
    var o = vec4<f32>(0.0);
    for (var gg = 0u; gg < groups; gg++) {
      let b = gg * HD + 4u * u4;
      o += vec4<f32>(part[b], part[b + 1u], part[b + 2u], part[b + 3u]);
    }
    part_o[slot * (HD / 4u) + u4] = o;
  }
  if (t == 0u) {
    var l = 0.0;
    for (var i = 0u; i < CK; i++) { l += pr[i]; }
    part_ml[slot] = vec2<f32>(m, l);
  }
}
