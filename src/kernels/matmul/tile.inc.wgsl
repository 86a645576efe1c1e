// The tiled kernels' register tile (matmul_tiled.wgsl; matmul_f16.wgsl's tiled entries), through
// `// #include "matmul/tile.inc.wgsl"`: BM x BN output tiles (BM = TY*TM, BN = TX*TN), each thread a TM x TN
// register block (rows ty + i*TY, columns tx + j*TX: conflict-free shared reads, coalesced writes); K walked in BK
// slices staged through shared memory, x and the weights widened to f32 once. The includer declares `p.M`, `p.N`,
// `p.K`, `fn x_at(i: u32) -> f32` (x's element i), `weight(e)` (weight.inc.wgsl) and `WT` (an override or const:
// w stored transposed, [K, N]). Never compiled on its own.

// Threads per workgroup along N (TX) and M (TY), outputs per thread (TM x TN <= MAXT x MAXT), K slice.
override TX: u32 = 16u;
override TY: u32 = 16u;
override TM: u32 = 4u;
override TN: u32 = 4u;
override BK: u32 = 16u;

const MAXT: u32 = 8u;

// A thread's register block: only [0, TM) x [0, TN) is used; the rest folds away.
alias Tile = array<array<f32, MAXT>, MAXT>;

var<workgroup> As: array<f32, BK * TY * TM>;
var<workgroup> Bs: array<f32, BK * TX * TN>;

// The register block of thread l in the tile at workgroup wid, for the product whose x and w start at elements
// xb and wb: acc[i][j] is output (row wid.y * BM + l.y + i * TY, column wid.x * BN + l.x + j * TX).
fn tile_acc(wid: vec3u, l: vec3u, xb: u32, wb: u32, acc: ptr<function, Tile>) {
  let BM = TY * TM;
  let BN = TX * TN;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let tid = l.y * TX + l.x;
  let threads = TX * TY;
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
      var a: array<f32, MAXT>;
      var b: array<f32, MAXT>;
      for (var i = 0u; i < TM; i++) { a[i] = As[kk * BM + l.y + i * TY]; }
      for (var j = 0u; j < TN; j++) { b[j] = Bs[kk * BN + l.x + j * TX]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { (*acc)[i][j] += a[i] * b[j]; }
      }
    }
    workgroupBarrier();
  }
}
