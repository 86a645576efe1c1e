// One row of prefill attention's softmax by a workgroup, shared through `// #include "attention/softmax_row.inc.wgsl"`
// by sdpa_mm.wgsl (f32 products) and sdpa_mm_f16.wgsl (tensor cores). The includer declares `const WG: u32` (a power
// of two), `const NEG: f32`, `var<workgroup> red: array<f32, WG>`, the binding `s` (the row's scores, then its
// weights), `p.kv_len`, `p.kvp`, `p.scale`, `fn visible(i, j) -> bool` (common/mask.inc.wgsl) and
// `fn weight_out(row: u32, j: u32, e: f32)` (whatever else the includer writes of each weight). Every thread of the
// workgroup calls these, in uniform control flow. Never compiled on its own.

// The max (or with `add` the sum, by halves) of red[0 .. WG), in every lane; red is free again after.
fn tree(t: u32, add: bool) -> f32 {
  workgroupBarrier();
  for (var n = WG / 2u; n > 0u; n >>= 1u) {
    if (t < n) { red[t] = select(max(red[t], red[t + n]), red[t] + red[t + n], add); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

// Query i's row of s from `row`: s'_j = scale * s_j where key j is visible, M = max s', P_j = e^(s'_j - M) (0 where
// not visible or past kv_len, up to kvp) passed to weight_out, and written over s when `keep` (where the includer
// reads them back); returns L = sum P_j.
fn softmax_row(t: u32, i: u32, row: u32, keep: bool) -> f32 {
  var mx = NEG;
  for (var j = t; j < p.kv_len; j += WG) {
    if (visible(i, j)) { mx = max(mx, p.scale * s[row + j]); }
  }
  red[t] = mx;
  let big = tree(t, false);
  var sum = 0.0;
  for (var j = t; j < p.kvp; j += WG) {
    var e = 0.0;
    if (j < p.kv_len && visible(i, j)) { e = exp(p.scale * s[row + j] - big); }
    if (keep) { s[row + j] = e; }
    weight_out(row, j, e);
    sum += e;
  }
  red[t] = sum;
  return tree(t, true);
}
