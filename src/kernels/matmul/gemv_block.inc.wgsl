// The block side of the workgroup matrix-vector kernels (matmul.wgsl's gemv_vec4 / gemv_word, matmul_upl.wgsl):
// which weight row each row slot reads and the NORM prologue, through `// #include "matmul/gemv_block.inc.wgsl"`
// after linear.inc.wgsl. Never compiled on its own.

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

// NORM prologue of the vec4 kernels: each block row's inverse RMS, the same in every lane.
fn block_inv4(m0: u32, lid: u32) -> array<f32, 4> {
  let xpr = p.K / 4u;             // vec4 per x row
  var part: array<f32, 4>;
  for (var j = lid; j < xpr; j += 4u * WG) {
    for (var m = 0u; m < MB; m++) {
      let e = (min(m0 + m, p.M - 1u) + 1u) * xpr;   // end of the row
      let s = sq4(e - xpr + j, e) + sq4(e - xpr + j + WG, e) + sq4(e - xpr + j + 2u * WG, e) + sq4(e - xpr + j + 3u * WG, e);
      part[m] += s.x + s.y + s.z + s.w;
    }
  }
  return block_inv(part, lid);
}
