// The tiled kernels' register tile (matmul_tiled.wgsl; matmul_f16.wgsl's tiled entries), through
// `// #include "matmul/tile.inc.wgsl"`: BM x BN output tiles (BM = TY*TM, BN = TX*TN), each thread a 4 x 4
// register block (rows ty + i*TY, columns tx + j*TX: conflict-free shared reads, coalesced writes); K walked in BK
// slices staged through shared memory, x and the weights widened to f32 once. The includer declares `p.M`, `p.N`,
// `p.K`, `fn x_at(i: u32) -> f32` (x's element i), `weight(e)` (weight.inc.wgsl) and `WT` (an override or const:
// w stored transposed, [K, N]). Never compiled on its own.

// Threads per workgroup along N (TX) and M (TY), and the K slice; each thread owns a 4 x 4 register block.
override TX: u32 = 16u;
override TY: u32 = 16u;
override BK: u32 = 16u;

// The register block is four vec4 accumulators, every index a constant: accumulators in an array indexed by loop
// counters (acc[i][j] over TM x TN) went to local memory under naga (wgpu: Deno, Firefox), 4.9x slower on an H200
// (1.56 against 7.68 ms for 128 x 6144 x 1536). The per-element sums are the same, in the same order.
const TM: u32 = 4u;
const TN: u32 = 4u;

var<workgroup> As: array<f32, BK * TY * TM>;
var<workgroup> Bs: array<f32, BK * TX * TN>;

// The register block of thread l in the tile at workgroup wid, for the product whose x and w start at elements
// xb and wb: element [i][j] is output (row wid.y * BM + l.y + i * TY, column wid.x * BN + l.x + j * TX).
fn tile_acc(wid: vec3u, l: vec3u, xb: u32, wb: u32) -> array<vec4<f32>, 4> {
  let BM = TY * TM;
  let BN = TX * TN;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let tid = l.y * TX + l.x;
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
      As[kk * BM + mm] = select(0.0, x_at(xb + min(m, p.M - 1u) * p.K + min(k, p.K - 1u)), m < p.M && k < p.K);
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
  return array<vec4<f32>, 4>(c0, c1, c2, c3);
}
