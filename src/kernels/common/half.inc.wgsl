// 16-bit float helpers shared by kernels through `// #include "common/half.inc.wgsl"` (scripts/gen-wgsl.mjs):
// round-to-nearest-even to bf16 / f16 values kept in f32, and bf16 unpacking and packing. Never compiled on its own.
// Parameter and local names (val, bits, mag, sgn, word) must not be the name of any kernel's global:
// wgsl_reflect ignores shadowing, so e.g. a local `b` would make an entry point appear to use binding `b`.

fn round_bf16(val: f32) -> f32 {
  let bits = bitcast<u32>(val);
  if ((bits & 0x7f800000u) == 0x7f800000u) { return val; }
  return bitcast<f32>((bits + 0x7fffu + ((bits >> 16u) & 1u)) & 0xffff0000u);
}

// Round to nearest even f16 without relying on pack2x16float's or f16()'s rounding (WGSL leaves it to the
// implementation).
fn round_f16(val: f32) -> f32 {
  let bits = bitcast<u32>(val);
  let mag = bits & 0x7fffffffu;
  let sgn = bits & 0x80000000u;
  if (mag >= 0x7f800000u) { return val; }
  if (mag >= 0x477ff000u) { return bitcast<f32>(sgn | 0x7f800000u); }
  if (mag >= 0x38800000u) { return bitcast<f32>(sgn | ((mag + 0xfffu + ((mag >> 13u) & 1u)) & 0xffffe000u)); }
  return bitcast<f32>(sgn | bitcast<u32>(round(bitcast<f32>(mag) * 16777216.0) / 16777216.0));
}

// Both bf16 halves of a packed word, (element 2i, element 2i + 1), as unpack2x16float does for f16: bf16 is the
// top half of an f32, so widening is a shift.
fn unpack2x16bf16(word: u32) -> vec2<f32> {
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

// Two values as one word of packed bf16 (element 2i low, 2i + 1 high), each rounded to bf16.
fn pack_bf16(lo: f32, hi: f32) -> u32 {
  return (bitcast<u32>(round_bf16(lo)) >> 16u) | (bitcast<u32>(round_bf16(hi)) & 0xffff0000u);
}
