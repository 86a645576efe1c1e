// Row ops over the last axis, all f32 (MLX's precise softmax), one workgroup per row (row = wid.x + wid.y *
// num_workgroups.x), lanes striding over the columns. Row statistics use an online max / sum of exponentials per
// lane (one read of the row), merged across the workgroup in shared memory:
//   softmax_rows      out = exp(v - max) / sum,  v = x * inv_temp
//   log_softmax_rows  out = (v - max) - log(sum)
//   logsumexp_rows    out[r] = max + log(sum)
//   kl_rows           out[r] = sum_j P_j (lp_j - lq_j), lp/lq log-softmax of rows of x (P) and y (Q)
//   argmax_rows       idx[r] = first j with x[r, j] = max_j x[r, j]; 0xffffffff when the row holds a NaN (no
//                     index is right then: the CPU sampler refuses such logits, and a GPU-chained decode must too)
// Every lane starts its max at -FLT_MAX (not -inf) so merging lanes that saw no column gives exp(-inf) = 0, never
// NaN; a row of only -inf therefore gives NaN for softmax, as MLX does.

struct Params { rows: u32, cols: u32, inv_temp: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> idx: array<u32>;

override WG: u32 = 256u;   // power of two

const LOWEST: f32 = -0x1.fffffep+127f;   // -FLT_MAX
const NONE: u32 = 0xffffffffu;

var<workgroup> sm: array<f32, WG>;
var<workgroup> ss: array<f32, WG>;
var<workgroup> si: array<u32, WG>;
var<workgroup> sn: array<u32, WG>;

// Running (max, sum of exp(v - max)) after one more value.
fn push(st: vec2<f32>, v: f32) -> vec2<f32> {
  if (v > st.x) { return vec2<f32>(v, st.y * exp(st.x - v) + 1.0); }
  return vec2<f32>(st.x, st.y + exp(v - st.x));
}

fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let m = max(a.x, b.x);
  return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// (max, sum) of the whole row, the same in every lane.
fn reduce_stats(st: vec2<f32>, lid: u32) -> vec2<f32> {
  sm[lid] = st.x;
  ss[lid] = st.y;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let m = merge(vec2<f32>(sm[lid], ss[lid]), vec2<f32>(sm[lid + s], ss[lid + s]));
      sm[lid] = m.x;
      ss[lid] = m.y;
    }
    workgroupBarrier();
  }
  let res = vec2<f32>(sm[0], ss[0]);
  workgroupBarrier();
  return res;
}

fn reduce_sum(v: f32, lid: u32) -> f32 {
  ss[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { ss[lid] += ss[lid + s]; }
    workgroupBarrier();
  }
  let res = ss[0];
  workgroupBarrier();
  return res;
}

fn row_stats(base: u32, lid: u32) -> vec2<f32> {
  var st = vec2<f32>(LOWEST, 0.0);
  for (var j = lid; j < p.cols; j += WG) { st = push(st, x[base + j] * p.inv_temp); }
  return reduce_stats(st, lid);
}

fn row_of(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }

@compute @workgroup_size(WG)
fn softmax_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = row_stats(base, lid);
  let inv = 1.0 / st.y;
  for (var j = lid; j < p.cols; j += WG) { out[base + j] = exp(x[base + j] * p.inv_temp - st.x) * inv; }
}

@compute @workgroup_size(WG)
fn log_softmax_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = row_stats(base, lid);
  let ls = log(st.y);
  for (var j = lid; j < p.cols; j += WG) { out[base + j] = (x[base + j] * p.inv_temp - st.x) - ls; }
}

@compute @workgroup_size(WG)
fn logsumexp_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let st = row_stats(row * p.cols, lid);
  if (lid == 0u) { out[row] = st.x + log(st.y); }
}

@compute @workgroup_size(WG)
fn kl_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var sp = vec2<f32>(LOWEST, 0.0);
  var sq = vec2<f32>(LOWEST, 0.0);
  for (var j = lid; j < p.cols; j += WG) {
    sp = push(sp, x[base + j]);
    sq = push(sq, y[base + j]);
  }
  sp = reduce_stats(sp, lid);
  sq = reduce_stats(sq, lid);
  let lsp = log(sp.y);
  let lsq = log(sq.y);
  var acc = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    let lp = (x[base + j] - sp.x) - lsp;
    let lq = (y[base + j] - sq.x) - lsq;
    acc += exp(lp) * (lp - lq);
  }
  let kl = reduce_sum(acc, lid);
  if (lid == 0u) { out[row] = kl; }
}

@compute @workgroup_size(WG)
fn argmax_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = row_of(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var best = LOWEST;
  var at = NONE;
  var nan = 0u;
  // Lanes visit increasing columns, so a strict > keeps each lane's first maximum. NaN is found by its bits
  // (compilers may assume comparisons never see one).
  for (var j = lid; j < p.cols; j += WG) {
    let v = x[base + j];
    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { nan = 1u; }
    if (at == NONE || v > best) { best = v; at = j; }
  }
  sm[lid] = best;
  si[lid] = at;
  sn[lid] = nan;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let v = sm[lid + s];
      let i = si[lid + s];
      let take = i != NONE && (si[lid] == NONE || v > sm[lid] || (v == sm[lid] && i < si[lid]));
      if (take) { sm[lid] = v; si[lid] = i; }
      sn[lid] |= sn[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) { idx[row] = select(select(si[0], 0u, si[0] == NONE), NONE, sn[0] != 0u); }
}
