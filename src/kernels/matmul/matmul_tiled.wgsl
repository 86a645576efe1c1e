// Variant 3 of matmul.wgsl (prefill): matmul_tiled, BM x BN output tiles through shared memory, any M, N, K, with
// the ACC fusion (matmul.ts normalises x and pairs SwiGLU around it). out[m, col0 + n] = round(sum_k x[m, k] * w[n, k]).
// Batched (BATCH, workgroups.z = the batch index z; attention's per-head products): x and w are stacks of [M, K]
// and [N, K] matrices, and product z goes to rows z*M.. of out (BATCH 1) or to columns col0 + z*N.. (BATCH 2).
// WT: w is stored transposed, [K, N] (x @ w, attention's P V over a [keys, D] value matrix).

// #include "matmul/linear.inc.wgsl"

// tiled: threads per workgroup along N (TX) and M (TY), K slice; each thread owns a 4 x 4 register block.
override TX: u32 = 16u;
override TY: u32 = 16u;
override BK: u32 = 16u;
override BATCH: u32 = 0u;
override WT: bool = false;

// The register block is four vec4 accumulators, every index a constant: accumulators in an array indexed by loop
// counters (acc[i][j] over TM x TN) went to local memory under naga (wgpu: Deno, Firefox), 4.9x slower on an H200
// (1.56 against 7.68 ms for 128 x 6144 x 1536). The per-element sums are the same, in the same order.
const TM: u32 = 4u;
const TN: u32 = 4u;

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
  var c0 = vec4<f32>();   // outputs (row i, columns j = 0..3) in c_i
  var c1 = vec4<f32>();
  var c2 = vec4<f32>();
  var c3 = vec4<f32>();
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
      let ia = kk * BM + l.y;
      let ib = kk * BN + l.x;
      let a = vec4<f32>(As[ia], As[ia + TY], As[ia + 2u * TY], As[ia + 3u * TY]);
      let b = vec4<f32>(Bs[ib], Bs[ib + TX], Bs[ib + 2u * TX], Bs[ib + 3u * TX]);
      c0 += a.x * b;
      c1 += a.y * b;
      c2 += a.z * b;
      c3 += a.w * b;
    }
    workgroupBarrier();
  }
  let acc = array<vec4<f32>, 4>(c0, c1, c2, c3);   // read once, after the loop
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
