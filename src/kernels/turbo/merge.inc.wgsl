// turbo_one's merge (turbo_one.wgsl includes it; its workgroup arrays and helpers are declared there): a head's
// output from its chunks' partial results, rotated back.

// Head h's output from its live chunks (see the header). No thread walks a chain of loads: M is a chunk a thread
// and a tree; the chunks' weights e^(m_c - M) are computed a tile of G chunks at a time, a chunk a thread, into wsh
// (and l_c e^(m_c - M) summed per thread, then by a tree); thread t adds dim t of each group over the tile's chunks
// in order, UNROLL loads issued before they are added. Then each group is rotated back. The order of every sum is
// fixed by kv_len alone (p.slots only places a head's chunks), so every reach gives the same bits.
fn merge(h: u32, live: u32, t: u32) {
  let first = h * p.slots;
  var big = NEG;
  for (var c = t; c < live; c += G) { big = max(big, part_ml[first + c].x); }
  sp[t] = big;
  tree(t, true);
  let m = sp[0];
  var l = 0.0;
  var o0 = 0.0;
  var o1 = 0.0;
  for (var c0 = 0u; c0 < live; c0 += G) {
    workgroupBarrier();   // M, or the last tile's weights, read by every thread before wsh is written
    var wc = 0.0;
    if (c0 + t < live) {
      let ml = part_ml[first + c0 + t];
      wc = exp(ml.x - m);
      l += ml.y * wc;
    }
    wsh[t] = wc;
    workgroupBarrier();
    let n = min(G, live - c0);
    for (var j0 = 0u; j0 < n; j0 += UNROLL) {
      var v0: array<f32, UNROLL>;
      var v1: array<f32, UNROLL>;
      for (var j = 0u; j < UNROLL; j++) {
        let at = (first + c0 + min(j0 + j, n - 1u)) * p.groups * G + t;
        v0[j] = part_o[at];
        if (p.groups > 1u) { v1[j] = part_o[at + G]; }
      }
      for (var j = 0u; j < UNROLL; j++) {
        if (j0 + j < n) {
          o0 += v0[j] * wsh[j0 + j];
          o1 += v1[j] * wsh[j0 + j];
        }
      }
    }
  }
  workgroupBarrier();
  sp[t] = l;
  tree(t, false);
  let inv = 1.0 / sp[0];
  for (var g = 0u; g < p.groups; g++) {
    xs[t] = select(o0, o1, g == 1u) * inv * sign2(t);
    workgroupBarrier();
    butterflies(t);
    let e = g * G + t;
    if (e < p.dim) {
      let col = h * p.dim + e;
      out[col] = gate_by(round_out(xs[t] * (INV_SQRT_G * sign1(t))), gate[col]);
    }
    workgroupBarrier();
  }
}

// sp[0] = the max (or the sum) of sp[0 .. G) by a tree (every thread calls it, after writing its sp[t]).
fn tree(t: u32, is_max: bool) {
  workgroupBarrier();
  for (var n = G / 2u; n > 0u; n >>= 1u) {
    if (t < n) { sp[t] = select(sp[t] + sp[t + n], max(sp[t], sp[t + n]), is_max); }
    workgroupBarrier();
  }
}
