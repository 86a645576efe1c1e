// Prefill attention's two batched products on tensor cores (sdpa-mm.ts, bf16 mode): S = q K^T and O = P V run on
// the staged subgroup-matrix kernel (matmul/matmul_sgmat_staged.wgsl, a head per workgroups.z), around three
// passes here that mirror sdpa_mm.wgsl's:
//  - qkv_f16: the three f16 operands, each zero-padded: q [H, S, D] as qh [H, Sp, Dk], the cache's K (first kv_len
//    positions) as kh [H, kvp, Dk], and V transposed, twice side by side, as vt [H, Dn, 2 kvp] (Sp, kvp, Dn
//    multiples of 128, Dk of 64, at most LANES * EPT). Each row is scaled by 2^e (kept in ex) into f16's range as
//    matmul/sgmat_prep.wgsl's to_f16 scales its rows (common/f16_scale.inc.wgsl), where a bf16 value is exact
//    unless it is 2^32 times smaller than the row's largest (then rounded: far below an output's half ulp). A value
//    the scaled f16 cannot hold at a normal magnitude (not a bf16 value) or one that is not finite sets flag[0] to
//    the call's epoch (the per-device flag the tensor-core matmul uses), and the passes below then compute the call
//    in f32 from q and the cache instead, as sdpa_mm.wgsl does. (Unscaled, every row holding a value under 2^-17,
//    most rows of a real model, fell back.) Two kinds of workgroup: the first RPW rows of q and K a workgroup
//    (LANES threads a row, its elements held in registers between the max and the writes), then VD of V's dims a
//    workgroup (LANES threads a dim, walking the keys: each warp writes 32 consecutive keys of a vt row). A
//    workgroup per row with a 256-thread tree, V read down its columns, took 5.8 ms of a 94 ms prefill.
//  - softmax_f16: a workgroup per (query, head) row of S: s'_j = scale * 2^-(e_q + e_k) S_j where key j is visible
//    (MASK, common/mask.inc.wgsl), M = max s', P_j = e^(s'_j - M) (0 where not visible), written over S in f32 only
//    when the call falls back (finish_f16 then reads them), and to ph [H, Sp, 2 kvp] as two f16 halves of 2^15 P_j: hi = round_f16(2^15 P_j) in column j, lo = f16(2^15 P_j -
//    hi) in column kvp + j, so ph @ vt^T is P V with each weight good to ~2^-22 (one f16 alone, 2^-11, moved
//    outputs near zero by several bf16 ulps); L = sum P_j of the f32 weights.
//  - finish_f16: out[s, h*D + d] = gated(r(2^-(15 + e_v) O / L)), 0 for a query that sees no key; O is the sum of
//    the P V product's K slices, in slice order (sdpa-mm.ts splits its long K to fill the GPU).
// Numerics against sdpa_mm.wgsl's f32 path: the scores are f32 sums of exact products and the value sums f32 sums
// of exact products of V with weights within ~2^-22 of the f32 ones (other summation orders): outputs round to the
// same bf16 value or a neighbour (testkit/kernels/sdpa-sgmat.check.ts). round_f16 (common/half.inc.wgsl) rounds with
// integer operations: a compiler may fold x - f32(f16(x)) to 0 (lavapipe did).

enable f16;

struct Params { seq: u32, heads: u32, kv_len: u32, kvp: u32, cap: u32, offset: u32, scale: f32, gate_stride: u32, hd: u32, sp: u32, dk: u32, dn: u32, epoch: u32, nsl: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;              // [H, S, D]
@group(0) @binding(2) var<storage, read> k: array<u32>;              // [H, cap, D] packed bf16 (KV_BF16) or f32 bits
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read_write> qh: array<f16>;       // [H, Sp, Dk]
@group(0) @binding(5) var<storage, read_write> kh: array<f16>;       // [H, kvp, Dk]
@group(0) @binding(6) var<storage, read_write> vt: array<f16>;       // [H, Dn, 2 kvp]: V^T twice, rows scaled
@group(0) @binding(7) var<storage, read_write> flag: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> s: array<f32>;        // [H, Sp, kvp]: tensor-core scores, then P
@group(0) @binding(9) var<storage, read_write> ph: array<f16>;       // [H, Sp, 2 kvp]: 2^15 P as hi | lo
@group(0) @binding(10) var<storage, read_write> l: array<f32>;       // [H, Sp]
@group(0) @binding(11) var<storage, read> mask: array<u32>;          // see MASK
@group(0) @binding(12) var<storage, read> o: array<f32>;             // [H, nsl, Sp, Dn]: tensor-core P V in nsl K slices
@group(0) @binding(13) var<storage, read_write> out: array<f32>;     // [S, H * D]
@group(0) @binding(14) var<storage, read> gate: array<f32>;          // [S, gate_stride] (GATE)
@group(0) @binding(15) var<storage, read_write> ex: array<i32>;      // row scale exponents: qh's [H Sp], kh's [H kvp], vt's [H Dn]

const P_SCALE: f32 = 32768.0;      // 2^15

// #include "attention/sdpa_mm.inc.wgsl"
// #include "common/f16_scale.inc.wgsl"

// qkv_f16's workgroups: q and K rows, RPW a workgroup, LANES threads a row of at most LANES * EPT elements; then
// V's dims, VD a workgroup, LANES threads a dim.
const LANES: u32 = 32u;
const RPW: u32 = WG / LANES;
const VD: u32 = WG / LANES;
const EPT: u32 = 8u;

// f32 bits of element c of row r of qh (r < H Sp) or kh (the next H kvp rows), 0 in the padding.
fn qk_bits(r: u32, c: u32) -> u32 {
  let nq = p.heads * p.sp;
  if (c >= p.hd) { return 0u; }
  if (r < nq) {
    let i = r % p.sp;
    if (i < p.seq) { return bitcast<u32>(q[((r / p.sp) * p.seq + i) * p.hd + c]); }
    return 0u;
  }
  let j = (r - nq) % p.kvp;
  if (j < p.kv_len) { return bitcast<u32>(k_at(((r - nq) / p.kvp * p.cap + j) * p.hd + c)); }
  return 0u;
}

// f32 bits of V's key j, dim d in head h, 0 in the padding.
fn v_bits(h: u32, j: u32, d: u32) -> u32 {
  if (j < p.kv_len && d < p.hd) { return bitcast<u32>(v_at((h * p.cap + j) * p.hd + d)); }
  return 0u;
}

// The largest of red[slot * LANES ..][0 .. LANES) (each slot's LANES threads' values), for every thread of the slot.
fn slot_max(t: u32, mx: f32) -> f32 {
  red[t] = mx;
  workgroupBarrier();
  let lane = t % LANES;
  for (var n = LANES / 2u; n > 0u; n >>= 1u) {
    if (lane < n) { red[t] = max(red[t], red[t + n]); }
    workgroupBarrier();
  }
  return red[t - lane];
}

@compute @workgroup_size(WG)
fn qkv_f16(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) t: u32) {
  let g = wid.x + wid.y * nwg.x;
  let rows = p.heads * (p.sp + p.kvp);
  let row_groups = (rows + RPW - 1u) / RPW;
  // Both branches and the return depend on the workgroup alone (a folded grid's spares return).
  if (g < row_groups) {
    qk_rows(g, t, rows);
  } else if (g < row_groups + p.heads * p.dn / VD) {
    v_dims(g - row_groups, t);
  }
}

// Rows g * RPW .. of qh and kh.
fn qk_rows(g: u32, t: u32, rows: u32) {
  let lane = t % LANES;
  let r = g * RPW + t / LANES;
  let live = r < rows;
  var bits: array<u32, EPT>;
  var mx = 0.0;
  for (var i = 0u; i < EPT; i++) {
    bits[i] = select(0u, qk_bits(r, lane + i * LANES), live);
    mx = finite_max(mx, bits[i]);
  }
  let e = row_exponent(slot_max(t, mx));
  if (!live) { return; }
  if (lane == 0u) { ex[r] = e; }
  let nq = p.heads * p.sp;
  var ok = true;
  for (var i = 0u; i < EPT; i++) {
    let c = lane + i * LANES;
    if (c < p.dk) {
      let x = f16(scaled(bits[i], e, &ok));
      if (r < nq) { qh[r * p.dk + c] = x; } else { kh[(r - nq) * p.dk + c] = x; }
    }
  }
  if (!ok) { atomicStore(&flag[0], p.epoch); }
}

// Dims of V (rows of vt) VD * g' .. of every head, g' = g: head g / (Dn / VD).
fn v_dims(g: u32, t: u32) {
  let per = p.dn / VD;
  let h = g / per;
  let d = (g % per) * VD + t / LANES;
  let lane = t % LANES;
  var mx = 0.0;
  for (var j = lane; j < p.kv_len; j += LANES) { mx = finite_max(mx, v_bits(h, j, d)); }
  let e = row_exponent(slot_max(t, mx));
  let r = h * p.dn + d;
  if (lane == 0u) { ex[p.heads * (p.sp + p.kvp) + r] = e; }
  var ok = true;
  for (var j = lane; j < p.kvp; j += LANES) {
    let x = f16(scaled(v_bits(h, j, d), e, &ok));
    vt[r * 2u * p.kvp + j] = x;
    vt[r * 2u * p.kvp + p.kvp + j] = x;
  }
  if (!ok) { atomicStore(&flag[0], p.epoch); }
}

// Whether this call's operands all went through f16 exactly (read in uniform control flow: every thread the same).
fn exact() -> bool {
  return atomicLoad(&flag[0]) != p.epoch;
}

@compute @workgroup_size(WG)
fn softmax_f16(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  let i = wid.x;   // query
  let h = wid.y;
  let row = (h * p.sp + i) * p.kvp;
  let eq = ex[h * p.sp + i];
  let fast = exact();
  // The scores as f32 values: the tensor cores' unscaled, or computed from q and the cache (sdpa_mm.wgsl's
  // operands). Each thread writes the keys softmax_row then reads in it: no barrier between.
  for (var j = t; j < p.kv_len; j += WG) {
    if (fast) {
      s[row + j] = ldexp(s[row + j], -(eq + ex[p.heads * p.sp + h * p.kvp + j]));
    } else {
      var acc = 0.0;
      for (var d = 0u; d < p.hd; d++) { acc += q[(h * p.seq + i) * p.hd + d] * k_at((h * p.cap + j) * p.hd + d); }
      s[row + j] = acc;
    }
  }
  let total = softmax_row(t, i, row, !fast);   // the f32 weights: only the fallback's finish reads them
  if (t == 0u) { l[h * p.sp + i] = total; }
}

// softmax_row's hook: 2^15 P_j as two f16 halves into ph (see the header).
fn weight_out(row: u32, j: u32, e: f32) {
  let x = e * P_SCALE;
  let hi = round_f16(x);
  ph[2u * row + j] = f16(hi);
  ph[2u * row + p.kvp + j] = f16(x - hi);
}

@compute @workgroup_size(WG)
fn finish_f16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let at = finish_at(gid, nwg);
  let i = at.x;
  if (i >= p.seq * p.heads * p.hd) { return; }
  let r = at.y;
  let c = at.z;
  let h = c / p.hd;
  let d = c % p.hd;
  let total = l[h * p.sp + r];
  var y = 0.0;
  if (total > 0.0) {
    var acc = 0.0;
    if (exact()) {
      for (var z = 0u; z < p.nsl; z++) { acc += o[((h * p.nsl + z) * p.sp + r) * p.dn + d]; }
      acc = ldexp(acc, -(15 + ex[p.heads * (p.sp + p.kvp) + h * p.dn + d]));
    } else {
      // The f32 weights (over S) against the cache's values, in key order.
      let row = (h * p.sp + r) * p.kvp;
      for (var j = 0u; j < p.kv_len; j++) { acc += s[row + j] * v_at((h * p.cap + j) * p.hd + d); }
    }
    y = round_out(acc / total);
  }
  out[i] = gated(y, r, c);
}
