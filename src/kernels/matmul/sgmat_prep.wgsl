// The two plain-WGSL halves of the subgroup-matrix matmul (matmul-sgmat.ts), around the tensor-core kernel:
//  - to_f16: one workgroup per row of a source (x: f32 [rows, K]; a weight chunk: bf16 [rows, K] packed two per
//    u32, element e in word e >> 1, low half when e is even) writes the row as f16 pairs into dst [rows_pad, Kp / 2]
//    (K padded with zeros to Kp, a multiple of 16; rows past `rows` all zeros), scaled by 2^e[r], e[r] = 14 -
//    floor(log2 max|row|) (kept as the exponent), so the row's largest value lands in [2^14, 2^15) and no value
//    overflows f16. A bf16 value (8 significant bits) is then exact in f16 unless it is 2^32 times smaller than its
//    row's maximum: those fall into f16's subnormals and are rounded to nearest even (an error below 2^-40 of the
//    row's largest product, far under the bf16 output's half ulp). A value f16 cannot hold exactly at a normal
//    magnitude (an x that is not a bf16 value), or one that is not finite, sets flag[0] to the conversion's epoch
//    (a number every call gets anew, so the flag never needs clearing; 1 for a weight's own flag).
//  - sgmat_out: a thread per output: out[m, col0 + n] = round(ldexp(C[m, n], -(e_x[m] + e_w[n]))) (exact, in one
//    step: dividing by the scales one at a time was folded by the driver into one division by their product, which
//    overflows f32 for a row of tiny values), with matmul.wgsl's residual epilogue (ACC). When the call's flag holds
//    its epoch or the weight's flag is set, it computes the output with f32 FMAs from x and the weight instead (the
//    same f32 sum of exact products, in k order): a result never depends on the range of the data, only the speed.
//    C is S slabs [S, rows_pad, Np] when the tensor-core kernel split K into S slices (matmul_sgmat.wgsl): they are
//    added in slice order before unscaling (one more f32 summation order of the same exact products).
//    SWIGLU (a single weight chunk [2I, K], N = 2I its rows): a thread per output of [rows, I], out[m, col0 + i] =
//    silu_mul(r(g), r(u)) of the unscaled columns i and I + i, bit for bit the product followed by ops' siluMul.
// Rounding is round_out (ROUND: 1 bf16 in bf16 mode).

struct Params { rows: u32, rows_pad: u32, K: u32, Kp: u32, N: u32, ldo: u32, col0: u32, Np: u32, epoch: u32, S: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;                  // to_f16's row source (f32 bits or bf16 pairs)
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;            // to_f16's [rows_pad, Kp / 2] f16 pairs
@group(0) @binding(3) var<storage, read_write> scale: array<i32>;          // to_f16's row scale exponents
// [0]: the epoch of the last conversion with values the f16 path cannot take (to_f16 writes it; a weight's own
// flag is kept with its cached f16 copy, written with epoch 1).
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> stats: array<atomic<u32>>;  // [0]: rows with such values, all calls (tests)
@group(0) @binding(6) var<storage, read> c: array<f32>;                    // sgmat_out's tensor-core sums [S, M_pad, Np]
@group(0) @binding(7) var<storage, read> x: array<f32>;                    // sgmat_out's fallback operands
@group(0) @binding(8) var<storage, read> w: array<u32>;
@group(0) @binding(9) var<storage, read_write> out: array<f32>;
@group(0) @binding(10) var<storage, read> sx: array<i32>;                  // sgmat_out: x's and the weight's exponents
@group(0) @binding(11) var<storage, read> sw: array<i32>;
@group(0) @binding(12) var<storage, read> wflag: array<u32>;               // sgmat_out: the weight's flag

override SRC_BF16: bool = false;
override ROUND: u32 = 1u;
override ACC: bool = false;
override SWIGLU: bool = false;

const WG: u32 = 256u;

var<workgroup> red: array<f32, WG>;

// #include "common/round.inc.wgsl"
// #include "common/silu_mul.inc.wgsl"
// #include "common/f16_scale.inc.wgsl"

// sgmat_out's fallback reads bf16 weights (the only ones this path takes).
const WDT: u32 = 1u;
// #include "matmul/weight.inc.wgsl"

// Element k of source row r as f32 bits (0 past the row or the rows).
fn src_bits(r: u32, k: u32) -> u32 {
  if (r >= p.rows || k >= p.K) { return 0u; }
  let e = r * p.K + k;
  if (SRC_BF16) {
    let word = src[e >> 1u];
    return select(word << 16u, word & 0xffff0000u, (e & 1u) == 1u);
  }
  return src[e];
}

@compute @workgroup_size(WG)
fn to_f16(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) t: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.rows_pad) { return; }   // the same for the whole workgroup (a folded grid's spare workgroups)
  // Largest magnitude of the row; non-finite values are left out here and flagged below.
  var mx = 0.0;
  for (var k = t; k < p.K; k += WG) { mx = finite_max(mx, src_bits(r, k)); }
  red[t] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] = max(red[t], red[t + s]); }
    workgroupBarrier();
  }
  let e = row_exponent(red[0]);
  if (t == 0u) { scale[r] = e; }
  var ok = true;
  for (var j = t; j < p.Kp / 2u; j += WG) {
    let lo = scaled(src_bits(r, 2u * j), e, &ok);
    let hi = scaled(src_bits(r, 2u * j + 1u), e, &ok);
    dst[r * (p.Kp / 2u) + j] = pack2x16float(vec2<f32>(lo, hi));
  }
  if (!ok) { atomicStore(&flag[0], p.epoch); atomicAdd(&stats[0], 1u); }
}

// Column n of the chunk's product for row m: from the tensor cores' slabs (`fast`), else with f32 FMAs.
fn product(m: u32, n: u32, fast: bool) -> f32 {
  if (fast) {
    var sum = c[m * p.Np + n];
    for (var z = 1u; z < p.S; z++) { sum += c[(z * p.rows_pad + m) * p.Np + n]; }
    return ldexp(sum, -(sx[m] + sw[n]));
  }
  var v = 0.0;
  for (var k = 0u; k < p.K; k++) { v = fma(x[m * p.K + k], weight(n * p.K + k), v); }
  return v;
}

@compute @workgroup_size(WG)
fn sgmat_out(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let cols = select(p.N, p.N / 2u, SWIGLU);
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * cols) { return; }
  let m = i / cols;
  let n = i % cols;
  let fast = atomicLoad(&flag[0]) != p.epoch && wflag[0] == 0u;
  let v = round_out(product(m, n, fast));
  let j = m * p.ldo + p.col0 + n;
  if (SWIGLU) {
    out[j] = silu_mul(v, round_out(product(m, cols + n, fast)));
  } else if (ACC) {
    out[j] = round_out(out[j] + v);
  } else {
    out[j] = v;
  }
}
