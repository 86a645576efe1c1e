// gemv_word's loop over one weight row (matmul.wgsl, matmul_f16.wgsl), through
// `// #include "matmul/gemv_word.inc.wgsl"`: one u32 word of weights per lane per step; the first and last word of
// a row may straddle a neighbouring row when K is odd, so those halves are masked. The includer declares `p.M`,
// `p.K`, `w`, `WDT`, `WG`, `ROWS`, `MB`, `const MAXACC`, `halves` (weight.inc.wgsl) and `fn x_word(i: u32, inv: f32)
// -> f32` (x's element i as the dot product uses it, inv the row's inverse RMS where it normalises). Never compiled
// on its own.

// Adds this lane's share of the weight row starting at element e0 (row slot r) to acc[m * ROWS + r], m < MB.
fn word_row(e0: u32, r: u32, m0: u32, lid: u32, inv: array<f32, 4>, acc: ptr<function, array<f32, MAXACC>>) {
  if (WDT == 0u) {
    for (var k = lid; k < p.K; k += WG) {
      let wk = bitcast<f32>(w[e0 + k]);
      for (var m = 0u; m < MB; m++) { (*acc)[m * ROWS + r] += wk * x_word(min(m0 + m, p.M - 1u) * p.K + k, inv[m]); }
    }
  } else {
    let first = e0 >> 1u;
    let words = ((e0 + p.K + 1u) >> 1u) - first;
    for (var j = lid; j < words; j += WG) {
      let h = halves(w[first + j]);
      let k = i32(2u * (first + j)) - i32(e0);   // row position of the low half; -1 when the row starts odd
      let lo = k >= 0;
      let hi = u32(k + 1) < p.K;
      for (var m = 0u; m < MB; m++) {
        let xr = min(m0 + m, p.M - 1u) * p.K;
        var s = 0.0;
        if (lo) { s += h.x * x_word(xr + u32(k), inv[m]); }
        if (hi) { s += h.y * x_word(xr + u32(k + 1), inv[m]); }
        (*acc)[m * ROWS + r] += s;
      }
    }
  }
}
