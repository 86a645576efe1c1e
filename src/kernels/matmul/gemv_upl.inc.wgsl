// The sums of gemv_upl (matmul_upl.wgsl; matmul_upl_sg.wgsl reduces them with subgroups), through
// `// #include "matmul/gemv_upl.inc.wgsl"` after linear.inc.wgsl and gemv_block.inc.wgsl. Never compiled on its own.
//
// gemv_vec4 walks K in a loop whose trip count is a uniform: each lane has ROWS loads in flight, waits for them,
// then issues the next ROWS. Here every lane owns UPL (a pipeline constant, units per lane) 16-byte units of each of
// its ROWS rows, units lid, lid + WG, ... (adjacent lanes read adjacent units), and issues all UPL x ROWS loads
// into registers before the first FMA: constant trip counts, so the compilers unroll the loops and keep wv in
// registers. The NORM prologue runs while those loads are in flight. Units past the row's end (UPL * WG > units per
// row, for short rows) load the row's last unit and add nothing.

// 16-byte units per lane per row; UPL * ROWS <= MAXW (registers per lane).
override UPL: u32 = 1u;
const MAXW: u32 = 32u;

// This lane's ROWS x MB partial sums of block blk (x rows m0 ..), the layout reduce_store takes.
fn upl_sums(blk: u32, m0: u32, lid: u32) -> array<f32, MAXACC> {
  let upr = p.K / select(8u, 4u, WDT == 0u);   // units per weight row
  let xpr = p.K / 4u;                          // vec4 per x row
  let xstep = select(2u, 1u, WDT == 0u);
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < ROWS; r++) {
    let b = wrow(blk, r) * upr;
    for (var i = 0u; i < UPL; i++) { wv[i * ROWS + r] = w4[b + min(lid + i * WG, upr - 1u)]; }
  }
  var inv: array<f32, 4>;
  if (NORM) { inv = block_inv4(m0, lid); }
  var acc: array<f32, MAXACC>;
  for (var i = 0u; i < UPL; i++) {
    let u = lid + i * WG;
    let live = u < upr;
    let uc = min(u, upr - 1u);
    for (var m = 0u; m < MB; m++) {
      let xs = x_unit(min(m0 + m, p.M - 1u) * xpr + uc * xstep, inv[m]);
      for (var r = 0u; r < ROWS; r++) { acc[m * ROWS + r] += select(0.0, dot_unit(wv[i * ROWS + r], xs[0], xs[1]), live); }
    }
  }
  return acc;
}
