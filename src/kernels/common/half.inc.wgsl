// 16-bit float helpers shared by kernels through `// #include "common/half.inc.wgsl"` (scripts/gen-wgsl.mjs):
// round-to-nearest-even to bf16 / f16 values kept in f32, and bf16 unpacking. Never compiled on its own.

fn round_bf16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7f800000u) == 0x7f800000u) { return v; }
  return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}

// Round to nearest even f16 without relying on pack2x16float's or f16()'s rounding (WGSL leaves it to the
// implementation).
fn round_f16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  let a = b & 0x7fffffffu;
  let s = b & 0x80000000u;
  if (a >= 0x7f800000u) { return v; }
  if (a >= 0x477ff000u) { return bitcast<f32>(s | 0x7f800000u); }
  if (a >= 0x38800000u) { return bitcast<f32>(s | ((a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u)); }
  return bitcast<f32>(s | bitcast<u32>(round(bitcast<f32>(a) * 16777216.0) / 16777216.0));
}

// Both bf16 halves of a packed word, (element 2i, element 2i + 1), as unpack2x16float does for f16: bf16 is the
// top half of an f32, so widening is a shift.
fn unpack2x16bf16(word: u32) -> vec2<f32> {
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}
