// The workgroup kernels' lane reduction (gemv_out.inc.wgsl, matmul_f16.wgsl's gemv entries), through
// `// #include "matmul/tree_sum.inc.wgsl"`. The includer declares `override WG: u32` (a power of two) and
// `var<workgroup> red: array<f32, ...>` with room for its segments. Never compiled on its own.

// Sum segments 0 .. segs - 1 of red (WG partial sums each, lane order) into their first element.
fn tree_sum(segs: u32, lid: u32) {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var o = 0u; o < segs; o++) { red[o * WG + lid] += red[o * WG + lid + s]; }
    }
    workgroupBarrier();
  }
}
