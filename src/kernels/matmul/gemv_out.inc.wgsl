// The output side of the matrix-vector kernels (matmul.wgsl's gemv paths, qlinear/qlinear.wgsl's qgemv and qrows),
// shared through `// #include "matmul/gemv_out.inc.wgsl"`: the lane reduction, siluMul on SWIGLU's gate/up pairs and
// the store with the in-place residual add (ACC). The includer declares `override ROUND: u32`, `override ACC: bool`,
// `override SWIGLU: bool`, `override WG/ROWS/MB: u32`, `const MAXACC: u32`, `var<workgroup> red: array<f32,
// WG * ROWS * MB>`, `p.M`, `p.N`, `p.ldo`, `p.col0` and a binding `out: array<f32>`. Never compiled on its own.
// #include "common/round.inc.wgsl"
// #include "common/silu_mul.inc.wgsl"
// #include "matmul/tree_sum.inc.wgsl"

// Output (m, n) of this chunk; with ACC added to the value already there, as add() rounds it.
fn store(m: u32, n: u32, v: f32) {
  let i = m * p.ldo + p.col0 + n;
  if (ACC) { out[i] = round_out(out[i] + v); } else { out[i] = v; }
}

// Sum acc over the workgroup's lanes and write the block's outputs.
fn reduce_store(acc: array<f32, MAXACC>, lid: u32, blk: u32, m0: u32) {
  for (var o = 0u; o < ROWS * MB; o++) { red[o * WG + lid] = acc[o]; }
  tree_sum(ROWS * MB, lid);
  let s = out_segs(lid);
  store_lane(lid, blk, m0, red[s.x * WG], red[s.y * WG]);
}

// The sums (segments of red) lane lid's output is made of: (its row, unused), or with SWIGLU (gate, up).
fn out_segs(lid: u32) -> vec2<u32> {
  let last = ROWS * MB - 1u;
  if (SWIGLU) {
    let P = ROWS / 2u;
    let g = (lid / P) * ROWS + lid % P;   // the up sum is P segments on
    return min(vec2<u32>(g, g + P), vec2<u32>(last));
  }
  return vec2<u32>(min(lid, last));
}

// Write lane lid's output of the block (ROWS x MB outputs, or with SWIGLU ROWS / 2 x MB) from its sums a, b
// (out_segs).
fn store_lane(lid: u32, blk: u32, m0: u32, a: f32, b: f32) {
  if (SWIGLU) {
    let P = ROWS / 2u;
    let m = m0 + lid / P;
    let i = blk * P + lid % P;
    if (lid < P * MB && m < p.M && i < p.N / 2u) { store(m, i, silu_mul(round_out(a), round_out(b))); }
  } else if (lid < ROWS * MB) {
    let m = m0 + lid / ROWS;
    let n = blk * ROWS + lid % ROWS;
    if (m < p.M && n < p.N) { store(m, n, round_out(a)); }
  }
}
