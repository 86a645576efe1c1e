// One group of 64 values quantized by 64 lanes of a workgroup (lane = value index), shared through
// `// #include "attention/quant_group.inc.wgsl"` by rope_append.wgsl (a workgroup per group) and
// qsdpa_one_append.wgsl (several groups a workgroup), so the cache appends write the same bits. The includer
// includes quant/affine.inc.wgsl and declares `var<workgroup> g_min, g_max: array<f32, N>` and `g_lv:
// array<u32, N>`, N = 64 x the groups quantized at once; group slot `slot` uses [64 slot, 64 slot + 64). It has
// barriers: every thread of the workgroup calls it, in uniform control flow. Never compiled on its own.

// The group's f32 scale/bias and, in lanes < 2 * bits, word `lane` of its packed levels (0 in the other lanes).
struct GroupQuant { a: Affine, word: u32 }

// Min/max (exact in any order) by lanes < 8 over runs of 8 lanes, each into its run's head, then every lane over
// the heads: two barriers where a tree took log2(64) + 1 (the append is on decode's path: the appending chunk of
// qsdpa_one_append.wgsl finishes last). Every lane forms the same scale/bias and its own level of x, then
// lanes < 2 * bits pack a word each.
fn quant_lanes(x: f32, slot: u32, lane: u32, bits: u32) -> GroupQuant {
  let i0 = slot * GROUP;
  g_min[i0 + lane] = x;
  g_max[i0 + lane] = x;
  workgroupBarrier();
  if (lane < GROUP / 8u) {   // run `lane` is read and written by this lane alone
    let r = i0 + 8u * lane;
    var lo = g_min[r];
    var hi = g_max[r];
    for (var i = 1u; i < 8u; i++) {
      lo = min(lo, g_min[r + i]);
      hi = max(hi, g_max[r + i]);
    }
    g_min[r] = lo;
    g_max[r] = hi;
  }
  workgroupBarrier();
  var lo = g_min[i0];
  var hi = g_max[i0];
  for (var k = 1u; k < GROUP / 8u; k++) {
    lo = min(lo, g_min[i0 + 8u * k]);
    hi = max(hi, g_max[i0 + 8u * k]);
  }
  let a = affine_of(lo, max(0.0, hi), bits, false);   // Metal: the running max starts at 0
  g_lv[i0 + lane] = level_of(x, a, bits, false);
  workgroupBarrier();
  var word = 0u;
  // Only values whose bits reach word `lane` (value j covers bits j bits .. j bits + bits - 1): ~32 / bits + 2
  // of the 64 instead of all of them, the same word.
  let j0 = (32u * lane) / bits;
  for (var j = select(j0, j0 - 1u, j0 > 0u); j < min(GROUP, (32u * lane + 32u) / bits + 1u); j++) {
    let bit = j * bits;
    let sh = bit & 31u;
    if ((bit >> 5u) == lane) { word |= g_lv[i0 + j] << sh; }
    if ((bit >> 5u) + 1u == lane && sh + bits > 32u) { word |= g_lv[i0 + j] >> (32u - sh); }
  }
  return GroupQuant(a, word);
}
