// Declarations and helpers shared by the quantized linear kernels (qlinear.wgsl; qlinear_vec4.wgsl: qgemv4),
// through `// #include "qlinear/qlinear.inc.wgsl"`: uniforms and bindings, the constants, level and scale / bias
// reads, qgemv's row slots, norm prologue and output side. See qlinear.wgsl for the variants. Never compiled alone.

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32, eps: f32, escale: f32, vocab: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wq: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<u32>;
@group(0) @binding(4) var<storage, read> biases: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read> ids: array<u32>;
@group(0) @binding(7) var<storage, read_write> packed: array<u32>;
// Wide views used only by qgemv4.
@group(0) @binding(8) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> wq4: array<vec4<u32>>;

override BITS: u32 = 4u;
override GS: u32 = 64u;
override ROUND: u32 = 0u;
override SDT: u32 = 0u;
override WG: u32 = 64u;    // qgemv lanes (power of two), qrows / qembed threads per workgroup
override ROWS: u32 = 2u;   // qgemv weight rows per workgroup, <= 4 (qgemv4: <= 16, ROWS x MB <= MAXACC; even with SWIGLU)
override MB: u32 = 1u;     // qgemv x rows per workgroup, <= 4
override TX: u32 = 16u;
override TY: u32 = 16u;
// qtiled's 4 x 4 register block per thread, fixed (four vec4 accumulators: see matmul_tiled.wgsl for why).
const TM: u32 = 4u;
const TN: u32 = 4u;
override BK: u32 = 16u;
override NORM: bool = false;
override SWIGLU: bool = false;
override ACC: bool = false;

var<workgroup> red: array<f32, WG * ROWS * MB>;
const MAXACC: u32 = 16u;
var<workgroup> Xs: array<f32, BK * TY * TM>;
var<workgroup> Ws: array<f32, BK * TX * TN>;

// #include "common/round.inc.wgsl"

// Words of one packed weight row.
fn row_words() -> u32 { return p.K / 32u * BITS; }

// Level of value k of weight row n (bit stream; 3/5/6-bit values may straddle two words).
fn level_at(n: u32, k: u32) -> f32 {
  let bit = k * BITS;
  let wi = n * row_words() + (bit >> 5u);
  let sh = bit & 31u;
  var v = wq[wi] >> sh;
  if (sh + BITS > 32u) { v |= wq[wi + 1u] << (32u - sh); }
  return f32(v & ((1u << BITS) - 1u));
}

// #include "qlinear/qaffine.inc.wgsl"
// #include "matmul/gemv_out.inc.wgsl"

// x values as the dot products use them: rms-normalised and rounded with NORM (inv = the row's inverse RMS).
fn xn4(v: vec4<f32>, inv: f32) -> vec4<f32> {
  if (NORM) { return vec4<f32>(round_out(v.x * inv), round_out(v.y * inv), round_out(v.z * inv), round_out(v.w * inv)); }
  return v;
}

// Weight row of qgemv slot r in block blk: ROWS consecutive rows, or with SWIGLU ROWS / 2 gate rows then their up
// rows (N / 2 further on). Slots past the end repeat the last row; they are computed and never written.
fn slot_row(blk: u32, r: u32) -> u32 {
  if (!SWIGLU) { return min(blk * ROWS + r, p.N - 1u); }
  let P = ROWS / 2u;
  let i = min(blk * P + r % P, p.N / 2u - 1u);
  return i + select(0u, p.N / 2u, r >= P);
}

// The x rows' inverse RMS from the lanes' sums of squares in red (segment m for x row m0 + m).
fn block_inv(lid: u32) -> array<f32, 4> {
  tree_sum(MB, lid);
  var inv: array<f32, 4>;
  for (var m = 0u; m < MB; m++) { inv[m] = inverseSqrt(red[m * WG] / f32(p.K) + p.eps); }
  workgroupBarrier();   // all lanes have read the totals before the partial sums overwrite them
  return inv;
}
