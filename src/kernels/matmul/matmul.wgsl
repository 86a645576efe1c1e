// out[m, col0 + n] = round(sum_k x[m, k] * w[n, k])   (x @ W^T, as nn.Linear; f32 accumulation, one rounding)
// x: f32 [M, K]. w: one row-chunk [N, K] of the weight, f32 or bf16/f16 packed two per u32 (element e in word
// e >> 1, low half when e is even). out: f32 [M, ldo]; a chunk writes columns col0 .. col0 + N.
// WDT picks the weight dtype (0 f32, 1 bf16, 2 f16) and ROUND the output rounding (0 none, 1 bf16, 2 f16), both
// pipeline constants, so each variant compiles to straight-line code.
//
// Variants:
//  1. gemv_vec4   (decode, short prefill): a workgroup owns ROWS weight rows and MB <= 4 x rows (more x rows:
//     more blocks along z); its WG lanes stride along K reading one vec4<u32> (8 bf16/f16 or 4 f32 weights) per
//     row per step, for every x row of the block, then reduce across the workgroup in shared memory (log2 WG
//     barriers, once per workgroup). Needs row starts on 16-byte boundaries: K % 8 == 0 for halves, K % 4 == 0
//     for f32, tensors at 16-byte offsets.
//  2. gemv_word   (decode, any K): the same shape of work reading one u32 word per lane per step; the first and
//     last word of a row may straddle a neighbouring row when K is odd, so those halves are masked. Kept for
//     shapes variant 1 cannot take: 2-3x slower than it on an H200 (HRM-1B shapes, M = 1 and 4).
//  3. matmul_tiled (prefill): BM x BN output tiles (BM = TY*TM, BN = TX*TN), each thread a TM x TN register block
//     (rows ty + i*TY, columns tx + j*TX: conflict-free shared reads, coalesced writes); K walked in BK slices
//     staged through shared memory with the weights widened to f32 once. Any M, N, K. On an H200 with
//     16x16 threads, 4x4 outputs and BK 8: 5-7 TFLOP/s at M = 64, 9-17 at M = 512 (4x8 outputs: up to 20).
//  4. gemv_rows    (CPU drivers, any M): one thread per output, a plain loop over K; chosen when the adapter is a
//     CPU implementation (Gpu.cpu), where barriers dominate: 30-100x faster than 1-3 there. gemv_rows4 is the
//     same with one vec4<u32> load per step, for 16-byte rows.
//
// Fusions (pipeline constants, so a decode layer needs no separate norm, activation or residual dispatch; matmul.ts
// says which paths use them):
//  NORM   (1, 2) x rows are scaled as rmsNorm does first, xn = round(x * inverseSqrt(mean(x^2) + eps)): a
//         prologue finds each x row's inverse RMS (a workgroup reduction) and the dot product multiplies
//         round(x * inv). x is tiny and stays in cache. Not in 4: a thread per output would redo the row's norm
//         for every output, which on a CPU driver costs more than the separate rmsNorm dispatch matmul.ts runs.
//  SWIGLU (1, 2, 4) w is [gate; up], [2I, K], and out[m, i] = r(r(g * r(sigmoid(g))) * u), g and u the rounded
//         sums of rows i and I + i, which one workgroup (one thread in 4) computes side by side.
//  ACC    (all) residual epilogue out = round(out + round(sum)), in place; the old value is read through `out`
//         itself (one buffer cannot be bound read-only and read-write in the same dispatch).
// Subgroup reductions are not used: `enable subgroups` cannot sit behind an override (it would fail to compile
// where the feature is absent), and the reduction is a small part of the work next to streaming the weights.

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Wide views used only by gemv_vec4 and gemv_rows4.
@group(0) @binding(4) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> w4: array<vec4<u32>>;

override WDT: u32 = 1u;
override ROUND: u32 = 0u;
// gemv: lanes per workgroup (power of two), weight rows per workgroup, x rows per workgroup (ROWS * MB <= 16).
override WG: u32 = 64u;
override ROWS: u32 = 4u;
override MB: u32 = 1u;
// tiled: threads per workgroup along N (TX) and M (TY), outputs per thread (TM x TN <= MAXT x MAXT), K slice.
override TX: u32 = 16u;
override TY: u32 = 16u;
override TM: u32 = 4u;
override TN: u32 = 4u;
override BK: u32 = 16u;
// Fusions (above).
override NORM: bool = false;
override SWIGLU: bool = false;   // needs an even ROWS in the workgroup kernels
override ACC: bool = false;

const MAXACC: u32 = 16u;
const MAXT: u32 = 8u;

var<workgroup> red: array<f32, WG * ROWS * MB>;
var<workgroup> As: array<f32, BK * TY * TM>;
var<workgroup> Bs: array<f32, BK * TX * TN>;

// #include "common/round.inc.wgsl"

// #include "matmul/gemv_out.inc.wgsl"

// An x value as the dot product uses it: rms-normalised and rounded with NORM (inv = the row's inverse RMS).
fn xn(v: f32, inv: f32) -> f32 {
  if (NORM) { return round_out(v * inv); }
  return v;
}

fn xn4(v: vec4<f32>, inv: f32) -> vec4<f32> {
  if (NORM) { return vec4<f32>(round_out(v.x * inv), round_out(v.y * inv), round_out(v.z * inv), round_out(v.w * inv)); }
  return v;
}

// rmsNorm's scale from a row's sum of squares.
fn inv_rms(ss: f32) -> f32 {
  return inverseSqrt(ss / f32(p.K) + p.eps);
}

// Both halves of a packed word, (element 2i, element 2i + 1).
fn halves(word: u32) -> vec2<f32> {
  if (WDT == 2u) { return unpack2x16float(word); }
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

// Weight element e of the chunk, widened to f32.
fn weight(e: u32) -> f32 {
  if (WDT == 0u) { return bitcast<f32>(w[e]); }
  let h = halves(w[e >> 1u]);
  return select(h.x, h.y, (e & 1u) == 1u);
}

// dot of one vec4<u32> of weights with the x values it multiplies: a (f32 weights), or a then b (halves).
fn dot_unit(wv: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), a); }
  let h0 = halves(wv.x);
  let h1 = halves(wv.y);
  let h2 = halves(wv.z);
  let h3 = halves(wv.w);
  return dot(vec4<f32>(h0.x, h1.x, h2.x, h3.x), vec4<f32>(a.x, a.z, b.x, b.z))
       + dot(vec4<f32>(h0.y, h1.y, h2.y, h3.y), vec4<f32>(a.y, a.w, b.y, b.w));
}

// The (normalised) x values one weight unit of x4 row position xi multiplies: a, and b for halves.
fn x_unit(xi: u32, inv: f32) -> array<vec4<f32>, 2> {
  let a = xn4(x4[xi], inv);
  if (WDT == 0u) { return array<vec4<f32>, 2>(a, a); }
  return array<vec4<f32>, 2>(a, xn4(x4[xi + 1u], inv));
}

// Weight row in row slot r of gemv block blk: ROWS consecutive rows, or with SWIGLU ROWS / 2 gate rows followed by
// their up rows N / 2 further on, so one workgroup sees both halves of its outputs. Slots past the end repeat the
// last row (computed, never stored).
fn wrow(blk: u32, r: u32) -> u32 {
  if (SWIGLU) {
    let half = p.N / 2u;
    let i = min(blk * (ROWS / 2u) + r % (ROWS / 2u), half - 1u);
    return select(i, half + i, r >= ROWS / 2u);
  }
  return min(blk * ROWS + r, p.N - 1u);
}

// x[i]^2 (x4[i] squared) for i < end, else 0: the workgroup kernels' NORM prologue takes four strides of a row per
// step, all rows at once, so that the loads are in flight together (x comes from cache: the loop waits on its
// latency, not on bandwidth).
fn sq(i: u32, end: u32) -> f32 {
  let v = x[min(i, end - 1u)];
  return select(0.0, v * v, i < end);
}

fn sq4(i: u32, end: u32) -> vec4<f32> {
  let v = x4[min(i, end - 1u)];
  return select(vec4<f32>(), v * v, i < end);
}

// NORM prologue of the workgroup kernels: part[m] is this lane's share of the sum of squares of block row m;
// returns each block row's inverse RMS, the same in every lane.
fn block_inv(part: array<f32, 4>, lid: u32) -> array<f32, 4> {
  for (var m = 0u; m < MB; m++) { red[m * WG + lid] = part[m]; }
  tree_sum(MB, lid);
  var inv: array<f32, 4>;
  for (var m = 0u; m < MB; m++) { inv[m] = inv_rms(red[m * WG]); }
  workgroupBarrier();   // every lane has read red before reduce_store overwrites it
  return inv;
}

@compute @workgroup_size(WG)
fn gemv_vec4(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;            // vec4 units per weight row
  let xpr = p.K / 4u;             // vec4 per x row
  let xstep = select(2u, 1u, WDT == 0u);
  var inv: array<f32, 4>;
  if (NORM) {
    var part: array<f32, 4>;
    for (var j = lid; j < xpr; j += 4u * WG) {
      for (var m = 0u; m < MB; m++) {
        let e = (min(m0 + m, p.M - 1u) + 1u) * xpr;   // end of the row
        let s = sq4(e - xpr + j, e) + sq4(e - xpr + j + WG, e) + sq4(e - xpr + j + 2u * WG, e) + sq4(e - xpr + j + 3u * WG, e);
        part[m] += s.x + s.y + s.z + s.w;
      }
    }
    inv = block_inv(part, lid);
  }
  var base: array<u32, 4>;        // ROWS <= 4 for this variant
  for (var r = 0u; r < ROWS; r++) { base[r] = wrow(blk, r) * upr; }
  var acc: array<f32, MAXACC>;
  var wv: array<vec4<u32>, 4>;
  for (var u = lid; u < upr; u += WG) {
    for (var r = 0u; r < ROWS; r++) { wv[r] = w4[base[r] + u]; }
    for (var m = 0u; m < MB; m++) {
      let xs = x_unit(min(m0 + m, p.M - 1u) * xpr + u * xstep, inv[m]);
      for (var r = 0u; r < ROWS; r++) { acc[m * ROWS + r] += dot_unit(wv[r], xs[0], xs[1]); }
    }
  }
  reduce_store(acc, lid, blk, m0);
}

@compute @workgroup_size(WG)
fn gemv_word(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  var inv: array<f32, 4>;
  if (NORM) {
    var part: array<f32, 4>;
    for (var k = lid; k < p.K; k += 4u * WG) {
      for (var m = 0u; m < MB; m++) {
        let e = (min(m0 + m, p.M - 1u) + 1u) * p.K;
        part[m] += sq(e - p.K + k, e) + sq(e - p.K + k + WG, e) + sq(e - p.K + k + 2u * WG, e) + sq(e - p.K + k + 3u * WG, e);
      }
    }
    inv = block_inv(part, lid);
  }
  var acc: array<f32, MAXACC>;
  for (var r = 0u; r < ROWS; r++) {
    let e0 = wrow(blk, r) * p.K;   // first element of the row
    if (WDT == 0u) {
      for (var k = lid; k < p.K; k += WG) {
        let wk = bitcast<f32>(w[e0 + k]);
        for (var m = 0u; m < MB; m++) { acc[m * ROWS + r] += wk * xn(x[min(m0 + m, p.M - 1u) * p.K + k], inv[m]); }
      }
    } else {
      let first = e0 >> 1u;
      let words = ((e0 + p.K + 1u) >> 1u) - first;
      for (var j = lid; j < words; j += WG) {
        let h = halves(w[first + j]);
        let k = i32(2u * (first + j)) - i32(e0);   // row position of the low half; -1 when the row starts odd
        let lo = k >= 0;
        let hi = u32(k + 1) < p.K;
        for (var m = 0u; m < MB; m++) {
          let xr = min(m0 + m, p.M - 1u) * p.K;
          var s = 0.0;
          if (lo) { s += h.x * xn(x[xr + u32(k)], inv[m]); }
          if (hi) { s += h.y * xn(x[xr + u32(k + 1)], inv[m]); }
          acc[m * ROWS + r] += s;
        }
      }
    }
  }
  reduce_store(acc, lid, blk, m0);
}

// Dot product of weight row n of the chunk with the x row starting at xr, a plain loop over K (gemv_rows).
fn row_dot(n: u32, xr: u32) -> f32 {
  let e0 = n * p.K;
  var acc = 0.0;
  if (WDT != 0u && (e0 & 1u) == 0u) {
    let w0 = e0 >> 1u;
    let pairs = p.K >> 1u;
    for (var j = 0u; j < pairs; j++) {
      let h = halves(w[w0 + j]);
      acc += h.x * x[xr + 2u * j] + h.y * x[xr + 2u * j + 1u];
    }
    if ((p.K & 1u) == 1u) { acc += weight(e0 + p.K - 1u) * x[xr + p.K - 1u]; }
  } else {
    for (var k = 0u; k < p.K; k++) { acc += weight(e0 + k) * x[xr + k]; }
  }
  return acc;
}

// One thread per output (row n of the weight, row m of x, m = workgroup z): a plain loop over K, no shared
// memory and no barriers. Slow on GPUs (lanes read different rows), fast on CPU drivers (SwiftShader,
// llvmpipe), where a workgroup barrier costs more than the arithmetic of a small matrix-vector product.
@compute @workgroup_size(WG)
fn gemv_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= select(p.N, p.N / 2u, SWIGLU) || m >= p.M) { return; }
  let xr = m * p.K;
  var v = round_out(row_dot(n, xr));
  if (SWIGLU) { v = silu_mul(v, round_out(row_dot(p.N / 2u + n, xr))); }
  store(m, n, v);
}

// row_dot with one vec4<u32> of weights per step (8 halves or 4 f32), for 16-byte rows; x0 is in vec4 units.
fn row_dot4(n: u32, x0: u32) -> f32 {
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;
  let xstep = select(2u, 1u, WDT == 0u);
  var acc = 0.0;
  for (var u = 0u; u < upr; u++) {
    let xs = x_unit(x0 + u * xstep, 1.0);   // NORM is never set here (matmul.ts normalises first)
    acc += dot_unit(w4[n * upr + u], xs[0], xs[1]);
  }
  return acc;
}

// gemv_rows with vec4 loads (row_dot4): a quarter of the loads.
@compute @workgroup_size(WG)
fn gemv_rows4(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= select(p.N, p.N / 2u, SWIGLU) || m >= p.M) { return; }
  let x0 = m * (p.K / 4u);
  var v = round_out(row_dot4(n, x0));
  if (SWIGLU) { v = silu_mul(v, round_out(row_dot4(p.N / 2u + n, x0))); }
  store(m, n, v);
}

@compute @workgroup_size(TX, TY)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let BM = TY * TM;
  let BN = TX * TN;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let tid = l.y * TX + l.x;
  let threads = TX * TY;
  var acc: array<array<f32, MAXT>, MAXT>;   // only [0, TM) x [0, TN) is used; the rest folds away
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // Stage x[m0.., k0..] and w[n0.., k0..]; consecutive threads take consecutive k (contiguous in memory).
    for (var idx = tid; idx < BM * BK; idx += threads) {
      let mm = idx / BK;
      let kk = idx % BK;
      let m = m0 + mm;
      let k = k0 + kk;
      As[kk * BM + mm] = select(0.0, x[min(m, p.M - 1u) * p.K + min(k, p.K - 1u)], m < p.M && k < p.K);
    }
    for (var idx = tid; idx < BN * BK; idx += threads) {
      let nn = idx / BK;
      let kk = idx % BK;
      let n = n0 + nn;
      let k = k0 + kk;
      Bs[kk * BN + nn] = select(0.0, weight(min(n, p.N - 1u) * p.K + min(k, p.K - 1u)), n < p.N && k < p.K);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var a: array<f32, MAXT>;
      var b: array<f32, MAXT>;
      for (var i = 0u; i < TM; i++) { a[i] = As[kk * BM + l.y + i * TY]; }
      for (var j = 0u; j < TN; j++) { b[j] = Bs[kk * BN + l.x + j * TX]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i][j] += a[i] * b[j]; }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + l.y + i * TY;
    for (var j = 0u; j < TN; j++) {
      let n = n0 + l.x + j * TX;
      if (m < p.M && n < p.N) { store(m, n, round_out(acc[i][j])); }
    }
  }
}
