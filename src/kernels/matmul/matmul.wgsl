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
//     gemv_upl (matmul_upl.wgsl; gemv_upl_sg in matmul_upl_sg.wgsl reduces on subgroups) is the same work with
//     every lane's loads issued up front: gemv.ts takes it where a row's units split evenly over the lanes.
//  2. gemv_word   (decode, any K): the same shape of work reading one u32 word per lane per step; the first and
//     last word of a row may straddle a neighbouring row when K is odd, so those halves are masked. Kept for
//     shapes variant 1 cannot take: 2-3x slower than it on an H200 (HRM-1B shapes, M = 1 and 4).
//  3. matmul_tiled (prefill, matmul_tiled.wgsl): BM x BN output tiles (BM = TY*TM, BN = TX*TN), each thread a TM x TN register block
//     (rows ty + i*TY, columns tx + j*TX: conflict-free shared reads, coalesced writes); K walked in BK slices
//     staged through shared memory with the weights widened to f32 once. Any M, N, K. On an H200 with
//     16x16 threads, 4x4 outputs and BK 8: 5-7 TFLOP/s at M = 64, 9-17 at M = 512 (4x8 outputs: up to 20).
//  4. gemv_rows    (CPU drivers, any M; matmul_rows.wgsl): one thread per output, a plain loop over K; chosen when the adapter is a
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
// Subgroup reductions need a module of their own: `enable subgroups` cannot sit behind an override (it would fail to
// compile where the feature is absent); matmul_upl_sg.wgsl is that module for gemv_upl.

// #include "matmul/linear.inc.wgsl"
// #include "matmul/gemv_block.inc.wgsl"

// gemv_word's x element: normalised with NORM.
fn x_word(i: u32, inv: f32) -> f32 { return xn(x[i], inv); }

// #include "matmul/gemv_word.inc.wgsl"

@compute @workgroup_size(WG)
fn gemv_vec4(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;            // vec4 units per weight row
  let xpr = p.K / 4u;             // vec4 per x row
  let xstep = select(2u, 1u, WDT == 0u);
  var inv: array<f32, 4>;
  if (NORM) { inv = block_inv4(m0, lid); }
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
  for (var r = 0u; r < ROWS; r++) { word_row(wrow(blk, r) * p.K, r, m0, lid, inv, &acc); }
  reduce_store(acc, lid, blk, m0);
}
