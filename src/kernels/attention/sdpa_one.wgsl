// One query per head over the whole cache in a single workgroup (decode, S = 1, every key visible): the kernel a
// decode step runs once per layer. The split-key path (sdpa_decode.wgsl) needs a second dispatch to merge its
// chunks; at a few thousand keys one workgroup streams a head's K and V (~0.3 MB at 600 bf16 keys) faster than a
// second dependent dispatch costs.
// Keys are walked in tiles of TILE = WG * KPT with an online softmax (running max m, sum l, accumulator rescaled by
// e^(m_old - m_new) per tile), all in f32; the output is rounded once (ROUND) and gated like sdpa_decode.wgsl.
//  - scores: thread t takes keys b + t + i*WG of the tile and reads each row as 16-byte units (8 bf16 or 4 f32);
//    tile max and sum by tree reductions in shared memory;
//  - values: threads form `groups` rows of `upr` threads (upr = units per row), row g takes keys g, g + groups, ...
//    of the tile, so every group reads whole rows coalesced; the groups' accumulators are summed at the end.
// With 12 workgroups on a 132-SM GPU each workgroup waits on memory latency, not bandwidth: both loops load
// several rows before using any (a first version that loaded one value row per step took 119 us at 641 keys on
// an H200, against the 82 us of split + combine).
// Needs HD % 8 == 0 (bf16) or HD % 4 == 0 (f32) with HD / (elements per unit) dividing WG, 16-byte aligned K/V.
// #include "common/half.inc.wgsl"

struct Params { kv_len: u32, cap: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;          // [H, 1, D]
@group(0) @binding(2) var<storage, read> k4: array<vec4<u32>>;   // [H, cap, D]: f32 bits or packed bf16
@group(0) @binding(3) var<storage, read> v4: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [1, H * D]
@group(0) @binding(5) var<storage, read> gate: array<f32>;       // [1, >= H * D]: columns [0, H * D) (GATE)

override HD: u32 = 128;
override KV_BF16: bool = false;
override ROUND: u32 = 0;
override GATE: bool = false;

const WG: u32 = 256u;
const KPT: u32 = 4u;
const TILE: u32 = WG * KPT;
const UNROLL: u32 = 8u;
const NEG: f32 = -1.0e30;

var<workgroup> qs: array<f32, HD>;
var<workgroup> sc: array<f32, TILE>;
var<workgroup> red: array<f32, WG>;
var<workgroup> part: array<f32, WG * 8u>;   // groups * HD = WG * elements per unit

fn round_out(x: f32) -> f32 {
  if (ROUND == 1u) { return round_bf16(x); }
  if (ROUND == 2u) { return round_f16(x); }
  return x;
}

fn sigmoid(x: f32) -> f32 {
  let y = 1.0 / (1.0 + exp(abs(x)));
  return select(1.0 - y, y, x < 0.0);
}

// Elements 0..7 of one 16-byte unit (bf16: all 8; f32: the first 4).
fn unit(w: vec4<u32>) -> array<f32, 8> {
  if (KV_BF16) {
    let a = unpack2x16bf16(w.x);
    let b = unpack2x16bf16(w.y);
    let c = unpack2x16bf16(w.z);
    let d = unpack2x16bf16(w.w);
    return array<f32, 8>(a.x, a.y, b.x, b.y, c.x, c.y, d.x, d.y);
  }
  let f = bitcast<vec4<f32>>(w);
  return array<f32, 8>(f.x, f.y, f.z, f.w, 0.0, 0.0, 0.0, 0.0);
}

fn tree(t: u32, is_max: bool) -> f32 {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] = select(red[t] + red[t + s], max(red[t], red[t + s]), is_max); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();   // every thread has read red[0] before red is written again
  return r;
}

@compute @workgroup_size(WG)
fn sdpa_one(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wid.x;
  let epu = select(4u, 8u, KV_BF16);
  let upr = HD / epu;
  let groups = WG / upr;
  let g = t / upr;
  let u = t % upr;
  for (var d = t; d < HD; d += WG) { qs[d] = q[h * HD + d] * p.scale; }
  let row0 = h * p.cap;
  var m = NEG;
  var l = 0.0;
  var acc: array<f32, 8>;
  for (var b = 0u; b < p.kv_len; b += TILE) {
    workgroupBarrier();   // q loaded / the last tile's readers of sc done
    // KPT keys per thread, their rows read side by side (rows clamped to a valid key, masked after), so each step
    // issues KPT independent loads: one decode workgroup per head lives on the latency of these loads.
    var rows: array<u32, KPT>;
    var dots: array<f32, KPT>;
    for (var i = 0u; i < KPT; i++) {
      rows[i] = (row0 + min(b + t + i * WG, p.kv_len - 1u)) * upr;
      dots[i] = 0.0;   // explicitly: some compilers keep a loop-body var's value from the last iteration
    }
    for (var x = 0u; x < upr; x++) {
      var w: array<vec4<u32>, KPT>;
      for (var i = 0u; i < KPT; i++) { w[i] = k4[rows[i] + x]; }
      for (var i = 0u; i < KPT; i++) {
        var e = unit(w[i]);
        for (var y = 0u; y < epu; y++) { dots[i] += qs[x * epu + y] * e[y]; }
      }
    }
    var tmax = NEG;
    for (var i = 0u; i < KPT; i++) {
      var s = NEG;
      if (b + t + i * WG < p.kv_len) { s = dots[i]; }
      sc[t + i * WG] = s;
      tmax = max(tmax, s);
    }
    red[t] = tmax;
    let m_new = max(m, tree(t, true));
    var psum = 0.0;
    for (var i = 0u; i < KPT; i++) {
      let s = sc[t + i * WG];
      var e = 0.0;
      if (s > NEG) { e = exp(s - m_new); }
      sc[t + i * WG] = e;
      psum += e;
    }
    red[t] = psum;
    let lt = tree(t, false);
    let alpha = exp(m - m_new);
    l = l * alpha + lt;
    for (var y = 0u; y < 8u; y++) { acc[y] *= alpha; }
    m = m_new;
    // Values: UNROLL keys of the group per step, loaded together (keys past the tile's end read its last key
    // with weight 0).
    let n = min(TILE, p.kv_len - b);
    for (var c = g; c < n; c += groups * UNROLL) {
      var vw: array<vec4<u32>, UNROLL>;
      var pw: array<f32, UNROLL>;
      for (var i = 0u; i < UNROLL; i++) {
        let ci = c + i * groups;
        let cc = min(ci, n - 1u);
        vw[i] = v4[(row0 + b + cc) * upr + u];
        pw[i] = select(0.0, sc[cc], ci < n);
      }
      for (var i = 0u; i < UNROLL; i++) {
        var e = unit(vw[i]);
        for (var y = 0u; y < epu; y++) { acc[y] += pw[i] * e[y]; }
      }
    }
  }
  workgroupBarrier();
  for (var y = 0u; y < epu; y++) { part[g * HD + u * epu + y] = acc[y]; }
  workgroupBarrier();
  for (var d = t; d < HD; d += WG) {
    var o = 0.0;
    for (var gg = 0u; gg < groups; gg++) { o += part[gg * HD + d]; }
    var y = 0.0;
    if (l > 0.0) { y = round_out(o / l); }
    if (GATE) { y = round_out(round_out(sigmoid(gate[h * HD + d])) * y); }
    out[h * HD + d] = y;
  }
}
