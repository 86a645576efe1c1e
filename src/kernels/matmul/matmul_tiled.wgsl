// Variant 3 of matmul.wgsl (prefill): matmul_tiled, BM x BN output tiles through shared memory, any M, N, K, with
// the ACC fusion (matmul.ts normalises x and pairs SwiGLU around it). out[m, col0 + n] = round(sum_k x[m, k] * w[n, k]).
// Batched (BATCH, workgroups.z = the batch index z; attention's per-head products): x and w are stacks of [M, K]
// and [N, K] matrices, and product z goes to rows z*M.. of out (BATCH 1) or to columns col0 + z*N.. (BATCH 2).
// WT: w is stored transposed, [K, N] (x @ w, attention's P V over a [keys, D] value matrix).

// #include "matmul/linear.inc.wgsl"

// tiled: threads per workgroup along N (TX) and M (TY), outputs per thread (TM x TN <= MAXT x MAXT), K slice.
override TX: u32 = 16u;
override TY: u32 = 16u;
override TM: u32 = 4u;
override TN: u32 = 4u;
override BK: u32 = 16u;
override BATCH: u32 = 0u;
override WT: bool = false;

const MAXT: u32 = 8u;

var<workgroup> As: array<f32, BK * TY * TM>;
var<workgroup> Bs: array<f32, BK * TX * TN>;

@compute @workgroup_size(TX, TY)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let BM = TY * TM;
  let BN = TX * TN;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let tid = l.y * TX + l.x;
  let xb = wid.z * p.M * p.K;   // element offsets of product z (0 unbatched)
  let wb = wid.z * p.N * p.K;
  let threads = TX * TY;
  var acc: array<array<f32, MAXT>, MAXT>;   // only [0, TM) x [0, TN) is used; the rest folds away
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // Stage x[m0.., k0..] and w[n0.., k0..]; consecutive threads take consecutive k (contiguous in memory).
    for (var idx = tid; idx < BM * BK; idx += threads) {
      let mm = idx / BK;
      let kk = idx % BK;
      let m = m0 + mm;
      let k = k0 + kk;
      As[kk * BM + mm] = select(0.0, x[xb + min(m, p.M - 1u) * p.K + min(k, p.K - 1u)], m < p.M && k < p.K);
    }
    for (var idx = tid; idx < BN * BK; idx += threads) {
      // Consecutive threads read consecutive elements: along k, or along n when w is [K, N].
      let nn = select(idx / BK, idx % BN, WT);
      let kk = select(idx % BK, idx / BN, WT);
      let n = n0 + nn;
      let k = k0 + kk;
      let nc = min(n, p.N - 1u);
      let kc = min(k, p.K - 1u);
      Bs[kk * BN + nn] = select(0.0, weight(wb + select(nc * p.K + kc, kc * p.N + nc, WT)), n < p.N && k < p.K);
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
      if (m < p.M && n < p.N) {
        if (BATCH == 1u) { store(wid.z * p.M + m, n, round_out(acc[i][j])); }
        else { store(m, select(n, wid.z * p.N + n, BATCH == 2u), round_out(acc[i][j])); }
      }
    }
  }
}
