// HRM's attention output gate fused into the kernel that writes attention's output, shared through
// `// #include "common/gate.inc.wgsl"`: bit for bit ops' sigmoidGate, r(r(sigmoid(g)) * y). The includer declares
// `override GATE: bool`, `override ROUND: u32`, a binding `gate: array<f32>` ([S, gate_stride], gate block in the
// first H*D columns) and `p.gate_stride`. Never compiled on its own.
// #include "common/round.inc.wgsl"
// #include "common/sigmoid.inc.wgsl"

// Output element (row, col) of a rounded attention value y.
fn gated(y: f32, row: u32, col: u32) -> f32 {
  if (!GATE) { return y; }
  return gate_by(y, gate[row * p.gate_stride + col]);
}

// y gated by the gate logit g (loaded by the caller, e.g. ahead of the work producing y).
fn gate_by(y: f32, g: f32) -> f32 {
  if (!GATE) { return y; }
  return round_out(round_out(sigmoid(g)) * y);
}

// The gate logits of columns col .. col + 3 of row 0 (one query: decode), for gate_by; zeros without GATE. The
// merges load them before their sums, so that they arrive meanwhile.
fn gate4(col: u32) -> vec4<f32> {
  var g = vec4<f32>(0.0);
  if (GATE) { for (var j = 0u; j < 4u; j++) { g[j] = gate[col + j]; } }
  return g;
}
