// gemv_mlp: a decode layer's whole MLP in one dispatch, for one x row: x += down(silu(gate) * up), gate | up =
// gate_up(rms(x)), the same roundings as matmul's norm + swiglu product followed by its residual product (two
// dispatches; gemv-mlp.ts composes those where this cannot run, and they are its reference).
//  - Workgroup b owns the intermediate units i0 = b * U .. i0 + U - 1. It computes its 2U rows of gate_up (gate rows
//    i0.., up rows I + i0..) as gemv_wide computes a block: LANES lanes a row, THREADS / LANES row groups of RPG
//    rows, every weight load issued before the norm prologue, which runs while they are in flight. Its U
//    activations a_j = silu_mul(gate_j, up_j) stay in workgroup memory.
//  - Then its share of down: part_b[n] = sum_j W_down[n, i0 + j] a_j for every n < K, read as the UB 16-byte units
//    (U / 8 of halves, U / 4 of f32) of each down row that its block covers; with PRE they are loaded with gate_up's.
//  - The partial sums are added by whoever finishes last; no workgroup waits for another. Blocks count themselves
//    done in groups of p.group: the last block of a group to finish adds the group's partials in block order into
//    the group's sum, then counts the group done; the last group adds the group sums in group order and writes
//    x = r(x + r(sum)) (add()'s rounding) in place. Each sets its count back to 0 for the next dispatch. The order
//    of every sum is fixed by the shapes alone, so the result does not depend on timing. As with sdpa_one's folded
//    merge, WGSL orders storage writes between workgroups only across dispatches: this relies on the barriers
//    around each count reaching the whole device (checked on the CPU drivers by tests/kernels/matmul/gemv-mlp.test.ts and
//    on the GPU machine by testkit/kernels/gemv-mlp.check.ts, bench/parity.ts).
// x is read by every block and written only by the last, after every block has counted itself done.

struct Params { K: u32, I: u32, blocks: u32, group: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x4: array<vec4<f32>>;   // [1, K]
@group(0) @binding(2) var<storage, read> wu: array<vec4<u32>>;         // gate_up [2I, K]
@group(0) @binding(3) var<storage, read> wd: array<vec4<u32>>;         // down [K, I]
@group(0) @binding(4) var<storage, read_write> part: array<f32>;       // [blocks + groups, K]
@group(0) @binding(5) var<storage, read_write> done: array<atomic<u32>>; // [groups + 1], 0 between dispatches

override WDT: u32 = 1u;       // weights: 0 f32, 1 bf16, 2 f16
override ROUND: u32 = 0u;     // outputs: 0 none, 1 bf16, 2 f16
override THREADS: u32 = 256u;
override LANES: u32 = 64u;    // lanes a gate_up row (a power of two); THREADS / LANES row groups
override U: u32 = 8u;         // intermediate units a block: 2U gate_up rows
override RPG: u32 = 4u;       // gate_up rows a row group: 2U / (THREADS / LANES)
override UPL: u32 = 3u;       // 16-byte units a lane of each gate_up row (the last ones masked past the row)
override DR: u32 = 6u;        // down rows a thread: ceil(K / THREADS)
override UB: u32 = 1u;        // 16-byte units of a down row a block covers: U / (weights a unit)
override PRE: bool = false;   // down's units loaded before gate_up's work (see gemv_mlp)
const MAXW: u32 = 32u;        // registers a lane: UPL * RPG and DR * UB weight units, DR sums

var<workgroup> red: array<f32, LANES * 2u * U>;
var<workgroup> act: array<f32, U>;

// #include "common/round.inc.wgsl"
// #include "common/silu_mul.inc.wgsl"
// #include "matmul/halves.inc.wgsl"
// #include "matmul/row_groups.inc.wgsl"
// #include "matmul/mlp_fold.inc.wgsl"

// Weights a 16-byte unit: 4 f32 or 8 halves.
fn epv() -> u32 { return select(8u, 4u, WDT == 0u); }

// dot of one 16-byte weight unit with the values it multiplies: a (f32 weights), or a then b (halves).
fn unit_dot(wv: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), a); }
  return dot_halves(wv, a, b);
}

// The block's U activations into act.
fn activations(blk: u32, tid: u32) {
  let g = tid / LANES;
  let l = tid % LANES;
  let upr = p.K / epv();
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = urow(blk, g * RPG + r) * upr;
    for (var i = 0u; i < UPL; i++) { wv[i * RPG + r] = wu[b + min(l + i * LANES, upr - 1u)]; }
  }
  let inv = x_inv(tid);
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPL; i++) {
    let u = l + i * LANES;
    if (u < upr) {
      // The x values of unit u: 4 (f32 weights) or 8 (halves).
      let xi = select(2u * u, u, WDT == 0u);
      let a = xn4(x4[xi], inv);
      var b = a;
      if (WDT != 0u) { b = xn4(x4[xi + 1u], inv); }
      for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot(wv[i * RPG + r], a, b); }
    }
  }
  set_activations(acc, l, g, tid);
}

// act[4 j .. 4 j + 3]
fn act4(j: u32) -> vec4<f32> {
  return vec4<f32>(act[4u * j], act[4u * j + 1u], act[4u * j + 2u], act[4u * j + 3u]);
}

// This thread's units of the block's columns of down: UB of each of its DR rows (tid, tid + THREADS, ..).
fn down_units(blk: u32, tid: u32) -> array<vec4<u32>, MAXW> {
  let dpr = p.I / epv();
  var wv: array<vec4<u32>, MAXW>;
  for (var j = 0u; j < DR; j++) {
    let n = min(tid + j * THREADS, p.K - 1u);
    for (var v = 0u; v < UB; v++) { wv[j * UB + v] = wd[n * dpr + blk * UB + v]; }
  }
  return wv;
}

// This block's partial of down (its units wv) into part row blk.
fn down_part(blk: u32, tid: u32, wv: array<vec4<u32>, MAXW>) {
  for (var j = 0u; j < DR; j++) {
    let n = tid + j * THREADS;
    var s = -0.0;
    for (var v = 0u; v < UB; v++) {
      if (WDT == 0u) { s += unit_dot(wv[j * UB + v], act4(v), act4(v)); }
      else { s += unit_dot(wv[j * UB + v], act4(2u * v), act4(2u * v + 1u)); }
    }
    if (n < p.K) { part[blk * p.K + n] = s; }
  }
}

@compute @workgroup_size(THREADS)
fn gemv_mlp(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  if (blk >= p.blocks) { return; }
  // PRE: down's units are loaded with gate_up's, one round trip to memory a block instead of two, at the price of
  // their registers while gate_up's are live (fewer workgroups resident). Benchmarks choose.
  var dw: array<vec4<u32>, MAXW>;
  if (PRE) { dw = down_units(blk, tid); }
  activations(blk, tid);
  if (!PRE) { dw = down_units(blk, tid); }
  down_part(blk, tid, dw);
  finish_sums(blk, tid);
}
