// Variant 4 of matmul.wgsl (CPU drivers, any M): gemv_rows, one thread per output and a plain loop over K, and
// gemv_rows4, the same with one vec4<u32> load per step for 16-byte rows. Fusions SWIGLU and ACC (matmul.ts
// normalises x first). out[m, col0 + n] = round(sum_k x[m, k] * w[n, k]).

// #include "matmul/linear.inc.wgsl"

// Dot product of weight row n of the chunk with the x row starting at xr, a plain loop over K (gemv_rows).
fn row_dot(n: u32, xr: u32) -> f32 {
  let e0 = n * p.K;
  var acc = 0.0;
  if (WDT != 0u && (e0 & 1u) == 0u) {
    let w0 = e0 >> 1u;
    let pairs = p.K >> 1u;
    for (var j = 0u; j < pairs; j++) {
      let h = halves(w[w0 + j]);
      acc += h.x * x[xr + 2u * j] + h.y * x[xr + 2u * j + 1u];
    }
    if ((p.K & 1u) == 1u) { acc += weight(e0 + p.K - 1u) * x[xr + p.K - 1u]; }
  } else {
    for (var k = 0u; k < p.K; k++) { acc += weight(e0 + k) * x[xr + k]; }
  }
  return acc;
}

// One thread per output (row n of the weight, row m of x, m = workgroup z): a plain loop over K, no shared
// memory and no barriers. Slow on GPUs (lanes read different rows), fast on CPU drivers (SwiftShader,
// llvmpipe), where a workgroup barrier costs more than the arithmetic of a small matrix-vector product.
@compute @workgroup_size(WG)
fn gemv_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= select(p.N, p.N / 2u, SWIGLU) || m >= p.M) { return; }
  let xr = m * p.K;
  var v = round_out(row_dot(n, xr));
  if (SWIGLU) { v = silu_mul(v, round_out(row_dot(p.N / 2u + n, xr))); }
  store(m, n, v);
}

// row_dot with one vec4<u32> of weights per step (8 halves or 4 f32), for 16-byte rows; x0 is in vec4 units.
fn row_dot4(n: u32, x0: u32) -> f32 {
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;
  let xstep = select(2u, 1u, WDT == 0u);
  var acc = 0.0;
  for (var u = 0u; u < upr; u++) {
    let xs = x_unit(x0 + u * xstep, 1.0);   // NORM is never set here (matmul.ts normalises first)
    acc += dot_unit(w4[n * upr + u], xs[0], xs[1]);
  }
  return acc;
}

// gemv_rows with vec4 loads (row_dot4): a quarter of the loads.
@compute @workgroup_size(WG)
fn gemv_rows4(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= select(p.N, p.N / 2u, SWIGLU) || m >= p.M) { return; }
  let x0 = m * (p.K / 4u);
  var v = round_out(row_dot4(n, x0));
  if (SWIGLU) { v = silu_mul(v, round_out(row_dot4(p.N / 2u + n, x0))); }
  store(m, n, v);
}
