// C = A @ B^T on subgroup matrices (cooperative matrices, i.e. tensor cores): the middle of matmul_sgmat.ts's
// three steps. A: f16 [M_pad, Kp] and B: f16 [Np, Kp], both row-major as sgmat_prep.wgsl's to_f16 writes them
// (scaled rows, zero padding), C: f32 [S, M_pad, Np]. Kp is a multiple of 16, M_pad and Np of 64, so every load and
// store is in bounds and the kernel has no edge cases; sgmat_prep.wgsl's sgmat_out adds the S slabs, unscales,
// rounds and adds the residual.
//
// Split-K: workgroup z sums the K slice [z * Ks, min(Kp, (z + 1) * Ks)) (Ks a multiple of 16; one slice of all of
// Kp without a split) into slab z of C (offset z * slab, slab = M_pad * Np), so a narrow product (N = 1536: 192
// tiles on a 132-SM GPU) still fills the GPU. A slice with no steps stores zeros.
// PIPE (software pipelining, the default: sgmat_schedule.ts): the next k step's 8 operand matrices are loaded
// before the current step's 16 products, so their load latency overlaps the tensor-core work (gqkv 28 -> 40
// TFLOP/s on the H200); off, every step loads then multiplies (the earlier schedule, kept as the reference and
// for timing the two: DeviceOptions.kernels.sgmat).
//
// A workgroup is one subgroup of 32 lanes owning 4 x 4 result matrices of 16 x 16 (a 64 x 64 tile), its operands
// loaded straight from the storage buffers (the left matrix row-major, the right one column-major: row n of B is
// column n of B^T). Measured on the H200 through Dawn 0.6.2 (bench/sgmat-probe.ts, 512 x 6144 x 1536): this
// shape 10.4 TFLOP/s, 64 x 32 per subgroup 7.1, 2 x 2 subgroups per workgroup 5.4-7.3, operands staged through
// workgroup memory 1.2-3.1. f16 products are exact in f32 and the tensor cores accumulate in f32.

enable f16;
enable chromium_experimental_subgroup_matrix;

struct Params { Kp: u32, Np: u32, Ks: u32, slab: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f16>;
@group(0) @binding(2) var<storage, read> b: array<f16>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

override PIPE: bool = false;   // matmul_sgmat.ts passes the schedule's

// Every subgroup-matrix statement stands on a line of its own: reflection (kernels/kernel.ts, reflectable) leaves
// those lines out.
@compute @workgroup_size(32)
fn matmul_sgmat(@builtin(workgroup_id) wid: vec3u) {
  // Never true (Kp >= 16): names the bindings for reflection, which leaves out the subgroup-matrix lines
  // (kernels/kernel.ts, reflectable).
  if (p.Kp == 0u) { c[0] = f32(a[0]) + f32(b[0]); }
  let n0 = wid.x * 64u;
  let m0 = wid.y * 64u;
  let K = p.Kp;
  let k0 = wid.z * p.Ks;
  let k1 = min(K, k0 + p.Ks);
  var c00 = subgroup_matrix_result<f32, 16, 16>();
  var c01 = subgroup_matrix_result<f32, 16, 16>();
  var c02 = subgroup_matrix_result<f32, 16, 16>();
  var c03 = subgroup_matrix_result<f32, 16, 16>();
  var c10 = subgroup_matrix_result<f32, 16, 16>();
  var c11 = subgroup_matrix_result<f32, 16, 16>();
  var c12 = subgroup_matrix_result<f32, 16, 16>();
  var c13 = subgroup_matrix_result<f32, 16, 16>();
  var c20 = subgroup_matrix_result<f32, 16, 16>();
  var c21 = subgroup_matrix_result<f32, 16, 16>();
  var c22 = subgroup_matrix_result<f32, 16, 16>();
  var c23 = subgroup_matrix_result<f32, 16, 16>();
  var c30 = subgroup_matrix_result<f32, 16, 16>();
  var c31 = subgroup_matrix_result<f32, 16, 16>();
  var c32 = subgroup_matrix_result<f32, 16, 16>();
  var c33 = subgroup_matrix_result<f32, 16, 16>();
  // Written out (16 named accumulators, 8 loads, 16 products a step) rather than arrays indexed in loops, so every
  // matrix is a value the compiler keeps in registers.
  if (PIPE) {
    // The first step's operands (at a valid k even for an empty slice, which never uses them).
    let kf = min(k0, K - 16u);
    var b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 0u) * K + kf, K);
    var b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 16u) * K + kf, K);
    var b2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 32u) * K + kf, K);
    var b3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 48u) * K + kf, K);
    var a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 0u) * K + kf, K);
    var a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 16u) * K + kf, K);
    var a2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 32u) * K + kf, K);
    var a3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 48u) * K + kf, K);
    for (var k = k0; k < k1; k += 16u) {
      // The next step's operands (the last step loads its own again: in bounds, never used).
      let kn = min(k + 16u, k1 - 16u);
      let nb0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 0u) * K + kn, K);
      let nb1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 16u) * K + kn, K);
      let nb2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 32u) * K + kn, K);
      let nb3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 48u) * K + kn, K);
      let na0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 0u) * K + kn, K);
      let na1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 16u) * K + kn, K);
      let na2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 32u) * K + kn, K);
      let na3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 48u) * K + kn, K);
      c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
      c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
      c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
      c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
      c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
      c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
      c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20);
      c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
      c22 = subgroupMatrixMultiplyAccumulate(a2, b2, c22);
      c23 = subgroupMatrixMultiplyAccumulate(a2, b3, c23);
      c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30);
      c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
      c32 = subgroupMatrixMultiplyAccumulate(a3, b2, c32);
      c33 = subgroupMatrixMultiplyAccumulate(a3, b3, c33);
      b0 = nb0; b1 = nb1; b2 = nb2; b3 = nb3;
      a0 = na0; a1 = na1; a2 = na2; a3 = na3;
    }
  } else {
    for (var k = k0; k < k1; k += 16u) {
      let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 0u) * K + k, K);
      let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 16u) * K + k, K);
      let b2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 32u) * K + k, K);
      let b3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + 48u) * K + k, K);
      let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 0u) * K + k, K);
      c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
      c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
      c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
      c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
      let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 16u) * K + k, K);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
      c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
      c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
      let a2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 32u) * K + k, K);
      c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20);
      c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
      c22 = subgroupMatrixMultiplyAccumulate(a2, b2, c22);
      c23 = subgroupMatrixMultiplyAccumulate(a2, b3, c23);
      let a3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + 48u) * K + k, K);
      c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30);
      c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
      c32 = subgroupMatrixMultiplyAccumulate(a3, b2, c32);
      c33 = subgroupMatrixMultiplyAccumulate(a3, b3, c33);
    }
  }
  let N = p.Np;
  let base = wid.z * p.slab;
  subgroupMatrixStore<row_major>(&c, base + (m0 + 0u) * N + n0 + 0u, c00, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 0u) * N + n0 + 16u, c01, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 0u) * N + n0 + 32u, c02, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 0u) * N + n0 + 48u, c03, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 16u) * N + n0 + 0u, c10, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 16u) * N + n0 + 16u, c11, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 16u) * N + n0 + 32u, c12, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 16u) * N + n0 + 48u, c13, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 32u) * N + n0 + 0u, c20, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 32u) * N + n0 + 16u, c21, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 32u) * N + n0 + 32u, c22, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 32u) * N + n0 + 48u, c23, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 48u) * N + n0 + 0u, c30, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 48u) * N + n0 + 16u, c31, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 48u) * N + n0 + 32u, c32, N);
  subgroupMatrixStore<row_major>(&c, base + (m0 + 48u) * N + n0 + 48u, c33, N);
}
