// Quantized matmul, as mx.quantized_matmul(x, wq, scales, biases, transpose, 64, bits), f32 x [M, K].
// Packing as in quant.wgsl: a row's values form a little-endian bit stream, 32 values in exactly BITS words.
// ACC picks the arithmetic:
//   0  MLX's Metal kernels: per run of 32 values sharing a group's scale and bias, scale * sum(x_i q_i) +
//      bias * sum(x_i), accumulated in f32; the output is rounded once to the dtype (ROUND).
//   1  MLX's CPU backend: sequential over k, every op rounded to the dtype: acc = r(acc + r(x * r(r(s * q) + b))).
//      In f32 `round_op` is an opaque no-op that keeps the products apart from the sums (no fma contraction).
// Variant 1 (qmm_t, transpose: out = x @ W^T, W [N, K] quantized along K): a workgroup covers WG / LANES weight
//   rows; the LANES threads of a row take its packs (32 values, BITS words) in turn, so a row is read in
//   contiguous runs, and each thread applies scale/bias per pack for TM rows of x. The lanes' partial sums are
//   added in lane order. LANES = 1 keeps the sequential order ACC 1 needs.
// Variant 2 (qmm_n, no transpose: out = x @ W, W [K, N] quantized along N): a workgroup of (64 columns, KS slices
//   of k); each thread sums its slice for TM rows of x, neighbouring threads read neighbouring values of each
//   weight row; the slices are added in order. KS = 1 is sequential.

struct Params { m: u32, n: u32, k: u32, zero: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wq: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> biases: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

override BITS: u32 = 4;
override ROUND: u32 = 0;   // 0 f32, 1 bf16, 2 f16
override ACC: u32 = 0;     // 0 Metal (f32 accumulation), 1 MLX CPU (every op rounded, sequential)
override TM: u32 = 1;      // rows of x per thread, <= 8
override WG: u32 = 64;     // qmm_t threads per workgroup
override LANES: u32 = 8;   // qmm_t threads per weight row, a power of two dividing WG
override KS: u32 = 1;      // qmm_n slices of k, 64 * KS <= 256

const MAXTM: u32 = 8u;

var<workgroup> part: array<f32, 2048>;  // partial sums: [thread][MAXTM]

fn packed_word(i: u32) -> u32 { return wq[i]; }

// #include "quant/packed.inc.wgsl"

// Loops over the TM rows of a thread have constant bounds (rows past M repeat row M-1 and are not written), so
// the accumulators stay in registers.
@compute @workgroup_size(WG)
fn qmm_t(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n = wid.x * (WG / LANES) + lid / LANES;
  let lane = lid % LANES;
  let m0 = wid.y * TM;
  let last = min(TM, p.m - m0) - 1u;
  let packs = p.k / 32u;
  let gpr = p.k / 64u;
  var acc: array<f32, MAXTM>;
  var dot: array<f32, MAXTM>;
  var xs: array<f32, MAXTM>;
  for (var t = 0u; t < TM; t++) { acc[t] = 0.0; }
  if (n < p.n) {
    let base = n * packs * BITS;
    for (var pk = lane; pk < packs; pk += LANES) {
      let s = scales[n * gpr + pk / 2u];
      let b = biases[n * gpr + pk / 2u];
      for (var t = 0u; t < TM; t++) { dot[t] = 0.0; xs[t] = 0.0; }
      var win = pack_window(base + pk * BITS);
      for (var e = 0u; e < 32u; e++) {
        let lv = pack_level(&win, e);
        let j = pk * 32u + e;
        for (var t = 0u; t < TM; t++) {
          let xv = x[(m0 + min(t, last)) * p.k + j];
          if (ACC == 1u) {
            acc[t] = round_op(acc[t] + round_op(xv * round_op(round_op(s * lv) + b)));
          } else {
            dot[t] += xv * lv;
            xs[t] += xv;
          }
        }
      }
      if (ACC == 0u) {
        for (var t = 0u; t < TM; t++) { acc[t] += s * dot[t] + b * xs[t]; }
      }
    }
  }
  if (LANES > 1u) {
    for (var t = 0u; t < TM; t++) { part[lid * MAXTM + t] = acc[t]; }
    workgroupBarrier();
    if (lane != 0u) { return; }
    for (var t = 0u; t < TM; t++) {
      var total = 0.0;
      for (var l = 0u; l < LANES; l++) { total += part[(lid + l) * MAXTM + t]; }
      acc[t] = total;
    }
  }
  if (n >= p.n) { return; }
  for (var t = 0u; t < TM; t++) {
    if (t <= last) { out[(m0 + t) * p.n + n] = round_out(acc[t]); }
  }
}

@compute @workgroup_size(64, KS)
fn qmm_n(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = wid.x * 64u + lid.x;
  let m0 = wid.y * TM;
  let last = min(TM, p.m - m0) - 1u;
  let gpr = p.n / 64u;
  let wpr = gpr * 2u * BITS;
  let per = (p.k + KS - 1u) / KS;
  let k1 = min(p.k, (lid.y + 1u) * per);
  var acc: array<f32, MAXTM>;
  for (var t = 0u; t < TM; t++) { acc[t] = 0.0; }
  if (n < p.n) {
    for (var k = lid.y * per; k < k1; k++) {
      let lv = level(k * wpr, n);
      let s = scales[k * gpr + n / 64u];
      let b = biases[k * gpr + n / 64u];
      if (ACC == 1u) {
        let w = round_op(round_op(s * lv) + b);
        for (var t = 0u; t < TM; t++) { acc[t] = round_op(acc[t] + round_op(x[(m0 + min(t, last)) * p.k + k] * w)); }
      } else {
        let w = s * lv + b;
        for (var t = 0u; t < TM; t++) { acc[t] += x[(m0 + min(t, last)) * p.k + k] * w; }
      }
    }
  }
  if (KS > 1u) {
    for (var t = 0u; t < TM; t++) { part[(lid.y * 64u + lid.x) * MAXTM + t] = acc[t]; }
    workgroupBarrier();
    if (lid.y != 0u) { return; }
    for (var t = 0u; t < TM; t++) {
      var total = 0.0;
      for (var l = 0u; l < KS; l++) { total += part[(l * 64u + lid.x) * MAXTM + t]; }
      acc[t] = total;
    }
  }
  if (n >= p.n) { return; }
  for (var t = 0u; t < TM; t++) {
    if (t <= last) { out[(m0 + t) * p.n + n] = round_out(acc[t]); }
  }
}
