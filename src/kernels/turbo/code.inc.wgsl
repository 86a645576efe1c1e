// TurboQuant's group coder (turbo/format.ts), shared through `// #include "turbo/code.inc.wgsl"` by turbo.wgsl and
// turbo_rope.wgsl, so every append codes alike: codebooks, decision boundaries and sign patterns of the fork
// (llama-cpp-turboquant 69d8e4be4), the WHT's butterflies on a workgroup of 128 threads (thread t owns element t),
// f16 bits of the stored norm. `ty` is the index bits (2, 3, 4). The includer declares round_f16 (through
// common/round.inc.wgsl). Never compiled on its own.

const G = 128u;
const INV_SQRT_G = 0.08838834764831845;

var<private> C2: array<f32, 4> = array<f32, 4>(-0.133462, -0.039994, 0.039994, 0.133462);
var<private> C3: array<f32, 8> = array<f32, 8>(-0.190685, -0.117832, -0.065717, -0.021460,
  0.021460, 0.065717, 0.117832, 0.190685);
var<private> C4: array<f32, 16> = array<f32, 16>(-0.173926, -0.117195, -0.089527, -0.068756, -0.051262, -0.035597,
  -0.020989, -0.006938, 0.006938, 0.020989, 0.035597, 0.051262, 0.068756, 0.089527, 0.117195, 0.173926);
var<private> B2: array<f32, 3> = array<f32, 3>(-0.086728, 0.0, 0.086728);
var<private> B3: array<f32, 7> = array<f32, 7>(-0.154259, -0.091775, -0.043589, 0.0, 0.043589, 0.091775, 0.154259);
var<private> B4: array<f32, 15> = array<f32, 15>(-0.145560, -0.103361, -0.079142, -0.060009, -0.043430, -0.028293,
  -0.013963, 0.0, 0.013963, 0.028293, 0.043430, 0.060009, 0.079142, 0.103361, 0.145560);
var<private> S1: array<u32, 4> = array<u32, 4>(0xe46a0359u, 0x42f85949u, 0xa4c63bbbu, 0x49f250a9u);
var<private> S2: array<u32, 4> = array<u32, 4>(0x16acee90u, 0x3f628fdcu, 0xb7a5357au, 0xbea56562u);

var<workgroup> xs: array<f32, 128>;
var<workgroup> ids: array<u32, 128>;
var<workgroup> sum_out: f32;
var<workgroup> norm_bits: u32;

fn centroid(ty: u32, i: u32) -> f32 {
  if (ty == 2u) { return C2[i]; }
  if (ty == 3u) { return C3[i]; }
  return C4[i];
}

// The first index whose boundary exceeds v (the fork's chain of `if (val < mid) return i`).
fn nearest(ty: u32, v: f32) -> u32 {
  var i = 0u;
  if (ty == 2u) { for (var b = 0u; b < 3u; b++) { i += select(0u, 1u, !(v < B2[b])); } }
  if (ty == 3u) { for (var b = 0u; b < 7u; b++) { i += select(0u, 1u, !(v < B3[b])); } }
  if (ty == 4u) { for (var b = 0u; b < 15u; b++) { i += select(0u, 1u, !(v < B4[b])); } }
  return i;
}

fn sign1(t: u32) -> f32 { return select(1.0, -1.0, ((S1[t >> 5u] >> (t & 31u)) & 1u) == 1u); }
fn sign2(t: u32) -> f32 { return select(1.0, -1.0, ((S2[t >> 5u] >> (t & 31u)) & 1u) == 1u); }

// The butterflies of the WHT on xs (unnormalized), stage h pairing t and t + h.
fn butterflies(t: u32) {
  for (var s = 0u; s < 7u; s++) {
    let h = 1u << s;
    if ((t & h) == 0u) {
      let a = xs[t];
      let b = xs[t + h];
      xs[t] = a + b;
      xs[t + h] = a - b;
    }
    workgroupBarrier();
  }
}

// Thread 0 sums xs in element order into sum_out (every thread calls it).
fn serial_sum(t: u32) {
  workgroupBarrier();
  if (t == 0u) {
    var acc = 0.0;
    for (var i = 0u; i < G; i++) { acc += xs[i]; }
    sum_out = acc;
  }
  workgroupBarrier();
}

// f16 bits of v, an f16 value already (round_f16's output): normal, subnormal, zero or inf.
fn f16_bits(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  let s = (b >> 16u) & 0x8000u;
  let m = b & 0x7fffffffu;
  if (m >= 0x7f800000u) { return s | 0x7c00u | select(0u, 0x200u, m > 0x7f800000u); }
  if (m >= 0x38800000u) { return s | ((m - 0x38000000u) >> 13u); }
  return s | u32(bitcast<f32>(m) * 16777216.0);
}

fn f16_value(h: u32) -> f32 {
  let e = (h >> 10u) & 31u;
  let m = h & 0x3ffu;
  let s = (h & 0x8000u) << 16u;
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  if (e == 0u) { return select(1.0, -1.0, s != 0u) * f32(m) * 5.960464477539063e-8; }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// Byte b of the fork's block from the group's indices (ids) and norm (norm_bits).
fn block_byte(ty: u32, b: u32) -> u32 {
  if (b < 2u) { return (norm_bits >> (8u * b)) & 0xffu; }
  if (ty == 4u) {
    if (b < 4u) { return 0u; }
    let k = 2u * (b - 4u);
    return ids[k] | (ids[k + 1u] << 4u);
  }
  if (b < 34u) {
    let k = 4u * (b - 2u);
    return (ids[k] & 3u) | ((ids[k + 1u] & 3u) << 2u) | ((ids[k + 2u] & 3u) << 4u) | ((ids[k + 3u] & 3u) << 6u);
  }
  if (ty == 3u && b < 50u) {
    var v = 0u;
    for (var i = 0u; i < 8u; i++) { v |= ((ids[8u * (b - 34u) + i] >> 2u) & 1u) << i; }
    return v;
  }
  return 0u;
}

// Codes the group whose element t is v (every thread of the workgroup calls it, v = 0 past the head): the fork's
// CPU order, the squares summed in element order by thread 0 (written to workgroup memory first, so no driver
// contracts a square into the sum); leaves the indices in ids and the norm in norm_bits.
fn code_group(ty: u32, v: f32, t: u32) {
  xs[t] = v * v;
  serial_sum(t);
  let norm = sqrt(sum_out);
  let inv = select(0.0, 1.0 / norm, norm > 1e-10);
  xs[t] = v * inv * sign1(t);
  workgroupBarrier();
  butterflies(t);
  let idx = nearest(ty, xs[t] * (INV_SQRT_G * sign2(t)));
  ids[t] = idx;
  let c = centroid(ty, idx);
  xs[t] = c * c;
  serial_sum(t);
  if (t == 0u) {
    let rn = sqrt(sum_out);
    norm_bits = f16_bits(round_f16(select(norm, norm / rn, rn > 1e-10)));
  }
  workgroupBarrier();
}

// Word w of the coded group's block (after code_group).
fn block_word(ty: u32, w: u32) -> u32 {
  return block_byte(ty, 4u * w) | (block_byte(ty, 4u * w + 1u) << 8u) | (block_byte(ty, 4u * w + 2u) << 16u)
    | (block_byte(ty, 4u * w + 3u) << 24u);
}

// Words a block of type ty takes (the fork's 34, 50, 68 bytes, padded to whole words).
fn block_words(ty: u32) -> u32 { return select(select(17u, 13u, ty == 3u), 9u, ty == 2u); }
