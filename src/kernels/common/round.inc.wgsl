// A kernel's output rounding, shared through `// #include "common/round.inc.wgsl"`: the includer declares
// `override ROUND: u32` (0 f32, 1 bf16, 2 f16: common/codes.ts's ROUND_CODE). Never compiled on its own.
// #include "common/half.inc.wgsl"

fn round_out(val: f32) -> f32 {
  if (ROUND == 1u) { return round_bf16(val); }
  if (ROUND == 2u) { return round_f16(val); }
  return val;
}
