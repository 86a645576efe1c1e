// A workgroup's reduction of one value per thread, shared through `// #include "attention/row_tree.inc.wgsl"` by
// the prefill attention passes that walk a row of scores a workgroup (sdpa_mm.wgsl, sdpa_mm_f16.wgsl). The includer
// declares `const WG: u32` (a power of two) and `var<workgroup> red: array<f32, WG>`, fills red[t] and calls tree()
// from every thread, in uniform control flow. Never compiled on its own.

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
