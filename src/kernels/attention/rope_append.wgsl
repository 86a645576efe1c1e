// One decode step's RoPE and KV-cache append in one dispatch, from the S new rows of gqkv [S, 4*H*D]
// (gate | q | k | v, head-major inside a block), whatever each cache side holds:
//   q_out[h, s, :] = r(RoPE(q block of head h, position offset + s))                     as ropeQ
//   K at [h, offset + s, :] = r(RoPE(k block)), V at [h, offset + s, :] = r(v block), stored as the side stores:
//     KM/VM 0 f32 (the value), 1 packed bf16 (its bf16 rounding)                       as appendKV / writeFull
//     2 quantized, group 64, Metal rules, scales/biases rounded (r)                     as ropeK / takeV + appendQuantized
// r() rounds per ROUND (0 none, 1 bf16, 2 f16). Position offset is the only uniform that changes from step to step.
// Workgroups of 64: the first ceil(n_pairs / 64) give a thread to each pair of neighbouring elements of [H, S, D]
// (n_pairs = H*S*D/2: q and the full sides; D is even, so a bf16 word never straddles positions and no two threads
// write one word); then one workgroup per group of 64 values of a quantized side, a lane per value (k_groups and
// v_groups: H*S*D/64 for a quantized side, else 0).
// The angle and sin/cos code is rope.wgsl's (rope/angle.inc.wgsl, through rope/elem.inc.wgsl) and the quantization quant.wgsl's
// (quant/affine.inc.wgsl, Metal rules, through attention/quant_group.inc.wgsl); the tests compare every output with
// the composed ops bit for bit. A decode step (S = 1) into two full or two quantized sides appends inside its
// attention instead (sdpa_one_append.wgsl, qsdpa_one_append.wgsl), with the same code and bits.

struct Params {
  n_pairs: u32, k_groups: u32, v_groups: u32, seq: u32, hd: u32, width: u32, k_cap: u32, v_cap: u32, offset: u32,
  log2_base: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;          // gqkv [S, 4 * width], width = H * D
@group(0) @binding(2) var<storage, read_write> q_out: array<f32>;  // [H, S, D]
// A side's data: f32 bits or packed bf16 [H, cap, D], or quantized words [H, cap, D * BITS / 32] with scales and
// biases [H, cap, D / 64] (placeholders for a full side).
@group(0) @binding(3) var<storage, read_write> kd: array<u32>;
@group(0) @binding(4) var<storage, read_write> ks: array<f32>;
@group(0) @binding(5) var<storage, read_write> kb: array<f32>;
@group(0) @binding(6) var<storage, read_write> vd: array<u32>;
@group(0) @binding(7) var<storage, read_write> vs: array<f32>;
@group(0) @binding(8) var<storage, read_write> vb: array<f32>;

override ROUND: u32 = 0;
override KM: u32 = 0;
override VM: u32 = 0;
override K_BITS: u32 = 4;
override V_BITS: u32 = 4;

// #include "common/round.inc.wgsl"

// #include "rope/elem.inc.wgsl"

// r(element d of head h, row s of the gqkv block at column col0), RoPE'd at position offset + s when `rope`.
fn elem(col0: u32, h: u32, s: u32, d: u32, rope: bool) -> f32 {
  return head_elem(s * 4u * p.width + col0 + h * p.hd, d, p.hd, p.offset + s, p.log2_base, rope);
}

// #include "quant/affine.inc.wgsl"

// Pair thread t: elements 2t and 2t + 1 of [H, S, D] into q_out and every full side.
fn pair(t: u32) {
  if (t >= p.n_pairs) { return; }
  let e = 2u * t;
  let d = e % p.hd;
  let h = (e / p.hd) / p.seq;
  let s = (e / p.hd) % p.seq;
  q_out[e] = elem(p.width, h, s, d, true);
  q_out[e + 1u] = elem(p.width, h, s, d + 1u, true);
  if (KM < 2u) {
    let a = elem(2u * p.width, h, s, d, true);
    let b = elem(2u * p.width, h, s, d + 1u, true);
    let at = (h * p.k_cap + p.offset + s) * p.hd + d;
    if (KM == 0u) { kd[at] = bitcast<u32>(a); kd[at + 1u] = bitcast<u32>(b); } else { kd[at / 2u] = pack_bf16(a, b); }
  }
  if (VM < 2u) {
    let a = elem(3u * p.width, h, s, d, false);
    let b = elem(3u * p.width, h, s, d + 1u, false);
    let at = (h * p.v_cap + p.offset + s) * p.hd + d;
    if (VM == 0u) { vd[at] = bitcast<u32>(a); vd[at + 1u] = bitcast<u32>(b); } else { vd[at / 2u] = pack_bf16(a, b); }
  }
}

var<workgroup> g_min: array<f32, 64>;
var<workgroup> g_max: array<f32, 64>;
var<workgroup> g_lv: array<u32, 64>;

// #include "attention/quant_group.inc.wgsl"

// Group g of the [H, S, D] block at column col0, quantized by its workgroup; `at` is its index in scales.
struct GroupOut { a: Affine, word: u32, at: u32 }

fn quant_group(col0: u32, g: u32, lane: u32, rope: bool, bits: u32, cap: u32) -> GroupOut {
  let gpr = p.hd / GROUP;
  let hs = g / gpr;
  let h = hs / p.seq;
  let s = hs % p.seq;
  let r = quant_lanes(elem(col0, h, s, (g % gpr) * GROUP + lane, rope), 0u, lane, bits);
  return GroupOut(r.a, r.word, (h * cap + p.offset + s) * gpr + g % gpr);
}

@compute @workgroup_size(64)
fn rope_append(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lane: u32) {
  // Branches depend on the workgroup only, so the group quantizers' barriers stay in uniform control flow.
  let wg = wid.x + wid.y * nwg.x;
  let pair_wgs = (p.n_pairs + 63u) / 64u;
  if (wg < pair_wgs) { pair(wg * 64u + lane); return; }
  let g = wg - pair_wgs;
  if (g < p.k_groups) {
    let r = quant_group(2u * p.width, g, lane, true, K_BITS, p.k_cap);
    if (lane == 0u) { ks[r.at] = round_out(r.a.scale); kb[r.at] = round_out(r.a.bias); }
    if (lane < 2u * K_BITS) { kd[r.at * 2u * K_BITS + lane] = r.word; }
    return;
  }
  if (g - p.k_groups < p.v_groups) {
    let r = quant_group(3u * p.width, g - p.k_groups, lane, false, V_BITS, p.v_cap);
    if (lane == 0u) { vs[r.at] = round_out(r.a.scale); vb[r.at] = round_out(r.a.bias); }
    if (lane < 2u * V_BITS) { vd[r.at * 2u * V_BITS + lane] = r.word; }
  }
}
