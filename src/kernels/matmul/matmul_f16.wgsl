enable f16;
// out[m, col0 + n] = round(sum_k x[m, k] * w[n, k])   (x @ W^T, as nn.Linear, with f16 activations)
// A shader of its own because `enable f16` fails to compile where shader-f16 is absent, so it cannot sit behind
// an override in matmul.wgsl. x: f16 [M, K], native f16 storage (the same bytes as a packed 'f16' tensor).
// w: one row-chunk [N, K] of the weight, f32 or bf16/f16 packed two per u32 (element e in word e >> 1, low half
// when e is even). Products and sums in f32 (exact for f16 x bf16/f16 weights), rounded once at the output, as
// MLX's half matmul does: entries ending _to_f16 store f16 (round to nearest even), _to_f32 store f32 (ROUND).
// out: [M, ldo]; a chunk writes columns col0 .. col0 + N.
// WDT picks the weight dtype (0 f32, 1 bf16, 2 f16) and ROUND the f32 output's rounding (0 none, 1 bf16, 2 f16).
//
// Variants (matmul.wgsl's, reading x as f16: half the bytes of x):
//  1. gemv_vec4 (few rows): a workgroup owns ROWS weight rows and MB <= 4 x rows; its WG lanes stride along K
//     reading one vec4<u32> of weights (8 halves or 4 f32) and the vec4<f16> of x they multiply (2 or 1) per row
//     per step, then reduce across the workgroup in shared memory. Needs 16-byte weight rows (K % 8 == 0 for
//     halves, K % 4 == 0 for f32) and K % 4 == 0 for x; tensors at 16-byte offsets.
//  2. gemv_word (few rows, any K): the same work, one u32 word of weights and scalar f16 x per lane per step; the
//     first and last word of a row may straddle a neighbouring row when K is odd, so those halves are masked.
//  3. tiled (many rows): matmul_tiled.wgsl's register tile (tile.inc.wgsl), x widened from f16. Any M, N, K.

// #include "common/half.inc.wgsl"

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f16>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> outh: array<f16>;
// Wide views used only by gemv_vec4.
@group(0) @binding(5) var<storage, read> x4: array<vec4<f16>>;
@group(0) @binding(6) var<storage, read> w4: array<vec4<u32>>;

// #include "matmul/gemv_opts.inc.wgsl"

const MAXACC: u32 = 16u;
// A lane or thread with no output to write.
const NONE: u32 = 0xffffffffu;

// #include "common/round.inc.wgsl"

// round_f16 leaves a value f16 holds exactly, so the conversion does not round again.
fn to_f16(v: f32) -> f16 {
  return f16(round_f16(v));
}

// #include "matmul/weight.inc.wgsl"
// #include "matmul/tree_sum.inc.wgsl"

// x's element i as f32, for gemv_word.inc.wgsl and tile.inc.wgsl (w is never transposed here).
fn x_word(i: u32, inv: f32) -> f32 { return f32(x[i]); }
fn x_at(i: u32) -> f32 { return f32(x[i]); }
const WT: bool = false;

// #include "matmul/gemv_word.inc.wgsl"
// #include "matmul/tile.inc.wgsl"

// dot of one vec4<u32> of weights with the x values it multiplies (x4 index xi: 2 vec4 for halves, 1 for f32).
fn dot_unit(wv: vec4<u32>, xi: u32) -> f32 {
  let a = vec4<f32>(x4[xi]);
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), a); }
  return dot_halves(wv, a, vec4<f32>(x4[xi + 1u]));
}

// gemv_vec4's per-lane partial sums of the ROWS x MB outputs of the block at weight row n0, x row m0.
fn gemv_vec4_acc(n0: u32, m0: u32, lid: u32, acc: ptr<function, array<f32, MAXACC>>) {
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;            // vec4<u32> units per weight row
  let xpr = p.K / 4u;             // vec4<f16> per x row
  let xstep = select(2u, 1u, WDT == 0u);
  var wv: array<vec4<u32>, 4>;    // ROWS <= 4 for this variant
  for (var u = lid; u < upr; u += WG) {
    for (var r = 0u; r < ROWS; r++) { wv[r] = w4[min(n0 + r, p.N - 1u) * upr + u]; }
    for (var m = 0u; m < MB; m++) {
      let xi = min(m0 + m, p.M - 1u) * xpr + u * xstep;
      for (var r = 0u; r < ROWS; r++) { (*acc)[m * ROWS + r] += dot_unit(wv[r], xi); }
    }
  }
}

// gemv_word's per-lane partial sums, as gemv_vec4_acc (x is never normalised here).
fn gemv_word_acc(n0: u32, m0: u32, lid: u32, acc: ptr<function, array<f32, MAXACC>>) {
  for (var r = 0u; r < ROWS; r++) { word_row(min(n0 + r, p.N - 1u) * p.K, r, m0, lid, array<f32, 4>(), acc); }
}

// Sums acc over the workgroup's lanes; lane o < ROWS * MB gets output o's sum, the others a copy of one.
fn reduce(acc: ptr<function, array<f32, MAXACC>>, lid: u32) -> f32 {
  let outs = ROWS * MB;
  for (var o = 0u; o < outs; o++) { red[o * WG + lid] = (*acc)[o]; }
  tree_sum(outs, lid);
  return red[min(lid, outs - 1u) * WG];
}

// Output index of lane lid after reduce (x row m0 + lid / ROWS, weight row n0 + lid % ROWS), or NONE.
fn gemv_dest(n0: u32, m0: u32, lid: u32) -> u32 {
  let m = m0 + lid / ROWS;
  let n = n0 + lid % ROWS;
  if (lid >= ROWS * MB || m >= p.M || n >= p.N) { return NONE; }
  return m * p.ldo + p.col0 + n;
}

@compute @workgroup_size(WG)
fn gemv_vec4_to_f32(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  var acc: array<f32, MAXACC>;   // a gemv lane's partial sums, ROWS * MB used
  gemv_vec4_acc(n0, wid.z * MB, lid, &acc);
  let v = reduce(&acc, lid);
  let i = gemv_dest(n0, wid.z * MB, lid);
  if (i != NONE) { out[i] = round_out(v); }
}

@compute @workgroup_size(WG)
fn gemv_vec4_to_f16(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  var acc: array<f32, MAXACC>;   // a gemv lane's partial sums, ROWS * MB used
  gemv_vec4_acc(n0, wid.z * MB, lid, &acc);
  let v = reduce(&acc, lid);
  let i = gemv_dest(n0, wid.z * MB, lid);
  if (i != NONE) { outh[i] = to_f16(v); }
}

@compute @workgroup_size(WG)
fn gemv_word_to_f32(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  var acc: array<f32, MAXACC>;   // a gemv lane's partial sums, ROWS * MB used
  gemv_word_acc(n0, wid.z * MB, lid, &acc);
  let v = reduce(&acc, lid);
  let i = gemv_dest(n0, wid.z * MB, lid);
  if (i != NONE) { out[i] = round_out(v); }
}

@compute @workgroup_size(WG)
fn gemv_word_to_f16(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  var acc: array<f32, MAXACC>;   // a gemv lane's partial sums, ROWS * MB used
  gemv_word_acc(n0, wid.z * MB, lid, &acc);
  let v = reduce(&acc, lid);
  let i = gemv_dest(n0, wid.z * MB, lid);
  if (i != NONE) { outh[i] = to_f16(v); }
}

// Output index of tile_acc's acc[i][j] (unbatched), or NONE outside [M, N].
fn tiled_dest(wid: vec3u, l: vec3u, i: u32, j: u32) -> u32 {
  let m = wid.y * TY * TM + l.y + i * TY;
  let n = wid.x * TX * TN + l.x + j * TX;
  if (m >= p.M || n >= p.N) { return NONE; }
  return m * p.ldo + p.col0 + n;
}

@compute @workgroup_size(TX, TY)
fn tiled_to_f32(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let acc = tile_acc(wid, l, 0u, 0u);
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      let o = tiled_dest(wid, l, i, j);
      if (o != NONE) { out[o] = round_out(acc[i][j]); }
    }
  }
}

@compute @workgroup_size(TX, TY)
fn tiled_to_f16(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let acc = tile_acc(wid, l, 0u, 0u);
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      let o = tiled_dest(wid, l, i, j);
      if (o != NONE) { outh[o] = to_f16(acc[i][j]); }
    }
  }
}
