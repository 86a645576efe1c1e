// The attention masks (AttnMask in attention/types.ts), shared through `// #include "common/mask.inc.wgsl"`. The
// includer declares `override MASK: u32` (common/codes.ts's MASK_CODE: 0 none, 1 causal, 2 prefix, 3 explicit), a
// binding `mask: array<u32>` (prefix: token types [kv_len]; explicit: [S, kv_len]), `p.offset` and `p.kv_len`.
// Never compiled on its own.

// May query i of this call (absolute position offset + i) attend key j?
fn visible(i: u32, j: u32) -> bool {
  let pos = p.offset + i;
  if (MASK == 1u) { return j <= pos; }
  if (MASK == 2u) { return j <= pos || (mask[pos] == 1u && mask[j] == 1u); }
  if (MASK == 3u) { return mask[i * p.kv_len + j] != 0u; }
  return true;
}
