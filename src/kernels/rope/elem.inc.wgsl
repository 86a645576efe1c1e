// One element of a head of HRM's gqkv rows as attention uses it, shared through `// #include "rope/elem.inc.wgsl"`
// by rope_append.wgsl and the attention kernels' fused appends (sdpa_one_append.wgsl, qsdpa_one_append.wgsl), so all
// give the same bits: r(x), or r(RoPE(x)) at `pos` (rotate-half pairs d and d + hd / 2). The includer declares a
// binding `src: array<f32>` (gqkv) and round_out. Never compiled on its own.
// #include "rope/angle.inc.wgsl"

// Element d of the head starting at src[row0], rounded; RoPE'd at position pos when `rope`.
fn head_elem(row0: u32, d: u32, hd: u32, pos: u32, log2_base: f32, rope: bool) -> f32 {
  let x = src[row0 + d];
  if (!rope) { return round_out(x); }
  let half = hd / 2u;
  let i = d % half;
  let sc = sincos(angle(i, half, pos, 1.0, log2_base));
  if (d < half) { return round_out(x * sc.y - src[row0 + d + half] * sc.x); }
  return round_out(src[row0 + i] * sc.x + x * sc.y);
}
