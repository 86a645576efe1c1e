// Linear layers over MLX's quantized weights (nn.QuantizedLinear / QuantizedEmbedding):
//   out[m, col0 + n] = round(sum_k x[m, k] * W[n, k]),   W[n, k] = scale[n, g] * level[n, k] + bias[n, g]
// with g = k / GS (GS = 32, 64 or 128 values per group). wq: one row-chunk [N, K * BITS / 32] of the packed levels,
// each row a little-endian bit stream (value k in bits [k*BITS, (k+1)*BITS), as quant.wgsl packs), so a pack of 32
// values is exactly BITS words and never crosses a group. scales / biases: [N, K / GS] in the model dtype as MLX
// stores them (SDT 0 f32, 1 bf16, 2 f16: halves two per word, low half first). x: f32 [M, K]. out: f32 [M, ldo].
// ROUND: output rounding (0 none, 1 bf16, 2 f16).
//
// Variants (MLX's arithmetic for each regime):
//  1. qgemv  (decode, M <= 8): MLX's qmv. A workgroup owns ROWS weight rows and MB <= 4 x rows; its WG lanes take
//     units of 8 values in turn and sum, per unit, scale * sum(x * level) + bias * sum(x) in f32; the lanes' sums
//     are added in shared memory; one output rounding. The fallback for 3/5/6 bits and unaligned tensors.
//  1b. qgemv4 (qlinear_vec4.wgsl; decode at 4 and 8 bits): qgemv with units of one vec4<u32> of levels (32 or
//     16 values), one scale / bias read per unit and MLX's pre-scaled x instead of shifts. The sums are grouped
//     per 32 / 16 values instead of 8 (the same f32 dot-product bound); qlinear.ts takes it where it can.
//  2. qtiled (prefill): MLX's qmm. BM x BN output tiles as matmul.wgsl's tiled variant, the weights dequantized
//     while staged, as MLX's loader does into its dtype: w = r(r(scale * level) + bias) (r = ROUND); f32 sums.
//  3. qrows  (CPU drivers, any M): one thread per output, qgemv's per-unit arithmetic in a plain loop, no barriers.
//  4. qembed (QuantizedEmbedding): out[s, j] = r(r(r(level * scale) + bias) * escale), mx.dequantize's rounding.
//  5. pack_half: f32 values that are values of the half dtype (SDT) packed two per word, exactly: scales and
//     biases quantized on the GPU (quant.wgsl writes f32) stored as a checkpoint would hold them.
//  6. qdense (prefill on tensor cores, qlinear.ts): rows col0 .. col0 + N of the chunk as a dense weight in the
//     half dtype of ROUND, two per word, each W[n, k] = r(r(scale * level) + bias) as qtiled stages it; the dense
//     matmul then runs on it (matmul-sgmat.ts), the weight's qmm by MLX's own route of dequantizing into its dtype.
//
// Fusions as matmul.wgsl (pipeline constants): NORM (qgemv: x rows rms-normalised in a prologue, each value
// rounded), SWIGLU (qgemv, qrows: w is [gate; up] and out = r(r(g * r(sigmoid(g))) * u)), ACC (qgemv, qtiled, qrows:
// out = r(out + r(sum)) in place). quant/qlinear.ts runs rmsNorm / siluMul separately where a variant lacks them.

// #include "qlinear/qlinear.inc.wgsl"

// Levels of the 8 values k0 .. k0 + 7 of weight row n (k0 a multiple of 8). 4 and 8 bits are one or two aligned
// words; other widths take the unit's <= 3 words apart value by value (values may straddle two words).
fn unit_levels(n: u32, k0: u32) -> array<vec4<f32>, 2> {
  let first = n * row_words() + ((k0 * BITS) >> 5u);
  if (BITS == 4u) {
    let w = vec4<u32>(wq[first]);
    return array<vec4<f32>, 2>(vec4<f32>((w >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(15u)), vec4<f32>((w >> vec4<u32>(16u, 20u, 24u, 28u)) & vec4<u32>(15u)));
  }
  let bytes = vec4<u32>(0u, 8u, 16u, 24u);
  if (BITS == 8u) {
    return array<vec4<f32>, 2>(vec4<f32>((vec4<u32>(wq[first]) >> bytes) & vec4<u32>(255u)), vec4<f32>((vec4<u32>(wq[first + 1u]) >> bytes) & vec4<u32>(255u)));
  }
  let last = arrayLength(&wq) - 1u;
  let words = vec3<u32>(wq[first], wq[min(first + 1u, last)], wq[min(first + 2u, last)]);
  var lv: array<vec4<f32>, 2>;
  for (var e = 0u; e < 8u; e++) {
    let bit = ((k0 * BITS) & 31u) + e * BITS;
    let sh = bit & 31u;
    var v = words[bit >> 5u] >> sh;
    if (sh + BITS > 32u) { v |= words[(bit >> 5u) + 1u] << (32u - sh); }
    lv[e / 4u][e % 4u] = f32(v & ((1u << BITS) - 1u));
  }
  return lv;
}

// x values k0 .. k0 + 7 of the row starting at xr, rms-normalised and rounded (inv) with NORM.
fn unit_x(xr: u32, k0: u32, inv: f32) -> array<vec4<f32>, 2> {
  let i = xr + k0;
  let xa = vec4<f32>(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
  let xb = vec4<f32>(x[i + 4u], x[i + 5u], x[i + 6u], x[i + 7u]);
  return array<vec4<f32>, 2>(xn4(xa, inv), xn4(xb, inv));
}

// One unit's contribution to row n: scale * sum(x * level) + bias * sum(x) over the 8 values k0 .. k0 + 7 (one
// group: GS is a multiple of 8), xv = unit_x(...). MLX's qmv sums 8 or 16 values per thread this way.
fn unit_dot(n: u32, k0: u32, xv: array<vec4<f32>, 2>) -> f32 {
  let lv = unit_levels(n, k0);
  let sb = affine_at(n, k0);
  return sb.x * (dot(xv[0], lv[0]) + dot(xv[1], lv[1])) + sb.y * dot(xv[0] + xv[1], vec4<f32>(1.0));
}

@compute @workgroup_size(WG)
fn qgemv(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  var inv: array<f32, 4>;
  if (NORM) {
    for (var m = 0u; m < MB; m++) {
      let xr = min(m0 + m, p.M - 1u) * p.K;
      var ss = 0.0;
      for (var k = lid; k < p.K; k += WG) { ss += x[xr + k] * x[xr + k]; }
      red[m * WG + lid] = ss;
    }
    inv = block_inv(lid);
  }
  var acc: array<f32, MAXACC>;
  for (var k0 = lid * 8u; k0 < p.K; k0 += WG * 8u) {
    for (var m = 0u; m < MB; m++) {
      let xv = unit_x(min(m0 + m, p.M - 1u) * p.K, k0, inv[m]);   // read once for the block's ROWS rows
      for (var r = 0u; r < ROWS; r++) { acc[m * ROWS + r] += unit_dot(slot_row(blk, r), k0, xv); }
    }
  }
  reduce_store(acc, lid, blk, m0);
}

// Row n of the chunk against x row m, unit by unit (qrows).
fn row_sum(n: u32, m: u32) -> f32 {
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += 8u) { acc += unit_dot(n, k0, unit_x(m * p.K, k0, 1.0)); }
  return acc;
}

@compute @workgroup_size(WG)
fn qrows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * WG;
  let m = gid.z;
  if (n >= select(p.N, p.N / 2u, SWIGLU) || m >= p.M) { return; }
  var v = round_out(row_sum(n, m));
  if (SWIGLU) { v = silu_mul(v, round_out(row_sum(p.N / 2u + n, m))); }
  store(m, n, v);
}

@compute @workgroup_size(TX, TY)
fn qtiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let BM = TY * TM;
  let BN = TX * TN;
  let tid = l.y * TX + l.x;
  var c0 = vec4<f32>();   // outputs (row i, columns j = 0..3) in c_i
  var c1 = vec4<f32>();
  var c2 = vec4<f32>();
  var c3 = vec4<f32>();
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // K is a multiple of 32 and BK divides 32: a slice never runs past the row. Rows past M or N are clamped.
    for (var idx = tid; idx < BM * BK; idx += TX * TY) {
      let m = min(wid.y * BM + idx / BK, p.M - 1u);
      Xs[(idx % BK) * BM + idx / BK] = x[m * p.K + k0 + idx % BK];
    }
    for (var idx = tid; idx < BN * BK; idx += TX * TY) {
      let n = min(wid.x * BN + idx / BK, p.N - 1u);
      let k = k0 + idx % BK;
      let sb = affine_at(n, k);
      Ws[(idx % BK) * BN + idx / BK] = round_out(round_out(sb.x * level_at(n, k)) + sb.y);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let ia = kk * BM + l.y;
      let ib = kk * BN + l.x;
      let b = vec4<f32>(Ws[ib], Ws[ib + TX], Ws[ib + 2u * TX], Ws[ib + 3u * TX]);
      c0 += Xs[ia] * b;
      c1 += Xs[ia + TY] * b;
      c2 += Xs[ia + 2u * TY] * b;
      c3 += Xs[ia + 3u * TY] * b;
    }
    workgroupBarrier();
  }
  let acc = array<vec4<f32>, 4>(c0, c1, c2, c3);   // read once, after the loop
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      let m = wid.y * BM + l.y + i * TY;
      let n = wid.x * BN + l.x + j * TX;
      if (m < p.M && n < p.N) { store(m, n, round_out(acc[i][j])); }
    }
  }
}

// Uniforms: M = output elements (ids x K), col0 = first vocabulary row of this chunk, N = its rows.
@compute @workgroup_size(WG)
fn qembed(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.M) { return; }
  let id = min(ids[i / p.K], p.vocab - 1u);
  if (id < p.col0 || id - p.col0 >= p.N) { return; }
  let n = id - p.col0;
  let k = i % p.K;
  let sb = affine_at(n, k);
  out[i] = round_out(round_out(round_out(level_at(n, k) * sb.x) + sb.y) * p.escale);
}

// Uniforms: M = values to pack.
@compute @workgroup_size(WG)
fn pack_half(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (2u * i >= p.M) { return; }
  let a = x[2u * i];
  let b = select(0.0, x[min(2u * i + 1u, p.M - 1u)], 2u * i + 1u < p.M);
  if (SDT == 2u) { packed[i] = pack2x16float(vec2<f32>(a, b)); return; }
  packed[i] = (bitcast<u32>(a) >> 16u) | (bitcast<u32>(b) & 0xffff0000u);
}

// Uniforms: N rows from row col0, K values each (even: whole groups). Word i of the output holds values 2i, 2i + 1
// of its row-major [N, K], the lower one in the low half; ROUND 1 (bf16) or 2 (f16) makes them that dtype's values.
@compute @workgroup_size(WG)
fn qdense(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.N * p.K / 2u) { return; }
  let n = p.col0 + 2u * i / p.K;
  let k = 2u * i % p.K;
  let sb = affine_at(n, k);   // both values lie in k's group (groups hold an even count)
  let a = round_out(round_out(sb.x * level_at(n, k)) + sb.y);
  let b = round_out(round_out(sb.x * level_at(n, k + 1u)) + sb.y);
  if (ROUND == 2u) { packed[i] = pack2x16float(vec2<f32>(a, b)); return; }
  packed[i] = (bitcast<u32>(a) >> 16u) | (bitcast<u32>(b) & 0xffff0000u);
}
