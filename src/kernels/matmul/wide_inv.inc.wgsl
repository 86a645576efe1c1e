// gemv_wide's norm prologue, through `// #include "matmul/wide_inv.inc.wgsl"`: x's inverse RMS by a whole workgroup,
// shared by matmul_wide.wgsl and the persistent MLP (persist/mlp.wgsl), whose gate_up outputs and next gqkv must
// equal gemv_wide's bit for bit (the tree's order is its THREADS's: the persistent kernel's gqkv takes the tree of a
// gemv_wide of fewer threads, wide_inv_over). The includer declares `override THREADS: u32`, `var<workgroup> red`
// (>= THREADS floats), `p.K`, `sq4(i, end)` (x4[i] squared, 0 past end) and `inv_rms(ss)`. Never compiled on its own.

// The inverse RMS of x (row 0) by all THREADS threads; red holds the tree (WG * ROWS >= THREADS entries).
fn wide_inv(tid: u32) -> f32 { return wide_inv_over(tid, THREADS); }

// The same as gemv_wide of T threads computes it (T a power of two, T <= THREADS, uniform): its first T threads'
// sums and tree; every thread calls it and gets the result.
fn wide_inv_over(tid: u32, T: u32) -> f32 {
  let xpr = p.K / 4u;
  var s = 0.0;
  if (tid < T) {
    for (var j = tid; j < xpr; j += 2u * T) {
      let v = sq4(j, xpr) + sq4(j + T, xpr);
      s += v.x + v.y + v.z + v.w;
    }
  }
  red[tid] = s;
  workgroupBarrier();
  for (var span = T / 2u; span > 0u; span >>= 1u) {
    if (tid < span) { red[tid] += red[tid + span]; }
    workgroupBarrier();
  }
  let inv = inv_rms(red[0]);
  workgroupBarrier();   // every thread has read red[0] before the sums overwrite it
  return inv;
}
