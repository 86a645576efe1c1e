// Variant 3 of matmul.wgsl (prefill): matmul_tiled, BM x BN output tiles through shared memory, any M, N, K, with
// the ACC fusion (matmul.ts normalises x and pairs SwiGLU around it). out[m, col0 + n] = round(sum_k x[m, k] * w[n, k]).
// Batched (BATCH, workgroups.z = the batch index z; attention's per-head products): x and w are stacks of [M, K]
// and [N, K] matrices, and product z goes to rows z*M.. of out (BATCH 1) or to columns col0 + z*N.. (BATCH 2).
// WT: w is stored transposed, [K, N] (x @ w, attention's P V over a [keys, D] value matrix).

// #include "matmul/linear.inc.wgsl"

override BATCH: u32 = 0u;
override WT: bool = false;

fn x_at(i: u32) -> f32 { return x[i]; }

// #include "matmul/tile.inc.wgsl"

@compute @workgroup_size(TX, TY)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  // Element offsets of product z (0 unbatched).
  let acc = tile_acc(wid, l, wid.z * p.M * p.K, wid.z * p.N * p.K);
  let m0 = wid.y * TY * TM;
  let n0 = wid.x * TX * TN;
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
