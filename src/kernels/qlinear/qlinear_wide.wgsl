// qgemv_wide: qgemv4 (qlinear_vec4.wgsl) for one x row with many weight rows a workgroup, as matmul_wide.wgsl's
// gemv_wide is for dense weights. qgemv4 takes 2-16 rows a workgroup, and every workgroup reads the whole x row and
// normalises it again: at 4 bits and K = 1536 that is 6 KiB of x for 768 bytes of levels a row. Here G = THREADS / WG
// row groups of WG lanes share one x read and one norm: group g holds slots g * RPG .. (ROWS = G * RPG, slot_row's
// rows: with SWIGLU the block's ROWS / 2 gate rows, then their up rows), lane l units l, l + WG, .. of each (UPL of
// them: a row's units split exactly over the lanes), and issues all its UPL x RPG loads of levels, scales and biases
// before the NORM prologue, which runs while they are in flight. Every sum is qgemv4's at WG lanes (the norm's, each
// lane's over its units, the lanes' tree), so a row's output is qgemv4's bit for bit, whatever ROWS and G are.

// #include "qlinear/qlinear.inc.wgsl"

override THREADS: u32 = 256u;
override RPG: u32 = 1u;
override UPL: u32 = 1u;
const MAXW: u32 = 16u;   // unit registers a lane: UPL * RPG <= MAXW
// 'wide-xs' (XSH): the x row staged once after the norm, instead of every lane of every row group normalising its
// units' x from x4.
// #include "qlinear/qxs.inc.wgsl"

// #include "qlinear/qunit.inc.wgsl"

@compute @workgroup_size(THREADS)
fn qgemv_wide(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let g = tid / WG;
  let l = tid % WG;
  let upr = p.K * BITS / 128u;   // units per row
  var wv: array<vec4<u32>, MAXW>;
  var sb: array<vec2<f32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let row = slot_row(blk, g * RPG + r);
    for (var i = 0u; i < UPL; i++) {
      let u = l + i * WG;
      wv[i * RPG + r] = wq4[row * upr + u];
      sb[i * RPG + r] = affine_at(row, u * (128u / BITS));
    }
  }
  // qgemv4's norm: lanes 0 .. WG - 1 sum x's squares strided by WG, then their tree (block_inv).
  var inv: array<f32, 4>;
  if (NORM) {
    if (tid < WG) {
      var ss = 0.0;
      for (var k = tid; k < p.K / 4u; k += WG) { ss += dot(x4[k], x4[k]); }
      red[tid] = ss;
    }
    inv = block_inv(tid);
  }
  if (XSH) { stage_x(tid, THREADS, 0u, inv[0]); }
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPL; i++) {
    let xu = unit_x4(0u, l + i * WG, inv[0]);
    for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot4(wv[i * RPG + r], sb[i * RPG + r], xu); }
  }
  // Slot s's lane sums in segment s of red, added by group 0's lanes in qgemv4's tree.
  for (var r = 0u; r < RPG; r++) { red[(g * RPG + r) * WG + l] = acc[r]; }
  tree_sum(ROWS, tid);
  let s = out_segs(tid);
  store_lane(tid, blk, 0u, red[s.x * WG], red[s.y * WG]);
}
