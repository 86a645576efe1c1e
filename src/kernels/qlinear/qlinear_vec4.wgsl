// qgemv4: qlinear.wgsl's qgemv (variant 1) reading 16 bytes of levels per lane, row and step; see qlinear.wgsl.
// It takes up to QMAXR rows a workgroup (ROWS x MB <= MAXACC), and with XSH stages its x row in workgroup memory.

// #include "qlinear/qlinear.inc.wgsl"

// Weight rows a workgroup may take: at 4 bits a row of K = 1536 is 768 bytes, less than the x row (6 KiB of f32)
// every workgroup reads, so more rows a workgroup read fewer x bytes per weight byte.
const QMAXR: u32 = 16u;
// 'xs' (XSH): the x row (one: MB 1) staged once; every lane otherwise reads its units' x from memory, the prologue
// once more.
// #include "qlinear/qxs.inc.wgsl"

// #include "qlinear/qunit.inc.wgsl"

// qgemv with a unit of 16 bytes per lane per row and step (4 and 8 bits; 16-byte aligned x and levels): a quarter
// (4 bits) or half of the steps, one scale / bias load per 32 or 16 values instead of per 8, vec4 x loads; every
// row's load of a step is issued before its arithmetic. A row's sum is the same whatever ROWS and XSH are.
@compute @workgroup_size(WG)
fn qgemv4(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  let K4 = p.K / 4u;
  var inv: array<f32, 4>;
  if (NORM) {
    for (var m = 0u; m < MB; m++) {
      let xr = min(m0 + m, p.M - 1u) * K4;
      var ss = 0.0;
      for (var k = lid; k < K4; k += WG) { ss += dot(x4[xr + k], x4[xr + k]); }
      red[m * WG + lid] = ss;
    }
    inv = block_inv(lid);
  }
  if (XSH) { stage_x(lid, WG, min(m0, p.M - 1u) * K4, inv[0]); }
  let upr = p.K * BITS / 128u;   // units per row
  var rows: array<u32, QMAXR>;
  for (var r = 0u; r < ROWS; r++) { rows[r] = slot_row(blk, r); }
  var acc: array<f32, MAXACC>;
  var wv: array<vec4<u32>, QMAXR>;
  var sb: array<vec2<f32>, QMAXR>;
  for (var u = lid; u < upr; u += WG) {
    for (var r = 0u; r < ROWS; r++) {
      wv[r] = wq4[rows[r] * upr + u];
      sb[r] = affine_at(rows[r], u * (128u / BITS));
    }
    for (var m = 0u; m < MB; m++) {
      let xu = unit_x4(min(m0 + m, p.M - 1u) * K4, u, inv[m]);
      for (var r = 0u; r < ROWS; r++) { acc[m * ROWS + r] += unit_dot4(wv[r], sb[r], xu); }
    }
  }
  reduce_store(acc, lid, blk, m0);
}
