// out[m, col0 + n] = round_bf16(sum_k x[m, k] * w[n, k]) on subgroup matrices (cooperative matrices, i.e. tensor
// cores), for bf16-mode prefill. x: f32 [M, K] (bf16 values in bf16 mode); w: one bf16 row-chunk [N, K] packed two
// per u32 (element e in word e >> 1, low half when e is even); out: f32 [M, ldo]. Any M, N, K.
//
// A workgroup is one subgroup of SG = 32 lanes and owns a BM x BN = 64 x 32 output tile, 4 x 2 result matrices of
// S x S (one subgroup, because subgroupMatrixLoad/Store need workgroup-uniform offsets: with several subgroups the
// offsets would depend on the invocation index). K is walked in BK slices staged through workgroup memory as f16,
// where subgroupMatrixLoad reads them (x rows as the left matrix, row-major; weight rows as the right matrix,
// column-major).
//
// Numerics: the products of f16 values are exact in f32 and the tensor cores accumulate in f32, so the result is
// an f32 sum of exact products, rounded once to bf16 like matmul_tiled (only the summation order differs). That
// holds only if every staged value is exact in f16. bf16 has f32's exponent range, f16 has 5 exponent bits, so:
//  - the values are staged scaled by powers of two (x * 2^SX, w * 2^SW; the sum is scaled back by 2^-(SX+SW),
//    exact in f32): a bf16 value (8 significant bits) scaled is exact in f16 when 2^-17 <= |v| * 2^s <= 65504
//    (f16 subnormals keep 8 bits down to 2^-17), i.e. |x| in [2^-21, 4094] and |w| in [2^-27, 63.97];
//  - every staged value is checked (fits_f16); a slice holding any value that does not fit (a tiny, huge, inf or
//    NaN value, or an x that is not a bf16 value at all) is computed by the whole workgroup with f32 FMAs from
//    the original values instead (exact products, f32 sum), and counted in stats[0]. So the result never depends
//    on the range of the data; only the speed does.

enable f16;
enable chromium_experimental_subgroup_matrix;

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// stats[0]: k-slices computed by the f32 fallback (tests assert on it; nobody reads it in a forward pass).
@group(0) @binding(4) var<storage, read_write> stats: array<atomic<u32>>;

// Residual epilogue out = round(out + round(sum)), in place, as matmul.wgsl's ACC.
override ACC: bool = false;

const S = 16u;              // subgroup-matrix side (the f16 -> f32 16x16x16 configuration)
const T = 32u;              // lanes of the one subgroup (matmul_sgmat.ts requires min = max = 32)
const BM = 64u;
const BN = 32u;
const BK = 32u;
const LD = S + 8u;          // staged block row in f16: 48 bytes, a multiple of 16, rows off the same banks
const OUTS = BM * BN / T;   // outputs per lane in the epilogue and the fallback
const XS = 16.0;            // 2^SX
const WS = 1024.0;          // 2^SW
const UNSCALE = 1.0 / (XS * WS);

// Every matrix is loaded and stored at offset 0 of its own S x S block (blocks [row block][k half]): on the H200
// through Dawn 0.6.2 loads at non-zero offsets gave wrong products.
var<workgroup> As: array<array<f16, S * LD>, 8>;   // x: 4 row blocks x 2 k halves
var<workgroup> Bs: array<array<f16, S * LD>, 4>;   // weights: 2 row blocks x 2 k halves
var<workgroup> Cs: array<array<f32, S * S>, 8>;    // the tensor-core sums per result block, stored after the last slice
var<workgroup> Fs: array<f32, BM * BN>;   // the f32 fallback's sums (unscaled); lane tid owns tid, tid + T, ...
var<workgroup> bad: atomic<u32>;
var<workgroup> slow: u32;

// #include "common/half.inc.wgsl"

// s is exactly an f16 value (finite, |s| <= 65504, no bits below f16's precision at its magnitude).
fn fits_f16(s: f32) -> bool {
  let b = bitcast<u32>(s) & 0x7fffffffu;
  if (b > 0x477fe000u) { return false; }               // 65504; inf and NaN have larger bit patterns
  if (b >= 0x38800000u) { return (b & 0x1fffu) == 0u; } // normal f16 (>= 2^-14): 10 of f32's 23 fraction bits
  let q = bitcast<f32>(b) * 16777216.0;                  // subnormal f16: a multiple of 2^-24
  return q == floor(q);
}

// Weight element e of the chunk, widened to f32.
fn weight(e: u32) -> f32 {
  let word = w[e >> 1u];
  return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (e & 1u) == 1u));
}

fn x_at(m: u32, k: u32) -> f32 {
  return select(0.0, x[min(m, p.M - 1u) * p.K + min(k, p.K - 1u)], m < p.M && k < p.K);
}

fn w_at(n: u32, k: u32) -> f32 {
  return select(0.0, weight(min(n, p.N - 1u) * p.K + min(k, p.K - 1u)), n < p.N && k < p.K);
}

// A staged value: v scaled as f16 when that is exact, else 0 with ok cleared.
fn half_of(v: f32, ok: ptr<function, bool>) -> f16 {
  let fits = fits_f16(v);
  *ok = *ok && fits;
  return f16(select(0.0, v, fits));
}

// Stage slice k0 of the x and weight tiles as scaled f16; flags the workgroup when a value does not fit.
fn stage(m0: u32, n0: u32, k0: u32, tid: u32) {
  var ok = true;
  for (var i = tid; i < BM * BK; i += T) {
    let r = i / BK;
    let c = i % BK;
    As[(r / S) * 2u + c / S][(r % S) * LD + c % S] = half_of(x_at(m0 + r, k0 + c) * XS, &ok);
  }
  for (var i = tid; i < BN * BK; i += T) {
    let r = i / BK;
    let c = i % BK;
    Bs[(r / S) * 2u + c / S][(r % S) * LD + c % S] = half_of(w_at(n0 + r, k0 + c) * WS, &ok);
  }
  if (!ok) { atomicOr(&bad, 1u); }
}

@compute @workgroup_size(T)
fn matmul_sgmat(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  for (var i = tid; i < BM * BN; i += T) { Fs[i] = 0.0; }
  var c00 = subgroup_matrix_result<f32, S, S>();
  var c01 = subgroup_matrix_result<f32, S, S>();
  var c10 = subgroup_matrix_result<f32, S, S>();
  var c11 = subgroup_matrix_result<f32, S, S>();
  var c20 = subgroup_matrix_result<f32, S, S>();
  var c21 = subgroup_matrix_result<f32, S, S>();
  var c30 = subgroup_matrix_result<f32, S, S>();
  var c31 = subgroup_matrix_result<f32, S, S>();
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    stage(m0, n0, k0, tid);
    workgroupBarrier();
    if (tid == 0u) { slow = atomicExchange(&bad, 0u); }
    if (workgroupUniformLoad(&slow) == 0u) {
      for (var h = 0u; h < 2u; h++) {
        let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, S, S>, col_major>(&Bs[h], 0u, LD);
        let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, S, S>, col_major>(&Bs[2u + h], 0u, LD);
        let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, S, S>, row_major>(&As[h], 0u, LD);
        c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
        c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
        let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, S, S>, row_major>(&As[2u + h], 0u, LD);
        c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
        c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
        let a2 = subgroupMatrixLoad<subgroup_matrix_left<f16, S, S>, row_major>(&As[4u + h], 0u, LD);
        c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20);
        c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
        let a3 = subgroupMatrixLoad<subgroup_matrix_left<f16, S, S>, row_major>(&As[6u + h], 0u, LD);
        c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30);
        c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
      }
    } else {
      if (tid == 0u) { atomicAdd(&stats[0], 1u); }
      for (var i = tid; i < BM * BN; i += T) {
        var s = 0.0;
        for (var kk = 0u; kk < BK; kk++) { s += x_at(m0 + i / BN, k0 + kk) * w_at(n0 + i % BN, k0 + kk); }
        Fs[i] += s;
      }
    }
    workgroupBarrier();   // done with As / Bs before the next slice overwrites them
  }
  subgroupMatrixStore<row_major>(&Cs[0], 0u, c00, S);
  subgroupMatrixStore<row_major>(&Cs[1], 0u, c01, S);
  subgroupMatrixStore<row_major>(&Cs[2], 0u, c10, S);
  subgroupMatrixStore<row_major>(&Cs[3], 0u, c11, S);
  subgroupMatrixStore<row_major>(&Cs[4], 0u, c20, S);
  subgroupMatrixStore<row_major>(&Cs[5], 0u, c21, S);
  subgroupMatrixStore<row_major>(&Cs[6], 0u, c30, S);
  subgroupMatrixStore<row_major>(&Cs[7], 0u, c31, S);
  workgroupBarrier();
  for (var i = tid; i < BM * BN; i += T) {
    let m = m0 + i / BN;
    let n = n0 + i % BN;
    if (m < p.M && n < p.N) {
      let r = i / BN;
      let c = i % BN;
      let v = round_bf16(Cs[(r / S) * 2u + c / S][(r % S) * S + c % S] * UNSCALE + Fs[i]);
      let j = m * p.ldo + p.col0 + n;
      if (ACC) { out[j] = round_bf16(out[j] + v); } else { out[j] = v; }
    }
  }
}
