// qgemv4: qlinear.wgsl's qgemv (variant 1) reading 16 bytes of levels per lane, row and step; see qlinear.wgsl.
// It takes up to QMAXR rows a workgroup (ROWS x MB <= MAXACC), and with XSH stages its x row in workgroup memory.

// #include "qlinear/qlinear.inc.wgsl"

// Weight rows a workgroup may take: at 4 bits a row of K = 1536 is 768 bytes, less than the x row (6 KiB of f32)
// every workgroup reads, so more rows a workgroup read fewer x bytes per weight byte.
const QMAXR: u32 = 16u;
// XSH: the x row (one: MB 1), normalised with NORM, staged in workgroup memory once (XSN >= K / 4 vec4s), the units
// then read from there: every lane otherwise reads its units' x from memory, the prologue once more. Same values.
override XSH: bool = false;
override XSN: u32 = 1u;
var<workgroup> xs: array<vec4<f32>, XSN>;

// qgemv4's unit: one vec4<u32> of packed levels of a row (32 values at 4 bits, 16 at 8), QU = 32 / BITS quads of
// 4 values, all in one group (GS >= 32). A level is taken in place, masked within its half word, as level * 2^s
// (s < 16: its offset there), against x pre-scaled by 2^-s (MLX's qmv trick: powers of two, so every product is the
// unshifted one unless |x| < 2^-114). The masked bits become an f32 by or-ing in 2^23's exponent and subtracting
// 2^23 (exact): full-rate integer and float ops instead of an int-to-float conversion, which NVIDIA GPUs run at a
// fraction of the float rate (it was most of qgemv's work per value, next to shift, mask and fma).
fn quad_levels(wv: vec4<u32>, q: u32) -> vec4<f32> {
  var v: vec4<u32>;
  if (BITS == 8u) {
    let w = wv[q];
    v = vec4<u32>(w, w, w >> 16u, w >> 16u) & vec4<u32>(0xffu, 0xff00u, 0xffu, 0xff00u);
  } else {
    v = vec4<u32>(wv[q / 2u] >> (16u * (q & 1u))) & vec4<u32>(0xfu, 0xf0u, 0xf00u, 0xf000u);
  }
  return bitcast<vec4<f32>>(v | vec4<u32>(0x4b000000u)) - vec4<f32>(8388608.0);
}

fn quad_scale() -> vec4<f32> {
  if (BITS == 8u) { return vec4<f32>(1.0, 0.00390625, 1.0, 0.00390625); }
  return vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625);
}

// x values of unit u of the x row starting at vec4 xr4 (normalised and rounded with NORM), pre-scaled, and their sum.
struct XUnit { q: array<vec4<f32>, 8>, sum: f32 }

fn unit_x4(xr4: u32, u: u32, inv: f32) -> XUnit {
  var xu: XUnit;
  var s = vec4<f32>(0.0);
  for (var q = 0u; q < 32u / BITS; q++) {
    let i = u * (32u / BITS) + q;
    var v: vec4<f32>;
    if (XSH) { v = xs[i]; } else { v = xn4(x4[xr4 + i], inv); }
    s += v;
    xu.q[q] = v * quad_scale();
  }
  xu.sum = dot(s, vec4<f32>(1.0));
  return xu;
}

// scale * sum(x * level) + bias * sum(x) over one unit (sb = its group's scale and bias).
fn unit_dot4(wv: vec4<u32>, sb: vec2<f32>, xu: XUnit) -> f32 {
  var d = 0.0;
  for (var q = 0u; q < 32u / BITS; q++) { d += dot(xu.q[q], quad_levels(wv, q)); }
  return sb.x * d + sb.y * xu.sum;
}

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
  if (XSH) {
    let xr = min(m0, p.M - 1u) * K4;
    for (var k = lid; k < K4; k += WG) { xs[k] = xn4(x4[xr + k], inv[0]); }
    workgroupBarrier();
  }
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
