// out[m, col0 + n] = round(sum_k x[m, k] * w[n, k])   (x @ W^T, as nn.Linear; f32 accumulation, one rounding)
// x: f32 [M, K]. w: one row-chunk [N, K] of the weight, f32 or bf16/f16 packed two per u32 (element e in word
// e >> 1, low half when e is even). out: f32 [M, ldo]; a chunk writes columns col0 .. col0 + N.
// WDT picks the weight dtype (0 f32, 1 bf16, 2 f16) and ROUND the output rounding (0 none, 1 bf16, 2 f16), both
// pipeline constants, so each variant compiles to straight-line code.
//
// Variants:
//  1. gemv_vec4   (decode, short prefill): a workgroup owns ROWS weight rows and MB <= 4 x rows (more x rows:
//     more blocks along z); its WG lanes stride along K reading one vec4<u32> (8 bf16/f16 or 4 f32 weights) per
//     row per step, for every x row of the block, then reduce across the workgroup in shared memory (log2 WG
//     barriers, once per workgroup). Needs row starts on 16-byte boundaries: K % 8 == 0 for halves, K % 4 == 0
//     for f32, tensors at 16-byte offsets.
//  2. gemv_word   (decode, any K): the same shape of work reading one u32 word per lane per step; the first and
//     last word of a row may straddle a neighbouring row when K is odd, so those halves are masked. Kept for
//     shapes variant 1 cannot take: 2-3x slower than it on an H200 (HRM-1B shapes, M = 1 and 4).
//  3. matmul_tiled (prefill): BM x BN output tiles (BM = TY*TM, BN = TX*TN), each thread a TM x TN register block
//     (rows ty + i*TY, columns tx + j*TX: conflict-free shared reads, coalesced writes); K walked in BK slices
//     staged through shared memory with the weights widened to f32 once. Any M, N, K. On an H200 with
//     16x16 threads, 4x4 outputs and BK 8: 5-7 TFLOP/s at M = 64, 9-17 at M = 512 (4x8 outputs: up to 20).
//  4. gemv_rows    (CPU drivers, any M): one thread per output, a plain loop over K; chosen when the adapter is a
//     CPU implementation (Gpu.cpu), where barriers dominate: 30-100x faster than 1-3 there. gemv_rows4 is the
//     same with one vec4<u32> load per step, for 16-byte rows.
// Subgroup reductions are not used: `enable subgroups` cannot sit behind an override (it would fail to compile
// where the feature is absent), and the reduction is a small part of the work next to streaming the weights.

struct Params { M: u32, N: u32, K: u32, ldo: u32, col0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Wide views used only by gemv_vec4.
@group(0) @binding(4) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> w4: array<vec4<u32>>;

override WDT: u32 = 1u;
override ROUND: u32 = 0u;
// gemv: lanes per workgroup (power of two), weight rows per workgroup, x rows per workgroup (ROWS * MB <= 16).
override WG: u32 = 64u;
override ROWS: u32 = 4u;
override MB: u32 = 1u;
// tiled: threads per workgroup along N (TX) and M (TY), outputs per thread (TM x TN <= MAXT x MAXT), K slice.
override TX: u32 = 16u;
override TY: u32 = 16u;
override TM: u32 = 4u;
override TN: u32 = 4u;
override BK: u32 = 16u;

const MAXACC: u32 = 16u;
const MAXT: u32 = 8u;

var<workgroup> red: array<f32, WG * ROWS * MB>;
var<workgroup> As: array<f32, BK * TY * TM>;
var<workgroup> Bs: array<f32, BK * TX * TN>;

fn round_bf16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7f800000u) == 0x7f800000u) { return v; }
  return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}

// Round to nearest even f16 without relying on pack2x16float's rounding (WGSL leaves it to the implementation).
fn round_f16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  let a = b & 0x7fffffffu;
  let s = b & 0x80000000u;
  if (a >= 0x7f800000u) { return v; }
  if (a >= 0x477ff000u) { return bitcast<f32>(s | 0x7f800000u); }
  if (a >= 0x38800000u) { return bitcast<f32>(s | ((a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u)); }
  return bitcast<f32>(s | bitcast<u32>(round(bitcast<f32>(a) * 16777216.0) / 16777216.0));
}

fn round_out(v: f32) -> f32 {
  if (ROUND == 1u) { return round_bf16(v); }
  if (ROUND == 2u) { return round_f16(v); }
  return v;
}

// Both halves of a packed word, (element 2i, element 2i + 1).
fn halves(word: u32) -> vec2<f32> {
  if (WDT == 2u) { return unpack2x16float(word); }
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

// Weight element e of the chunk, widened to f32.
fn weight(e: u32) -> f32 {
  if (WDT == 0u) { return bitcast<f32>(w[e]); }
  let h = halves(w[e >> 1u]);
  return select(h.x, h.y, (e & 1u) == 1u);
}

// dot of one vec4<u32> of weights with the x values it multiplies (x4 index xi: 2 vec4 for halves, 1 for f32).
fn dot_unit(wv: vec4<u32>, xi: u32) -> f32 {
  if (WDT == 0u) { return dot(bitcast<vec4<f32>>(wv), x4[xi]); }
  let a = x4[xi];
  let b = x4[xi + 1u];
  let h0 = halves(wv.x);
  let h1 = halves(wv.y);
  let h2 = halves(wv.z);
  let h3 = halves(wv.w);
  return dot(vec4<f32>(h0.x, h1.x, h2.x, h3.x), vec4<f32>(a.x, a.z, b.x, b.z))
       + dot(vec4<f32>(h0.y, h1.y, h2.y, h3.y), vec4<f32>(a.y, a.w, b.y, b.w));
}

// Sum acc over the workgroup's lanes and write the ROWS x MB outputs.
fn reduce_store(acc: array<f32, MAXACC>, lid: u32, n0: u32, m0: u32) {
  let outs = ROWS * MB;
  for (var o = 0u; o < outs; o++) { red[o * WG + lid] = acc[o]; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var o = 0u; o < outs; o++) { red[o * WG + lid] += red[o * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lid < outs) {
    let m = m0 + lid / ROWS;
    let n = n0 + lid % ROWS;
    if (m < p.M && n < p.N) { out[m * p.ldo + p.col0 + n] = round_out(red[lid * WG]); }
  }
}

@compute @workgroup_size(WG)
fn gemv_vec4(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  let m0 = wid.z * MB;
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;            // vec4 units per weight row
  let xpr = p.K / 4u;             // vec4 per x row
  let xstep = select(2u, 1u, WDT == 0u);
  var acc: array<f32, MAXACC>;
  var wv: array<vec4<u32>, 4>;    // ROWS <= 4 for this variant
  for (var u = lid; u < upr; u += WG) {
    for (var r = 0u; r < ROWS; r++) { wv[r] = w4[min(n0 + r, p.N - 1u) * upr + u]; }
    for (var m = 0u; m < MB; m++) {
      let xi = min(m0 + m, p.M - 1u) * xpr + u * xstep;
      for (var r = 0u; r < ROWS; r++) { acc[m * ROWS + r] += dot_unit(wv[r], xi); }
    }
  }
  reduce_store(acc, lid, n0, m0);
}

@compute @workgroup_size(WG)
fn gemv_word(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  let m0 = wid.z * MB;
  var acc: array<f32, MAXACC>;
  for (var r = 0u; r < ROWS; r++) {
    let e0 = min(n0 + r, p.N - 1u) * p.K;   // first element of the row
    if (WDT == 0u) {
      for (var k = lid; k < p.K; k += WG) {
        let wk = bitcast<f32>(w[e0 + k]);
        for (var m = 0u; m < MB; m++) { acc[m * ROWS + r] += wk * x[min(m0 + m, p.M - 1u) * p.K + k]; }
      }
    } else {
      let first = e0 >> 1u;
      let words = ((e0 + p.K + 1u) >> 1u) - first;
      for (var j = lid; j < words; j += WG) {
        let h = halves(w[first + j]);
        let k = i32(2u * (first + j)) - i32(e0);   // row position of the low half; -1 when the row starts odd
        let lo = k >= 0;
        let hi = u32(k + 1) < p.K;
        for (var m = 0u; m < MB; m++) {
          let xr = min(m0 + m, p.M - 1u) * p.K;
          var s = 0.0;
          if (lo) { s += h.x * x[xr + u32(k)]; }
          if (hi) { s += h.y * x[xr + u32(k + 1)]; }
          acc[m * ROWS + r] += s;
        }
      }
    }
  }
  reduce_store(acc, lid, n0, m0);
}

// One thread per output (row n of the weight, row m of x, m = workgroup z): a plain loop over K, no shared
// memory and no barriers. Slow on GPUs (lanes read different rows), fast on CPU drivers (SwiftShader,
// llvmpipe), where a workgroup barrier costs more than the arithmetic of a small matrix-vector product.
@compute @workgroup_size(WG)
fn gemv_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= p.N || m >= p.M) { return; }
  let e0 = n * p.K;
  let xr = m * p.K;
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
  out[m * p.ldo + p.col0 + n] = round_out(acc);
}

// gemv_rows with one vec4<u32> of weights per step (8 halves or 4 f32): a quarter of the loads, for 16-byte rows.
@compute @workgroup_size(WG)
fn gemv_rows4(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= p.N || m >= p.M) { return; }
  let per = select(8u, 4u, WDT == 0u);
  let upr = p.K / per;
  let xstep = select(2u, 1u, WDT == 0u);
  let w0 = n * upr;
  let x0 = m * (p.K / 4u);
  var acc = 0.0;
  for (var u = 0u; u < upr; u++) { acc += dot_unit(w4[w0 + u], x0 + u * xstep); }
  out[m * p.ldo + p.col0 + n] = round_out(acc);
}

@compute @workgroup_size(TX, TY)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let BM = TY * TM;
  let BN = TX * TN;
  let n0 = wid.x * BN;
  let m0 = wid.y * BM;
  let tid = l.y * TX + l.x;
  let threads = TX * TY;
  var acc: array<array<f32, MAXT>, MAXT>;   // only [0, TM) x [0, TN) is used; the rest folds away
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // Stage x[m0.., k0..] and w[n0.., k0..]; consecutive threads take consecutive k (contiguous in memory).
    for (var idx = tid; idx < BM * BK; idx += threads) {
      let mm = idx / BK;
      let kk = idx % BK;
      let m = m0 + mm;
      let k = k0 + kk;
      As[kk * BM + mm] = select(0.0, x[min(m, p.M - 1u) * p.K + min(k, p.K - 1u)], m < p.M && k < p.K);
    }
    for (var idx = tid; idx < BN * BK; idx += threads) {
      let nn = idx / BK;
      let kk = idx % BK;
      let n = n0 + nn;
      let k = k0 + kk;
      Bs[kk * BN + nn] = select(0.0, weight(min(n, p.N - 1u) * p.K + min(k, p.K - 1u)), n < p.N && k < p.K);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var a: array<f32, MAXT>;
      var b: array<f32, MAXT>;
      for (var i = 0u; i < TM; i++) { a[i] = As[kk * BM + l.y + i * TY]; }
      for (var j = 0u; j < TN; j++) { b[j] = Bs[kk * BN + l.x + j * TX]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i][j] += a[i] * b[j]; }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + l.y + i * TY;
    for (var j = 0u; j < TN; j++) {
      let n = n0 + l.x + j * TX;
      if (m < p.M && n < p.N) { out[m * p.ldo + p.col0 + n] = round_out(acc[i][j]); }
    }
  }
}
