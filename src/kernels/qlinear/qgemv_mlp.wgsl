// qgemv_mlp: matmul/gemv_mlp.wgsl (a decode layer's whole MLP in one dispatch, x += down(silu(gate) * up), gate | up
// = gate_up(rms(x))) on MLX's 4- and 8-bit quantized weights, where qlinear takes two products (qgemv4 with norm and
// SwiGLU, then with the residual: the reference, which qgemv-mlp.ts composes where this cannot run).
//  - Workgroup b owns the intermediate units i0 = b * U .. i0 + U - 1 (U = 8). Its 2U gate_up rows: LANES lanes a
//    row in THREADS / LANES row groups of RPG rows, each lane's 16-byte units of levels and their groups' scales and
//    biases loaded before the norm; x normalised once into workgroup memory (qgemv4's XSH); each unit summed as
//    qgemv4 sums it (qlinear/qunit.inc.wgsl: scale * sum(x * level) + bias * sum(x)).
//  - Its share of down: the U levels of each down row that its block covers (one word at 4 bits, two at 8, in one
//    group since the group size is a multiple of 32), part_b[n] = scale * sum_j level_j a_j + bias * sum_j a_j.
//  - The partial sums and the residual as in gemv_mlp (matmul/mlp_fold.inc.wgsl), with the same reliance on the
//    barriers around the counts (checked by tests/kernels/matmul/gemv-mlp.test.ts and gemv-mlp.check.ts).

struct Params { K: u32, I: u32, blocks: u32, group: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x4: array<vec4<f32>>;   // [1, K]
@group(0) @binding(2) var<storage, read> wq4: array<vec4<u32>>;        // gate_up levels [2I, K * BITS / 32]
@group(0) @binding(3) var<storage, read> scales: array<u32>;           // gate_up [2I, K / GS], SDT
@group(0) @binding(4) var<storage, read> biases: array<u32>;
@group(0) @binding(5) var<storage, read> dq: array<u32>;               // down levels [K, I * BITS / 32]
@group(0) @binding(6) var<storage, read> dscales: array<u32>;          // down [K, I / GS], SDT
@group(0) @binding(7) var<storage, read> dbiases: array<u32>;
@group(0) @binding(8) var<storage, read_write> part: array<f32>;       // [blocks + groups, K]
@group(0) @binding(9) var<storage, read_write> done: array<atomic<u32>>; // [groups + 1], 0 between dispatches

override BITS: u32 = 4u;      // 4 or 8
override GS: u32 = 64u;       // values a group, a multiple of 32
override SDT: u32 = 0u;       // scales and biases stored: 0 f32, 1 bf16, 2 f16
override ROUND: u32 = 0u;     // outputs: 0 none, 1 bf16, 2 f16
override THREADS: u32 = 256u;
override LANES: u32 = 16u;    // lanes a gate_up row (a power of two); THREADS / LANES row groups
override RPG: u32 = 1u;       // gate_up rows a row group: 2U / (THREADS / LANES)
override UPL: u32 = 3u;       // 16-byte units a lane of each gate_up row (the last ones masked past the row)
override DR: u32 = 6u;        // down rows a thread: ceil(K / THREADS)
const U: u32 = 8u;            // intermediate units a block
const MAXW: u32 = 32u;        // registers a lane: UPL * RPG units and their (scale, bias), DR sums

var<workgroup> red: array<f32, LANES * 2u * U>;
var<workgroup> act: array<f32, U>;

// #include "common/round.inc.wgsl"
// #include "common/silu_mul.inc.wgsl"
// #include "qlinear/qaffine.inc.wgsl"
// #include "qlinear/qxs.inc.wgsl"
// #include "qlinear/qunit.inc.wgsl"
// #include "matmul/row_groups.inc.wgsl"
// #include "matmul/mlp_fold.inc.wgsl"

// The block's U activations into act.
fn activations(blk: u32, tid: u32) {
  let g = tid / LANES;
  let l = tid % LANES;
  let upr = p.K * BITS / 128u;   // units a row
  var wv: array<vec4<u32>, MAXW>;
  var sb: array<vec2<f32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let row = urow(blk, g * RPG + r);
    for (var i = 0u; i < UPL; i++) {
      let u = min(l + i * LANES, upr - 1u);
      wv[i * RPG + r] = wq4[row * upr + u];
      sb[i * RPG + r] = affine_at(row, u * (128u / BITS));
    }
  }
  let inv = x_inv(tid);
  stage_x(tid, THREADS, 0u, inv);   // XSH (qgemv-mlp.ts sets it): the units read x there
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPL; i++) {
    let u = l + i * LANES;
    if (u < upr) {
      let xu = unit_x4(0u, u, inv);
      for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot4(wv[i * RPG + r], sb[i * RPG + r], xu); }
    }
  }
  set_activations(acc, l, g, tid);
}

// Level e (< 8) of the block's levels of a down row: words w0 (values 0..7 at 4 bits, 0..3 at 8) and w1 (4..7).
fn down_level(w0: u32, w1: u32, e: u32) -> f32 {
  if (BITS == 4u) { return f32((w0 >> (4u * e)) & 15u); }
  return f32((select(w0, w1, e >= 4u) >> (8u * (e % 4u))) & 255u);
}

// This block's partial of down into part row blk.
fn down_part(blk: u32, tid: u32) {
  let wpr = p.I * BITS / 32u;    // words a down row
  let wb = U * BITS / 32u;       // words of a row the block covers: 1 or 2
  let gpr = p.I / GS;
  var w: array<vec2<u32>, MAXW>;
  var sb: array<vec2<f32>, MAXW>;
  for (var j = 0u; j < DR; j++) {
    let n = min(tid + j * THREADS, p.K - 1u);
    let at = n * wpr + blk * wb;
    w[j] = vec2<u32>(dq[at], dq[at + wb - 1u]);
    let gi = n * gpr + blk * U / GS;
    let si = select(gi >> 1u, gi, SDT == 0u);
    sb[j] = vec2<f32>(stored(dscales[si], gi), stored(dbiases[si], gi));
  }
  var asum = 0.0;
  for (var e = 0u; e < U; e++) { asum += act[e]; }
  for (var j = 0u; j < DR; j++) {
    let n = tid + j * THREADS;
    var d = 0.0;
    for (var e = 0u; e < U; e++) { d += down_level(w[j].x, w[j].y, e) * act[e]; }
    if (n < p.K) { part[blk * p.K + n] = sb[j].x * d + sb[j].y * asum; }
  }
}

@compute @workgroup_size(THREADS)
fn qgemv_mlp(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  if (blk >= p.blocks) { return; }
  activations(blk, tid);
  down_part(blk, tid);
  finish_sums(blk, tid);
}
