// Group-wise affine quantization (groups of GS = 32, 64 or 128 along the last axis), as MLX's Metal `affine_quantize`.
// Variant 1 (quantize): one thread per group. Pass 1 finds w_min and w_max (RULES 0, Metal: the running max starts
// at 0; RULES 1, MLX's CPU backend: the true max); then, in f32,
//   scale = max((w_max - w_min) / n_bins, 1e-7); side = |w_min| > |w_max|; scale = side ? scale : -scale;
//   edge = side ? w_min : w_max; q0 = round(edge / scale); q0 != 0: scale = edge / q0, bias = edge; else bias = 0;
//   level = min(round((w - bias) / scale), n_bins)         (round: Metal halves away from zero; CPU halves to even)
// Levels use the f32 scale/bias; the stored scale/bias are rounded to the activation dtype (ROUND). Every division
// is the correctly rounded IEEE quotient (div_rn), because WGSL's `/` may be 2.5 ulp off and levels often sit on
// exact halves. Levels are packed as a little-endian bit stream: value j of a row occupies bits
// [j*BITS, (j+1)*BITS), so a group is exactly GS*BITS/32 words and 3/5/6-bit values may straddle two words.
// The destination row of source row r = head*src_rows + s is head*dst_rows + dst_row0 + s: plain quantization
// uses src_rows = dst_rows, dst_row0 = 0; a KV-cache append writes S new positions at a cache offset.
// The scale/bias and level math is affine.inc.wgsl's (rope_append.wgsl quantizes with the same code).

struct Params { groups: u32, gpr: u32, src_rows: u32, dst_rows: u32, dst_row0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> q: array<u32>;
@group(0) @binding(3) var<storage, read_write> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> biases: array<f32>;

override BITS: u32 = 4;
override ROUND: u32 = 0;   // 0 f32, 1 bf16, 2 f16
override RULES: u32 = 0;   // 0 Metal, 1 MLX CPU backend
override GS: u32 = 64;     // values per group
override WG: u32 = 64;

// #include "common/round.inc.wgsl"

// #include "quant/affine.inc.wgsl"

@compute @workgroup_size(WG)
fn quantize(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let gi = gid.x + gid.y * nwg.x * WG;
  if (gi >= p.groups) { return; }
  let row = gi / p.gpr;
  let g = gi % p.gpr;
  let src = row * p.gpr * GS + g * GS;
  let drow = (row / p.src_rows) * p.dst_rows + p.dst_row0 + row % p.src_rows;

  var w_min = 3.4028234663852886e38;
  var w_max = select(0.0, -3.4028234663852886e38, RULES == 1u);  // the CPU's -inf start, for finite inputs
  for (var i = 0u; i < GS; i++) {
    let v = w[src + i];
    w_min = min(w_min, v);
    w_max = max(w_max, v);
  }
  let a = affine_of(w_min, w_max, BITS, RULES == 1u);
  scales[drow * p.gpr + g] = round_out(a.scale);
  biases[drow * p.gpr + g] = round_out(a.bias);

  let wpg = GS * BITS / 32u;  // words per group
  var words: array<u32, 32>;  // wpg <= 128 * 8 / 32
  for (var i = 0u; i < wpg; i++) { words[i] = 0u; }
  for (var i = 0u; i < GS; i++) {
    let lv = level_of(w[src + i], a, BITS, RULES == 1u);
    let bit = i * BITS;
    let s = bit & 31u;
    words[bit >> 5u] |= lv << s;
    if (s + BITS > 32u) { words[(bit >> 5u) + 1u] |= lv >> (32u - s); }
  }
  let dst = drow * p.gpr * wpg + g * wpg;
  for (var i = 0u; i < wpg; i++) { q[dst + i] = words[i]; }
}
