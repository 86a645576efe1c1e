// Rows scaled by a power of two into f16's range for the tensor cores, shared through
// `// #include "common/f16_scale.inc.wgsl"` by their operand conversions (matmul/sgmat_prep.wgsl's to_f16,
// attention/sdpa_mm_f16.wgsl's qkv_f16), so both take the same values and flag the same ones: a row's largest finite
// magnitude lands in [2^14, 2^15), where a bf16 value is exact unless it is 2^32 times smaller than that largest
// (then rounded to f16's subnormals). The includer fills the row's largest with finite_max and scales each value
// with scaled. Never compiled on its own.
// #include "common/half.inc.wgsl"

const EXP: u32 = 0x7f800000u;

// mx and the magnitude of the value with f32 bits `bits`, leaving out values that are not finite (scaled flags them).
fn finite_max(mx: f32, bits: u32) -> f32 {
  let mag = bits & 0x7fffffffu;
  return select(mx, max(mx, bitcast<f32>(mag)), mag < EXP);
}

// 14 - floor(log2 top) for a row whose largest magnitude is top, from its exponent bits (a subnormal top is scaled as
// far as f32 goes; an all-zero row is not scaled).
fn row_exponent(top: f32) -> i32 {
  if (top > 0.0) { return clamp(141 - i32(bitcast<u32>(top) >> 23u), -126, 127); }
  return 0;
}

// v * 2^e as an f16 value held in f32, and whether the f16 path can take it (finite, exact at normal magnitudes).
fn scaled(bits: u32, e: i32, ok: ptr<function, bool>) -> f32 {
  if ((bits & EXP) == EXP) { *ok = false; return 0.0; }
  let v = ldexp(bitcast<f32>(bits), e);
  let mag = bitcast<u32>(v) & 0x7fffffffu;
  if (mag >= 0x38800000u && (mag & 0x1fffu) != 0u) { *ok = false; }   // normal f16: 10 fraction bits
  return round_f16(v);
}
