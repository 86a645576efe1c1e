// The dense linear kernels' weight dtype, output rounding and matrix-vector block (linear.inc.wgsl,
// matmul_f16.wgsl), through `// #include "matmul/gemv_opts.inc.wgsl"`, with the lane reduction's workgroup memory.
// The includer declares `const MAXACC: u32` (sums a lane holds). Never compiled on its own.

override WDT: u32 = 1u;     // 0 f32, 1 bf16, 2 f16
override ROUND: u32 = 0u;   // of an f32 output: 0 none, 1 bf16, 2 f16
// gemv: lanes per workgroup (power of two), weight rows per workgroup, x rows per workgroup (ROWS * MB <= MAXACC).
override WG: u32 = 64u;
override ROWS: u32 = 4u;
override MB: u32 = 1u;

var<workgroup> red: array<f32, WG * ROWS * MB>;
