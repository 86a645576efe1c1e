// The staged x row of the quantized matrix-vector kernels (qgemv4's 'xs', qgemv_wide's 'wide-xs', qgemv_mlp always),
// through `// #include "qlinear/qxs.inc.wgsl"` before qlinear/qunit.inc.wgsl: with XSH the kernel writes its x row,
// as xn4 makes it, into xs (XSN >= K / 4 vec4s) once (stage_x), and qunit's units read it there instead of from x4
// (the same values). The includer declares `p.K`, `x4` and `xn4(v, inv)`. Never compiled on its own.
override XSH: bool = false;
override XSN: u32 = 1u;
var<workgroup> xs: array<vec4<f32>, XSN>;

// The x row starting at vec4 xr4 into xs by `threads` threads (t: this one), as xn4 makes it with the row's inverse
// RMS inv; the barrier after lets every thread read all of it.
fn stage_x(t: u32, threads: u32, xr4: u32, inv: f32) {
  for (var k = t; k < p.K / 4u; k += threads) { xs[k] = xn4(x4[xr4 + k], inv); }
  workgroupBarrier();
}
