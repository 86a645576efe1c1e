// Reading MLX's packed levels (quant.wgsl's layout: a row's values form a little-endian bit stream, 32 values in
// exactly BITS words per pack) and the rounding of MLX's CPU-rule sums, shared through
// `// #include "quant/packed.inc.wgsl"` by qmm.wgsl, dequant.wgsl, attention/qsdpa.wgsl and qsdpa_one.inc.wgsl. The includer declares
// `override BITS: u32`, `override ROUND: u32`, `p.zero` (a uniform 0) and `fn packed_word(i: u32) -> u32` (its
// packed binding). Never compiled on its own.
// #include "common/round.inc.wgsl"

// ACC 1 (every op rounded): in f32 an opaque no-op that keeps products apart from sums (no fma contraction).
fn round_op(val: f32) -> f32 {
  if (ROUND == 0u) { return bitcast<f32>(bitcast<u32>(val) | p.zero); }
  return round_out(val);
}

// Level of value e of the packed row starting at word `base` (it may straddle two words for 3/5/6 bits).
fn level(base: u32, e: u32) -> f32 {
  let bit = e * BITS;
  let sh = bit & 31u;
  var lv = packed_word(base + (bit >> 5u)) >> sh;
  if (sh + BITS > 32u) { lv |= packed_word(base + (bit >> 5u) + 1u) << (32u - sh); }
  return f32(lv & ((1u << BITS) - 1u));
}

// A pack's BITS words read in order through a two-word window (lo, hi), each word loaded once.
struct PackWindow { lo: u32, hi: u32, wi: u32, wb: u32 }

fn pack_window(wb: u32) -> PackWindow {
  return PackWindow(packed_word(wb), packed_word(wb + 1u), 0u, wb);   // BITS >= 2: a pack has at least two words
}

// Level of value e of the pack; e must go 0, 1, ..., 31.
fn pack_level(win: ptr<function, PackWindow>, e: u32) -> f32 {
  let bit = e * BITS;
  if ((bit >> 5u) != (*win).wi) {
    (*win).wi = bit >> 5u;
    (*win).lo = (*win).hi;
    if ((*win).wi + 1u < BITS) { (*win).hi = packed_word((*win).wb + (*win).wi + 1u); }
  }
  let sh = bit & 31u;
  var lv = (*win).lo >> sh;
  if (sh + BITS > 32u) { lv |= (*win).hi << (32u - sh); }
  return f32(lv & ((1u << BITS) - 1u));
}
