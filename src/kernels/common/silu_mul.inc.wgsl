// siluMul's formula (ops/elementwise.wgsl's silu_mul, HRM's SwiGLU) on a gate and an up value already rounded to the
// output dtype, shared through `// #include "common/silu_mul.inc.wgsl"` by the kernels that fuse SwiGLU into their
// output (the matrix-vector epilogue gemv_out.inc.wgsl, matmul_rows.wgsl, qlinear.wgsl, sgmat_prep.wgsl's
// sgmat_out). The includer declares `override ROUND: u32`. Never compiled on its own.
// #include "common/round.inc.wgsl"
// #include "common/sigmoid.inc.wgsl"

fn silu_mul(g: f32, u: f32) -> f32 {
  return round_out(round_out(g * round_out(sigmoid(g))) * u);
}
