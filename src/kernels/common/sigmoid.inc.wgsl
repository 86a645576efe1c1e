// MLX's sigmoid, shared through `// #include "common/sigmoid.inc.wgsl"`: y = 1 / (1 + exp(|x|)); x < 0 ? y : 1 - y
// (the form that never overflows). Never compiled on its own.

fn sigmoid(val: f32) -> f32 {
  let y = 1.0 / (1.0 + exp(abs(val)));
  return select(1.0 - y, y, val < 0.0);
}
