// gemv_wide: matmul.wgsl's matrix-vector product (same bindings, fusions, weight dtypes and output side) for one x
// row, with many weight rows per workgroup. The other gemv kernels give each workgroup 2-4 rows, so every
// workgroup reads the whole x row again (with NORM twice: once for its norm): for K = 1536 that is 6 KB of x per
// 12 KB of weights, as much traffic from L2 as half the weights. Here G row groups of WG lanes share a workgroup:
// ROWS = G * RPG rows, one x read (from L1) and one norm per workgroup.
//  - Lane l of row group g owns units l, l + WG, ... (UPL of them, exact) of each of its RPG rows (slots
//    g * RPG ..) and issues all UPL x RPG 16-byte loads before the NORM prologue, which runs while they are in
//    flight (the whole workgroup: a strided sum of squares and one tree).
//  - The lanes' sums go to `red` lane-major (adjacent slots adjacent, so the adds below read without bank
//    conflicts); one thread per slot adds its WG partials in lane order into the slot's segment head, where
//    store_lane (gemv_out.inc.wgsl) reads them, pairs SWIGLU's gate and up slots and writes.
// gemv.ts takes it for M = 1 on 16-byte rows whose units split evenly over the lanes.

// #include "matmul/linear.inc.wgsl"
// #include "matmul/gemv_block.inc.wgsl"
// #include "matmul/row_groups.inc.wgsl"
// #include "matmul/wide_inv.inc.wgsl"

// Threads per workgroup (G = THREADS / WG row groups, a power of two), rows per row group (ROWS = G * RPG) and units
// per lane per row: overrides all, so the loops over them unroll and wv / acc stay in registers (indices computed
// from them at run time sent both arrays to local memory: 3-4x slower on an H200).
override THREADS: u32 = 256u;
override RPG: u32 = 1u;
override UPL: u32 = 1u;
const MAXW: u32 = 32u;   // registers of weight units per lane: UPL * RPG <= MAXW

@compute @workgroup_size(THREADS)
fn gemv_wide(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let g = tid / WG;
  let l = tid % WG;
  let upr = p.K / select(8u, 4u, WDT == 0u);   // units per weight row
  let xstep = select(2u, 1u, WDT == 0u);
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = wrow(blk, g * RPG + r) * upr;
    for (var i = 0u; i < UPL; i++) { wv[i * RPG + r] = w4[b + l + i * WG]; }
  }
  var inv = 1.0;
  if (NORM) { inv = wide_inv(tid); }
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPL; i++) {
    let xs = x_unit((l + i * WG) * xstep, inv);
    for (var r = 0u; r < RPG; r++) { acc[r] += dot_unit(wv[i * RPG + r], xs[0], xs[1]); }
  }
  let total = slot_totals(acc, l, g, tid, WG, ROWS);
  if (tid < ROWS) { red[tid * WG] = total; }
  workgroupBarrier();
  let s = out_segs(tid);
  store_lane(tid, blk, 0u, red[s.x * WG], red[s.y * WG]);
}
