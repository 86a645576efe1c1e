// Element loads from a full-precision cache side, shared through `// #include "attention/kv_load.inc.wgsl"`: the
// includer binds `k` and `v` as u32 words (f32 bits, or two bf16 per word when `override KV_BF16: bool` is set, as
// the packed cache stores them). Never compiled on its own.

fn kv_word_at(word: u32, i: u32) -> f32 {
  if (KV_BF16) { return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (i & 1u) == 1u)); }
  return bitcast<f32>(word);
}

fn k_at(i: u32) -> f32 { return kv_word_at(k[select(i, i >> 1u, KV_BF16)], i); }

fn v_at(i: u32) -> f32 { return kv_word_at(v[select(i, i >> 1u, KV_BF16)], i); }
