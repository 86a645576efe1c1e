// What the one-dispatch MLP kernels share (gemv_mlp.wgsl, qlinear/qgemv_mlp.wgsl), through
// `// #include "matmul/mlp_fold.inc.wgsl"`: x's norm, a block's gate_up rows and activations, and the blocks'
// partials of down added by whoever finishes last, in groups of p.group and then the group sums, into
// x = r(x + r(sum)) (gemv_mlp.wgsl says why and how). The includer declares `p.K`, `p.I`, `p.eps`, `p.blocks`,
// `p.group`, the bindings `x4` (read_write), `part` and `done`, `override THREADS`, `override DR`, `LANES` and `U`
// (overrides or consts), `const MAXW`, `var<workgroup> red` (>= THREADS and >= LANES * 2U floats),
// `var<workgroup> act` (U floats) and `ROUND`. Never compiled on its own.
// #include "common/silu_mul.inc.wgsl"
// #include "matmul/row_groups.inc.wgsl"

var<workgroup> last: u32;

// Gate_up row of slot r of block blk: gate rows blk * U.., then their up rows I further on.
fn urow(blk: u32, r: u32) -> u32 {
  return select(blk * U + r, p.I + blk * U + r - U, r >= U);
}

// The block's U activations a_j = silu_mul(gate_j, up_j) into act, from its lanes' sums of the 2U gate_up rows.
fn set_activations(acc: array<f32, MAXW>, l: u32, g: u32, tid: u32) {
  let rows = 2u * U;
  let total = slot_totals(acc, l, g, tid, LANES, rows);
  if (tid < rows) { red[tid] = total; }
  workgroupBarrier();
  if (tid < U) { act[tid] = silu_mul(round_out(red[tid]), round_out(red[U + tid])); }
  workgroupBarrier();
}

// The inverse RMS of x by all THREADS threads (red holds the tree: LANES * 2U >= THREADS).
fn x_inv(tid: u32) -> f32 {
  let xpr = p.K / 4u;
  var s = 0.0;
  for (var j = tid; j < xpr; j += THREADS) {
    let v = x4[j];
    s += dot(v, v);
  }
  red[tid] = s;
  workgroupBarrier();
  for (var span = THREADS / 2u; span > 0u; span >>= 1u) {
    if (tid < span) { red[tid] += red[tid + span]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(p.K) + p.eps);
  workgroupBarrier();   // every thread has read red[0] before the sums overwrite it
  return inv;
}

fn xn4(v: vec4<f32>, inv: f32) -> vec4<f32> {
  return vec4<f32>(round_out(v.x * inv), round_out(v.y * inv), round_out(v.z * inv), round_out(v.w * inv));
}

// Rows b0 .. b1 - 1 of part added in row order at this thread's DR columns (tid, tid + THREADS, ..): RB rows' loads
// issued before any of them is added, so a reduction waits on a few round trips to memory, not on one a row.
const RB: u32 = 8u;

fn sum_rows(b0: u32, b1: u32, tid: u32) -> array<f32, MAXW> {
  var s: array<f32, MAXW>;
  for (var j = 0u; j < DR; j++) { s[j] = -0.0; }
  for (var b = b0; b < b1; b += RB) {
    var v: array<f32, RB * MAXW>;
    for (var r = 0u; r < RB; r++) {
      let row = min(b + r, b1 - 1u);
      for (var j = 0u; j < DR; j++) { v[r * DR + j] = part[row * p.K + min(tid + j * THREADS, p.K - 1u)]; }
    }
    for (var r = 0u; r < RB; r++) {
      if (b + r < b1) {
        for (var j = 0u; j < DR; j++) { s[j] += v[r * DR + j]; }
      }
    }
  }
  return s;
}

// Count `c` as one more of `total` done; true (in every thread) for the last one.
fn count_last(c: u32, total: u32, tid: u32) -> bool {
  storageBarrier();   // this workgroup's writes before its count
  if (tid == 0u) { last = select(0u, 1u, atomicAdd(&done[c], 1u) == total - 1u); }
  let is_last = workgroupUniformLoad(&last) == 1u;
  storageBarrier();   // the count before the others' results are read
  return is_last;
}

// After block blk wrote its partial row of part: the counts, the group's sum by its last block, x by the last group.
fn finish_sums(blk: u32, tid: u32) {
  let gi = blk / p.group;
  let first = gi * p.group;
  let last_block = min(first + p.group, p.blocks);
  if (!count_last(gi, last_block - first, tid)) { return; }
  let groups = (p.blocks + p.group - 1u) / p.group;
  let gs = sum_rows(first, last_block, tid);
  for (var j = 0u; j < DR; j++) {
    let n = tid + j * THREADS;
    if (n < p.K) { part[(p.blocks + gi) * p.K + n] = gs[j]; }
  }
  if (tid == 0u) { atomicStore(&done[gi], 0u); }
  if (!count_last(groups, groups, tid)) { return; }
  let total = sum_rows(p.blocks, p.blocks + groups, tid);
  for (var j = 0u; j < DR; j++) {
    let n = tid + j * THREADS;
    if (n < p.K) { x4[n >> 2u][n & 3u] = round_out(x4[n >> 2u][n & 3u] + round_out(total[j])); }
  }
  if (tid == 0u) { atomicStore(&done[groups], 0u); }
}
