// The lane reduction of the row-group matrix-vector kernels (matmul_wide.wgsl's gemv_wide, gemv_mlp.wgsl), through
// `// #include "matmul/row_groups.inc.wgsl"`: `lanes` lanes a row, row group g's RPG rows in slots g * RPG ... The
// includer declares `override RPG: u32`, `const MAXW: u32` and `var<workgroup> red: array<f32, >= lanes * rows>`.
// Never compiled on its own.

// Row slot `tid`'s total (for tid < rows; -0 elsewhere) of every lane's sum in acc: the sums go to red lane-major
// (adjacent slots adjacent, so the adds read without bank conflicts), then one thread a slot adds its lanes' sums in
// lane order. red is free again when this returns.
fn slot_totals(acc: array<f32, MAXW>, l: u32, g: u32, tid: u32, lanes: u32, rows: u32) -> f32 {
  for (var r = 0u; r < RPG; r++) { red[l * rows + g * RPG + r] = acc[r]; }
  workgroupBarrier();
  var total = -0.0;   // -0 + x is x for every x
  if (tid < rows) {
    for (var k = 0u; k < lanes; k++) { total += red[k * rows + tid]; }
  }
  workgroupBarrier();   // every slot's partials are read before anything overwrites them
  return total;
}
