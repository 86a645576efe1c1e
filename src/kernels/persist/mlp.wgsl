// persist_mlp: a decode layer's tail in one dispatch of p.n workgroups meeting at grid barriers, for one x row:
// x += down(silu(gate) * up), gate | up = gate_up(rms(x)), with OPROJ first x += o_proj(attn), and with NEXT then
// gq = gqkv(rms(x)), the next layer's normed gqkv projection (the norm's eps is the MLP's). The per-op path runs it
// as gemv_wide dispatches (matmul_wide.wgsl: o_proj's residual product, the norm + SwiGLU product, down's residual
// product, the next layer's norm product); this gives the same bits, because each output is the same sums in the
// same order:
//  - a row's sum: WG lanes (WGO for o_proj, WGU for gate_up, WGD for down, WGQ for gqkv: the per-op shapes' lanes,
//    plan/gemv.ts), lane l adding its UPL 16-byte units l, l + WG, .. in order from 0, then the lanes' sums in lane
//    order (row_groups.inc.wgsl's slot_totals); how rows are grouped into workgroups (RPG) changes nothing in a sum;
//  - x's inverse RMS by gemv_wide's tree (wide_inv.inc.wgsl) over the per-op norm products' threads: gate_up's
//    THREADS, gqkv's TQ (its per-op gemv_wide may have fewer: 32 lanes x 4 groups for N >= 4096);
//  - the roundings: o_proj's sum rounded and added to x as add() rounds; gate and up rounded, silu_mul, then down's
//    sum rounded and added to x the same way; the normed x's elements and gqkv's sums rounded as gemv_wide rounds.
// With OPROJ, step 0: workgroup w takes o_proj blocks w, w + n, .. (ROWSO rows each) and stores x + o_proj(attn)
// into mid[I ..]. grid_sync. Step 1: gate_up blocks w, w + n, .. (ROWSU / 2 gate rows and their up rows each), their
// activations into mid[0 .. I]. grid_sync. Step 2: down blocks w, w + n, .. (ROWSD rows), each x[n] written by one
// workgroup (with NEXT also into mid[XN ..], XN = I, + K with OPROJ). With NEXT, grid_sync, then step 3: x's norm
// from mid[XN ..] and gqkv blocks w, w + n, .. (ROWSQ rows) into gq. Barriers: 1, + 1 with OPROJ, + 1 with NEXT.
// mid crosses workgroups, so it is written and read by atomics (barrier.inc.wgsl says why); x is only read before
// the barrier before step 2 and written after it. If a barrier fails, no workgroup runs what follows it: with the
// barrier before step 3 (NEXT), x holds the whole tail's result and gq is left undone; else x is as it was. The
// caller redoes the work on the per-op path (persist/mlp.ts; a decode step redoes the whole step, hrm/stepper.ts).

struct Params { K: u32, I: u32, n: u32, absent_at: u32, spin: u32, eps: f32, HD: u32, N: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> ctl: array<atomic<u32>>;   // [3], barrier.inc.wgsl
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;      // [1, K], updated in place
@group(0) @binding(3) var<storage, read> wu: array<vec4<u32>>;            // gate_up [2I, K]
@group(0) @binding(4) var<storage, read> wd: array<vec4<u32>>;            // down [K, I]
@group(0) @binding(5) var<storage, read_write> mid: array<atomic<u32>>;   // f32 bits: act [I], (OPROJ) x [K], (NEXT) x [K]
@group(0) @binding(6) var<storage, read> wo: array<vec4<u32>>;            // o_proj [K, HD] (OPROJ)
@group(0) @binding(7) var<storage, read> attn4: array<vec4<f32>>;         // [1, HD] (OPROJ)
@group(0) @binding(8) var<storage, read> wq: array<vec4<u32>>;            // the next gqkv [N, K] (NEXT)
@group(0) @binding(9) var<storage, read_write> gq: array<f32>;            // [1, N] (NEXT)

override WDT: u32 = 1u;        // weights: 0 f32, 1 bf16, 2 f16
override ROUND: u32 = 0u;      // outputs: 0 none, 1 bf16, 2 f16
override THREADS: u32 = 256u;
override RPG: u32 = 4u;        // rows a row group (every product)
override WGU: u32 = 64u;       // lanes a gate_up row; THREADS / WGU row groups
override UPLU: u32 = 3u;       // 16-byte units a lane of a gate_up row
override WGD: u32 = 64u;       // lanes a down row
override UPLD: u32 = 8u;       // 16-byte units a lane of a down row
override OPROJ: bool = false;  // step 0, x += o_proj(attn), before the MLP
override WGO: u32 = 64u;       // lanes an o_proj row (OPROJ)
override UPLO: u32 = 1u;       // 16-byte units a lane of an o_proj row (OPROJ)
override UPLM: u32 = 8u;       // the larger of UPLD and (OPROJ) UPLO: the residual products' unit loop
override NEXT: bool = false;   // step 3, gq = gqkv(rms(x)), after the MLP
override WGQ: u32 = 64u;       // lanes a gqkv row (NEXT)
override UPLQ: u32 = 1u;       // 16-byte units a lane of a gqkv row (NEXT)
override TQ: u32 = 256u;       // threads of gqkv's per-op gemv_wide (NEXT): its norm's tree, <= THREADS
override UPLN: u32 = 3u;       // the larger of UPLU and (NEXT) UPLQ: the norm products' unit loop
const MAXW: u32 = 32u;         // registers of weight units a lane: UPLN * RPG and UPLM * RPG

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

// mid[w .. w + 3], by atomic loads.
fn mid4(w: u32) -> vec4<f32> {
  return vec4<f32>(bitcast<f32>(atomicLoad(&mid[w])), bitcast<f32>(atomicLoad(&mid[w + 1u])),
    bitcast<f32>(atomicLoad(&mid[w + 2u])), bitcast<f32>(atomicLoad(&mid[w + 3u])));
}

// The norm products' phase (NEXT): 0 while the kernel runs up to step 3, 1 in it (the x wide_inv and step 3 read).
var<private> nph: u32;

// Where NEXT's step 2 also stores x for step 3: after act, and after step 0's x with OPROJ.
fn xn0() -> u32 { return select(p.I, p.I + p.K, OPROJ); }

// x[4 j .. 4 j + 3] as the norm products read it: in step 1 x itself, or with OPROJ x + o_proj(attn), step 0's
// output in mid; in step 3 (nph 1) step 2's output in mid.
fn xm4(j: u32) -> vec4<f32> {
  if (nph == 1u) { return mid4(xn0() + 4u * j); }
  if (OPROJ) { return mid4(p.I + 4u * j); }
  return x4[j];
}

// x[n] as step 2 reads it: x itself, or with OPROJ step 0's output.
fn xm(n: u32) -> f32 {
  if (OPROJ) { return bitcast<f32>(atomicLoad(&mid[p.I + n])); }
  return x4[n >> 2u][n & 3u];
}

fn sq4(i: u32, end: u32) -> vec4<f32> {
  let v = xm4(min(i, end - 1u));
  return select(vec4<f32>(), v * v, i < end);
}

// The norm products over rms(x) (K columns): step 1 (ph 0) gate_up with SwiGLU into mid[0 .. I], step 3 (ph 1,
// NEXT) gqkv into gq. Their lanes, units a lane, and outputs a block (ROWSU / 2 activations, ROWSQ rows):
fn norm_wg(ph: u32) -> u32 { return select(WGU, WGQ, ph == 1u); }
fn norm_upl(ph: u32) -> u32 { return select(UPLU, UPLQ, ph == 1u); }
fn norm_outs(ph: u32) -> u32 { return (THREADS / norm_wg(ph)) * RPG / select(2u, 1u, ph == 1u); }
fn norm_unit(ph: u32, i: u32) -> vec4<u32> {
  if (ph == 1u) { return wq[i]; }
  return wu[i];
}

// The weight row of slot r of block blk (gemv_block.inc.wgsl's wrow): gqkv's ROWSQ rows; gate_up's ROWSU / 2 gate
// rows, then their up rows I further on (SWIGLU); slots past the end repeat the last row (computed, never stored).
fn norm_row(ph: u32, blk: u32, r: u32) -> u32 {
  let outs = norm_outs(ph);
  if (ph == 1u) { return min(blk * outs + r, p.N - 1u); }
  let i = min(blk * outs + r % outs, p.I - 1u);
  return select(i, p.I + i, r >= outs);
}

// A norm product's weight units of block blk for this thread: its UPL of each of its RPG rows.
fn norm_units(ph: u32, blk: u32, tid: u32) -> array<vec4<u32>, MAXW> {
  let wg = norm_wg(ph);
  let g = tid / wg;
  let l = tid % wg;
  let upr = p.K / epv();
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = norm_row(ph, blk, g * RPG + r) * upr;
    for (var i = 0u; i < UPLN; i++) {
      if (i < norm_upl(ph)) { wv[i * RPG + r] = norm_unit(ph, b + l + i * wg); }
    }
  }
  return wv;
}

// A norm product, one block (its units wv): its activations into mid[0 .. I] (ph 0), its rows into gq (ph 1).
fn norm_block(ph: u32, blk: u32, tid: u32, inv: f32, wv: array<vec4<u32>, MAXW>) {
  let wg = norm_wg(ph);
  let g = tid / wg;
  let l = tid % wg;
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPLN; i++) {
    if (i < norm_upl(ph)) {
      let xi = (l + i * wg) * (epv() / 4u);
      let a = xn4(xm4(xi), inv);
      var b = a;
      if (WDT != 0u) { b = xn4(xm4(xi + 1u), inv); }
      for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot(wv[i * RPG + r], a, b); }
    }
  }
  let rows = (THREADS / wg) * RPG;
  let total = slot_totals(acc, l, g, tid, wg, rows);
  if (tid < rows) { red[tid] = total; }
  workgroupBarrier();
  let outs = norm_outs(ph);
  let i = blk * outs + tid;
  if (ph == 1u) {
    if (tid < outs && i < p.N) { gq[i] = round_out(red[tid]); }
  } else if (tid < outs && i < p.I) {
    atomicStore(&mid[i], bitcast<u32>(silu_mul(round_out(red[tid]), round_out(red[outs + tid]))));
  }
  workgroupBarrier();   // red is read before the next block's sums overwrite it
}

// A norm product's step for workgroup w: x's norm, then blocks w, w + n, .. (the first's units wv loaded ahead).
fn norm_step(ph: u32, w: u32, tid: u32, first: array<vec4<u32>, MAXW>) {
  var wv = first;
  let inv = wide_inv_over(tid, select(THREADS, TQ, ph == 1u));
  let outs = norm_outs(ph);
  for (var blk = w; blk < (select(p.I, p.N, ph == 1u) + outs - 1u) / outs; blk += p.n) {
    if (blk != w) { wv = norm_units(ph, blk, tid); }
    norm_block(ph, blk, tid, inv, wv);
  }
}

// The residual products, x[n] = r(x[n] + r(row n . v)) over K rows: step 0 (ph 0, OPROJ) o_proj's rows . attn into
// mid[I ..], step 2 (ph 1) down's rows . act into x, from step 0's x with OPROJ. Their lanes, units and row length:
fn res_wg(ph: u32) -> u32 { return select(WGD, WGO, ph == 0u); }
fn res_upl(ph: u32) -> u32 { return select(UPLD, UPLO, ph == 0u); }
fn res_len(ph: u32) -> u32 { return select(p.I, p.HD, ph == 0u); }
fn res_unit(ph: u32, i: u32) -> vec4<u32> {
  if (ph == 0u) { return wo[i]; }
  return wd[i];
}
fn res_in4(ph: u32, j: u32) -> vec4<f32> {
  if (ph == 0u) { return attn4[j]; }
  return mid4(4u * j);
}

// A residual step's weight units of block blk for this thread: its UPL of each of its RPG rows (past K: the last).
fn res_units(ph: u32, blk: u32, tid: u32) -> array<vec4<u32>, MAXW> {
  let wg = res_wg(ph);
  let g = tid / wg;
  let l = tid % wg;
  let upr = res_len(ph) / epv();
  let rows = (THREADS / wg) * RPG;
  var wv: array<vec4<u32>, MAXW>;
  for (var r = 0u; r < RPG; r++) {
    let b = min(blk * rows + g * RPG + r, p.K - 1u) * upr;
    for (var i = 0u; i < UPLM; i++) {
      if (i < res_upl(ph)) { wv[i * RPG + r] = res_unit(ph, b + l + i * wg); }
    }
  }
  return wv;
}

// A residual step, one block (its units wv): x[n] = r(x[n] + r(row n . v)) for its rows.
fn res_block(ph: u32, blk: u32, tid: u32, wv: array<vec4<u32>, MAXW>) {
  let wg = res_wg(ph);
  let g = tid / wg;
  let l = tid % wg;
  let rows = (THREADS / wg) * RPG;
  var acc: array<f32, MAXW>;
  for (var i = 0u; i < UPLM; i++) {
    if (i < res_upl(ph)) {
      let xi = (l + i * wg) * (epv() / 4u);
      let a = res_in4(ph, xi);
      var b = a;
      if (WDT != 0u) { b = res_in4(ph, xi + 1u); }
      for (var r = 0u; r < RPG; r++) { acc[r] += unit_dot(wv[i * RPG + r], a, b); }
    }
  }
  let total = slot_totals(acc, l, g, tid, wg, rows);
  let n = blk * rows + tid;
  if (tid < rows && n < p.K) {
    if (ph == 0u) {
      atomicStore(&mid[p.I + n], bitcast<u32>(round_out(x4[n >> 2u][n & 3u] + round_out(total))));
    } else {
      let v = round_out(xm(n) + round_out(total));
      x4[n >> 2u][n & 3u] = v;
      if (NEXT) { atomicStore(&mid[xn0() + n], bitcast<u32>(v)); }
    }
  }
}

// A residual step's blocks for workgroup w: w, w + n, .. (the first's units wv loaded ahead by the caller).
fn res_step(ph: u32, w: u32, tid: u32, first: array<vec4<u32>, MAXW>) {
  var wv = first;
  let rows = (THREADS / res_wg(ph)) * RPG;
  for (var blk = w; blk < (p.K + rows - 1u) / rows; blk += p.n) {
    if (blk != w) { wv = res_units(ph, blk, tid); }
    res_block(ph, blk, tid, wv);
  }
}

// Weights never depend on a barrier: each workgroup's first block of every step is loaded before what it waits for
// (x's norm, the barrier), as gemv_wide issues its loads before its norm.
@compute @workgroup_size(THREADS)
fn persist_mlp(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  if (OPROJ) { res_step(0u, wid.x, tid, res_units(0u, wid.x, tid)); }
  let uw = norm_units(0u, wid.x, tid);
  var ok = true;
  if (OPROJ) { ok = grid_sync(tid, 0u); }
  if (ok) {
    norm_step(0u, wid.x, tid, uw);
    let dw = res_units(1u, wid.x, tid);
    let b = select(0u, 1u, OPROJ);   // the barrier before step 2
    if (grid_sync(tid, b)) {
      res_step(1u, wid.x, tid, dw);
      if (NEXT) {
        let qw = norm_units(1u, wid.x, tid);
        if (grid_sync(tid, b + 1u)) {
          nph = 1u;
          norm_step(1u, wid.x, tid, qw);
        }
      }
    }
  }
  grid_exit(tid);
}
