// persist_mlp: a decode layer's MLP tail in one dispatch of p.n workgroups meeting at a grid barrier, for one x row:
// x += down(silu(gate) * up), gate | up = gate_up(rms(x)). The per-op path runs it as two gemv_wide dispatches
// (matmul_wide.wgsl: the norm + SwiGLU product, then the residual product); this gives the same bits, because each
// output is the same sums in the same order:
//  - a row's sum: WG lanes (WGU for gate_up, WGD for down: the per-op shapes' lanes, plan/gemv.ts), lane l adding
//    its UPL 16-byte units l, l + WG, .. in order from 0, then the lanes' sums in lane order (row_groups.inc.wgsl's
//    slot_totals); how rows are grouped into workgroups (RPG) changes nothing in a row's sum;
//  - x's inverse RMS by gemv_wide's tree (wide_inv.inc.wgsl) over THREADS threads, the per-op gate_up's THREADS;
//  - the roundings: gate and up rounded, silu_mul, then down's sum rounded and added to x as add() rounds.
// Step 1: workgroup w takes gate_up blocks w, w + n, .. (ROWSU / 2 gate rows and their up rows each) and stores their
// activations into act. grid_sync. Step 2: down blocks w, w + n, .. (ROWSD rows), each x[n] read and written by one
// workgroup. act crosses workgroups, so it is written and read by atomics (barrier.inc.wgsl says why); x is only read
// before the barrier and written after it. If the barrier fails, no workgroup runs step 2: x is as it was, and the
// caller redoes the MLP on the per-op path (persist/mlp.ts).

struct Params { K: u32, I: u32, n: u32, wait: u32, spin: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> ctl: array<atomic<u32>>;   // [3], barrier.inc.wgsl
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;      // [1, K], updated in place
@group(0) @binding(3) var<storage, read> wu: array<vec4<u32>>;            // gate_up [2I, K]
@group(0) @binding(4) var<storage, read> wd: array<vec4<u32>>;            // down [K, I]
@group(0) @binding(5) var<storage, read_write> act: array<atomic<u32>>;   // [I], f32 bits

override WDT: u32 = 1u;        // weights: 0 f32, 1 bf16, 2 f16
override ROUND: u32 = 0u;      // outputs: 0 none, 1 bf16, 2 f16
override THREADS: u32 = 256u;
override RPG: u32 = 4u;        // rows a row group (both products)
override WGU: u32 = 64u;       // lanes a gate_up row; THREADS / WGU row groups
override UPLU: u32 = 3u;       // 16-byte units a lane of a gate_up row
override WGD: u32 = 64u;       // lanes a down row
override UPLD: u32 = 8u;       // 16-byte units a lane of a down row
const MAXW: u32 = 32u;         // registers of weight units a lane: UPLU * RPG and UPLD * RPG

var<workgroup> red: array<f32, THREADS * RPG>;

// #include "common/round.inc.wgsl"
// #include "common/silu_mul.inc.wgsl"
// #include "matmul/halves.inc.wgsl"
// #include "matmul/row_groups.inc.wgsl"
// #include "matmul/wide_inv.inc.wgsl"
// #include "persist/barrier.inc.wgsl"

fn epv() -> u32 { return select(8u, 4u, WDT == 0u); }

// linear.inc.wgsl's helpers, over this kernel's bindings: the same arithmetic.
fn unit_dot(wv: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), a); }
  return dot_halves(wv, a, b);
}

fn xn4(v: vec4<f32>, inv: f32) -> vec4<f32> {
  return vec4<f32>(round_out(v.x * inv), round_out(v.y * inv), round_out(v.z * inv), round_out(v.w * inv));
}

fn inv_rms(ss: f32) -> f32 { return inverseSqrt(ss / f32(p.K) + p.eps); }

fn sq4(i: u32, end: u32) -> vec4<f32> {
  let v = x4[min(i, end - 1u)];
  return select(vec4<f32>(), v * v, i < end);
}

// act[4 j .. 4 j + 3], by atomic loads.
fn act4(j: u32) -> vec4<f32> {
  return vec4<f32>(bitcast<f32>(atomicLoad(&act[4u * j])), bitcast<f32>(atomicLoad(&act[4u * j + 1u])),
    bitcast<f32>(atomicLoad(&act[4u * j + 2u])), bitcast<f32>(atomicLoad(&act[4u * j + 3u])));
}

// gate_up row of slot r of block blk (gemv_block.inc.wgsl's wrow with SWIGLU): ROWSU / 2 gate rows, then their up
// rows I further on; slots past the end repeat the last row (computed, never stored).
fn urow(blk: u32, r: u32) -> u32 {
  let half = (THREADS / WGU) * RPG / 2u;
  let i = min(blk * half + r % half, p.I - 1u);
  return select(i, p.I + i, r >= half);
}

// Step 1's weight units of block blk for this thread: UPLU of each of its RPG gate_up rows.
fn up_units(blk: u32, tid: u32) -> array<vec4<u32>, MAXW> {
  let g = tid / WGU;
  let l = tid % WGU;
  let upr = p.K / epv();
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = urow(blk, g * RPG + r) * upr;
    for (var i = 0u; i < UPLU; i++) { wv[i * RPG + r] = wu[b + l + i * WGU]; }
  }
  return wv;
}

// Step 1, one block (its units wv): its activations into act.
fn gate_up_block(blk: u32, tid: u32, inv: f32, wv: array<vec4<u32>, MAXW>) {
  let g = tid / WGU;
  let l = tid % WGU;
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPLU; i++) {
    let xi = (l + i * WGU) * (epv() / 4u);
    let a = xn4(x4[xi], inv);
    var b = a;
    if (WDT != 0u) { b = xn4(x4[xi + 1u], inv); }
    for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot(wv[i * RPG + r], a, b); }
  }
  let rows = (THREADS / WGU) * RPG;
  let total = slot_totals(acc, l, g, tid, WGU, rows);
  if (tid < rows) { red[tid] = total; }
  workgroupBarrier();
  let half = rows / 2u;
  let i = blk * half + tid;
  if (tid < half && i < p.I) {
    atomicStore(&act[i], bitcast<u32>(silu_mul(round_out(red[tid]), round_out(red[half + tid]))));
  }
  workgroupBarrier();   // red is read before the next block's sums overwrite it
}

// Step 2's weight units of block blk for this thread: UPLD of each of its RPG down rows (past K: the last row).
fn down_units(blk: u32, tid: u32) -> array<vec4<u32>, MAXW> {
  let g = tid / WGD;
  let l = tid % WGD;
  let upr = p.I / epv();
  let rows = (THREADS / WGD) * RPG;
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = min(blk * rows + g * RPG + r, p.K - 1u) * upr;
    for (var i = 0u; i < UPLD; i++) { wv[i * RPG + r] = wd[b + l + i * WGD]; }
  }
  return wv;
}

// Step 2, one block (its units wv): x[n] = r(x[n] + r(down row n . act)) for its rows.
fn down_block(blk: u32, tid: u32, wv: array<vec4<u32>, MAXW>) {
  let g = tid / WGD;
  let l = tid % WGD;
  let rows = (THREADS / WGD) * RPG;
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPLD; i++) {
    let xi = (l + i * WGD) * (epv() / 4u);
    let a = act4(xi);
    var b = a;
    if (WDT != 0u) { b = act4(xi + 1u); }
    for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot(wv[i * RPG + r], a, b); }
  }
  let total = slot_totals(acc, l, g, tid, WGD, rows);
  let n = blk * rows + tid;
  if (tid < rows && n < p.K) { x4[n >> 2u][n & 3u] = round_out(x4[n >> 2u][n & 3u] + round_out(total)); }
}

// Weights never depend on the barrier: each workgroup's first block of either step is loaded before what it waits
// for (x's norm, the barrier), as gemv_wide issues its loads before its norm.
@compute @workgroup_size(THREADS)
fn persist_mlp(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let half = (THREADS / WGU) * RPG / 2u;
  var uw = up_units(wid.x, tid);
  let inv = wide_inv(tid);
  for (var blk = wid.x; blk < (p.I + half - 1u) / half; blk += p.n) {
    if (blk != wid.x) { uw = up_units(blk, tid); }
    gate_up_block(blk, tid, inv, uw);
  }
  var dw = down_units(wid.x, tid);
  if (grid_sync(tid, 0u)) {
    let rows = (THREADS / WGD) * RPG;
    for (var blk = wid.x; blk < (p.K + rows - 1u) / rows; blk += p.n) {
      if (blk != wid.x) { dw = down_units(blk, tid); }
      down_block(blk, tid, dw);
    }
  }
  grid_exit(tid);
}
