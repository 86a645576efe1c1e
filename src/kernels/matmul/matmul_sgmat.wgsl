// C = A @ B^T on subgroup matrices (cooperative matrices, i.e. tensor cores): the middle of matmul-sgmat.ts's
// three steps. A: f16 [M_pad, Kp] and B: f16 [Np, Kp], both row-major as sgmat_prep.wgsl's to_f16 writes them
// (scaled rows, zero padding), C: f32 [S, M_pad, Np]. Kp is a multiple of 16, M_pad and Np of 64, so every load and
// store is in bounds and the kernel has no edge cases; sgmat_prep.wgsl's sgmat_out adds the S slabs, unscales,
// rounds and adds the residual.
//
// Split-K: workgroup z sums the K slice [z * Ks, min(Kp, (z + 1) * Ks)) (Ks a multiple of 16; one slice of all of
// Kp without a split) into slab z of C (offset z * slab, slab = M_pad * Np), so a narrow product (N = 1536: 192
// tiles on a 132-SM GPU) still fills the GPU. A slice with no steps stores zeros.
// PIPE (software pipelining, the default: sgmat-schedule.ts): the next k step's 8 operand matrices are loaded
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

override PIPE: bool = false;   // matmul-sgmat.ts passes the schedule's

// Every subgroup-matrix statement stands on a line of its own, as the `#sgmat` lines unroll (the 4 x 4 tile's
// statements, scripts/gen-wgsl.mjs): reflection (kernels/kernel.ts, reflectable) leaves those lines out.
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
  // The tile's 16 accumulators, 8 operands and 16 products a step are written out (SGMAT in scripts/gen-wgsl.mjs)
  // rather than arrays indexed in loops, so every matrix is a value the compiler keeps in registers.
  // #sgmat results
  if (PIPE) {
    // The first step's operands (at a valid k even for an empty slice, which never uses them).
    let kf = min(k0, K - 16u);
    // #sgmat right decl="var" name="b" at="&b, (n0 + ${16 * j}u) * K + kf, K"
    // #sgmat left decl="var" name="a" at="&a, (m0 + ${16 * i}u) * K + kf, K"
    for (var k = k0; k < k1; k += 16u) {
      // The next step's operands (the last step loads its own again: in bounds, never used).
      let kn = min(k + 16u, k1 - 16u);
      // #sgmat right decl="let" name="nb" at="&b, (n0 + ${16 * j}u) * K + kn, K"
      // #sgmat left decl="let" name="na" at="&a, (m0 + ${16 * i}u) * K + kn, K"
      // #sgmat products
      b0 = nb0; b1 = nb1; b2 = nb2; b3 = nb3;
      a0 = na0; a1 = na1; a2 = na2; a3 = na3;
    }
  } else {
    for (var k = k0; k < k1; k += 16u) {
      // #sgmat step a="&a, (m0 + ${16 * i}u) * K + k, K" b="&b, (n0 + ${16 * j}u) * K + k, K"
    }
  }
  let N = p.Np;
  let base = wid.z * p.slab;
  // #sgmat store at="base + (m0 + ${16 * i}u) * N + n0 + ${16 * j}u"
}
