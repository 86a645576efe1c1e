// MLX's group-64 affine quantization math, shared through `// #include "quant/affine.inc.wgsl"` by quant.wgsl
// (a thread per group) and attention/quant_group.inc.wgsl (a lane per value: the cache appends); rules and
// rounding: see quant.wgsl.
// Levels are packed little-endian: value j of a group occupies bits [j*bits, (j+1)*bits) of its 2*bits words.
// Never compiled on its own.

const GROUP: u32 = 64u;

// Correctly rounded a / b for finite a and nonzero b: qt = floor(ma * 2^24 / mb), the 24 quotient bits and a guard
// bit of the significands, with a sticky remainder. The hardware quotient (WGSL allows 2.5 ulp) gives qt to within
// a few units; the remainder ma * 2^24 - qt * mb is then exact in 32-bit wrapping arithmetic (its true value is a
// few mb, far below 2^31) and steps qt to the floor. A guess that does not land within 8 steps (a `/` worse than
// WGSL allows) takes the long division, one quotient bit at a time (25 steps, 4x the time: the quantized cache
// append is bound by this chain). Results below the normal range fall back to `/`.
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let sign = (ua ^ ub) & 0x80000000u;
  var ea = i32((ua >> 23u) & 0xffu);
  var eb = i32((ub >> 23u) & 0xffu);
  var ma = ua & 0x7fffffu;
  var mb = ub & 0x7fffffu;
  if (ea == 255 || eb == 255 || (eb == 0 && mb == 0)) { return a / b; }
  if (ea == 0 && ma == 0) { return bitcast<f32>(sign); }
  if (ea == 0) { let sh = countLeadingZeros(ma) - 8u; ma <<= sh; ea = 1 - i32(sh); } else { ma |= 0x800000u; }
  if (eb == 0) { let sh = countLeadingZeros(mb) - 8u; mb <<= sh; eb = 1 - i32(sh); } else { mb |= 0x800000u; }
  var e = ea - eb + 127;
  if (ma < mb) { ma <<= 1u; e -= 1; }
  if (e <= 0) { return a / b; }
  // ma / mb in [1, 2): qt in [2^24, 2^25).
  var qt = u32(clamp(f32(ma) / f32(mb), 1.0, 1.9999999) * 16777216.0);
  var r = i32((ma << 24u) - qt * mb);
  for (var i = 0u; i < 8u && r < 0; i++) { qt -= 1u; r += i32(mb); }
  for (var i = 0u; i < 8u && r >= i32(mb); i++) { qt += 1u; r -= i32(mb); }
  if (r < 0 || r >= i32(mb)) {
    qt = 0u;
    var rem = ma;
    for (var i = 0u; i < 25u; i++) {
      qt <<= 1u;
      if (rem >= mb) { rem -= mb; qt |= 1u; }
      rem <<= 1u;
    }
    r = i32(rem);
  }
  var m = qt >> 1u;
  if ((qt & 1u) == 1u && (r != 0 || (m & 1u) == 1u)) {
    m += 1u;
    if (m == 0x1000000u) { m >>= 1u; e += 1; }
  }
  if (e >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
  return bitcast<f32>(sign | (u32(e) << 23u) | (m & 0x7fffffu));
}

// Metal halves away from zero; MLX's CPU backend (cpu) to even, as C rint (WGSL's round).
fn round_rule(x: f32, cpu: bool) -> f32 {
  if (cpu) { return round(x); }
  let t = trunc(x);
  return select(t, t + sign(x), abs(x - t) >= 0.5);
}

// A group's scale and bias in f32 (the stored ones are rounded by the caller), from its smallest and largest value
// (the largest as the rules find it: Metal's running max starts at 0, the CPU's at -inf).
struct Affine { scale: f32, bias: f32 }

fn affine_of(w_min: f32, w_max: f32, bits: u32, cpu: bool) -> Affine {
  let n_bins = f32((1u << bits) - 1u);
  var scale = max(div_rn(w_max - w_min, n_bins), 1e-7);
  let side = abs(w_min) > abs(w_max);
  scale = select(-scale, scale, side);
  let edge = select(w_max, w_min, side);
  let q0 = round_rule(div_rn(edge, scale), cpu);
  if (q0 != 0.0) { return Affine(div_rn(edge, q0), edge); }
  return Affine(scale, 0.0);
}

// The level of value x in its group, in [0, 2^bits - 1].
fn level_of(x: f32, a: Affine, bits: u32, cpu: bool) -> u32 {
  return u32(clamp(round_rule(div_rn(x - a.bias, a.scale), cpu), 0.0, f32((1u << bits) - 1u)));
}
