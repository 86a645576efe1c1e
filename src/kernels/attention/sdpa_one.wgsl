// Attention for one query per head that sees every key (decode, S = 1), shaped for a GPU with far more cores than
// heads. Two dispatches:
//  - one_split: a workgroup per (chunk of CK keys, head). Scores: PK = WG / CK threads per key, each a strided
//    slice of the key's 16-byte units (8 bf16 or 4 f32); the slices are summed in shared memory. The chunk's max m,
//    weights e^(s - m) and their sum l stay in shared memory. Values: the threads form groups of `upr` (units per
//    row), group g takes keys g, g + groups, ... so each group reads whole rows coalesced; the groups' sums are
//    added in shared memory. Writes the chunk's unnormalised o[D] and (m, l). Chunks past kv_len return at once.
//  - one_merge: a workgroup per head: M = max m_c, L = sum l_c e^(m_c - M), out = round(sum o_c e^(m_c - M) / L),
//    then the gate (as ops' sigmoidGate, bit for bit), or 0 when there is no key.
// Every thread issues a couple of independent loads and no thread walks a long chain of them: a single workgroup
// per head (12 on HRM-1B, on a 132-SM H200) took 119 us at 641 keys, split-key flash decoding with 64-key blocks
// 82 us. The chunk count comes from the capacity, the live chunks from kv_len (a uniform), so a recorded decode
// step replays at any position. f32 inside; keys past kv_len read the last key with weight 0.

struct Params { kv_len: u32, cap: u32, scale: f32, n_chunks: u32, gate_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;               // [H, 1, D]
@group(0) @binding(2) var<storage, read> k4: array<vec4<u32>>;        // [H, cap, D]: f32 bits or packed bf16
@group(0) @binding(3) var<storage, read> v4: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> part_o: array<f32>;    // [H, n_chunks, D]
@group(0) @binding(5) var<storage, read_write> part_ml: array<vec2<f32>>;  // [H, n_chunks] (m, l)
@group(0) @binding(6) var<storage, read_write> out: array<f32>;       // [1, H * D]
@group(0) @binding(7) var<storage, read> gate: array<f32>;            // [1, >= H * D]: columns [0, H * D) (GATE)

override HD: u32 = 128;
override KV_BF16: bool = false;
override ROUND: u32 = 0;
override GATE: bool = false;

const WG: u32 = 256u;
const CK: u32 = 32u;
const PK: u32 = WG / CK;
const NEG: f32 = -1.0e30;

// q scaled, per 16-byte unit: the even elements of a bf16 unit (or the 4 of an f32 unit), and the odd ones.
var<workgroup> qe: array<vec4<f32>, HD / 4u>;
var<workgroup> qo: array<vec4<f32>, HD / 4u>;
var<workgroup> sp: array<f32, WG>;
var<workgroup> pr: array<f32, CK>;
var<workgroup> part: array<f32, WG * 8u>;   // groups * HD = WG * elements per unit

// #include "common/gate.inc.wgsl"

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

@compute @workgroup_size(WG)
fn one_split(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wid.x;
  let h = wid.y;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return; }   // the same for the whole workgroup
  let upr = HD / epu();
  for (var ui = t; ui < upr; ui += WG) {
    let b = h * HD + ui * epu();
    if (KV_BF16) {
      qe[ui] = vec4<f32>(q[b], q[b + 2u], q[b + 4u], q[b + 6u]) * p.scale;
      qo[ui] = vec4<f32>(q[b + 1u], q[b + 3u], q[b + 5u], q[b + 7u]) * p.scale;
    } else {
      qe[ui] = vec4<f32>(q[b], q[b + 1u], q[b + 2u], q[b + 3u]) * p.scale;
      qo[ui] = vec4<f32>(0.0);
    }
  }
  workgroupBarrier();
  let last = p.kv_len - 1u;
  let krow = (h * p.cap + min(k0 + t / PK, last)) * upr;
  var d = 0.0;
  for (var ui = t % PK; ui < upr; ui += PK) {
    let w = k4[krow + ui];
    d += dot(even(w), qe[ui]) + dot(odd(w), qo[ui]);
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
  for (var j = g; j < CK; j += groups) {
    let w = v4[(h * p.cap + min(k0 + j, last)) * upr + u];
    let pj = pr[j];
    ae += pj * even(w);
    ao += pj * odd(w);
  }
  let b = g * HD + u * epu();
  if (KV_BF16) {
    part[b] = ae.x; part[b + 1u] = ao.x; part[b + 2u] = ae.y; part[b + 3u] = ao.y;
    part[b + 4u] = ae.z; part[b + 5u] = ao.z; part[b + 6u] = ae.w; part[b + 7u] = ao.w;
  } else {
    part[b] = ae.x; part[b + 1u] = ae.y; part[b + 2u] = ae.z; part[b + 3u] = ae.w;
  }
  workgroupBarrier();
  let slot = h * p.n_chunks + c;
  for (var dd = t; dd < HD; dd += WG) {
    var o = 0.0;
    for (var gg = 0u; gg < groups; gg++) { o += part[gg * HD + dd]; }
    part_o[slot * HD + dd] = o;
  }
  if (t == 0u) {
    var l = 0.0;
    for (var i = 0u; i < CK; i++) { l += pr[i]; }
    part_ml[slot] = vec2<f32>(m, l);
  }
}

@compute @workgroup_size(WG)
fn one_merge(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.x;
  let live = (p.kv_len + CK - 1u) / CK;
  let first = h * p.n_chunks;
  var mx = NEG;
  for (var c = t; c < live; c += WG) { mx = max(mx, part_ml[first + c].x); }
  sp[t] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { sp[t] = max(sp[t], sp[t + s]); }
    workgroupBarrier();
  }
  let M = sp[0];
  // WG / HD subsets of the chunks, each thread one dim of one subset; then the subsets are added.
  let subsets = WG / HD;
  let d = t % HD;
  let si = t / HD;
  var o = 0.0;
  var l = 0.0;
  if (si < subsets) {
    for (var c = si; c < live; c += subsets) {
      let ml = part_ml[first + c];
      let w = exp(ml.x - M);
      o += part_o[(first + c) * HD + d] * w;
      l += ml.y * w;
    }
  }
  part[t] = o;
  part[WG + t] = l;
  workgroupBarrier();
  if (t < HD) {
    var oo = 0.0;
    var ll = 0.0;
    for (var s = 0u; s < subsets; s++) { oo += part[s * HD + t]; ll += part[WG + s * HD + t]; }
    var y = 0.0;
    if (ll > 0.0) { y = round_out(oo / ll); }
    y = gated(y, 0u, h * HD + t);
    out[h * HD + t] = y;
  }
}
