// Decode's cache append fused into sdpa_one.wgsl's split, for full-precision caches (the model's decode step
// then has no rope_append dispatch): one_split_append is one_split (attention/one_split.inc.wgsl) whose query is
// gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's), and
// whose workgroup holding that position also writes the new key (RoPE'd) and value into the cache, bit for bit
// as rope_append. Its units of that position come from the words it wrote, kept in workgroup memory (no other
// workgroup reads that position; no trip back through memory). The new key's and value's elements are loaded
// first, then the query is RoPE'd, so both sets of loads are in flight together, as in qsdpa_one_append.wgsl.
// sdpa_one.wgsl's one_merge follows; one_split_append_fold is the same with the merge folded in (sdpa_one.wgsl's
// one_split_fold).

@group(0) @binding(2) var<storage, read_write> k4: array<vec4<u32>>;  // [H, cap, D]: f32 bits or packed bf16
@group(0) @binding(3) var<storage, read_write> v4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read> src: array<f32>;             // gqkv [1, 4 * width], width = H * D

// #include "attention/one_split.inc.wgsl"
// #include "attention/one_merge.inc.wgsl"
// #include "rope/elem.inc.wgsl"

fn qv(h: u32, d: u32) -> f32 { return head_elem(p.width + h * HD, d, HD, p.kv_len - 1u, p.log2_base, true); }

// The new key's words, then the new value's (HD f32 words or HD / 2 bf16 pairs each).
var<workgroup> nw: array<u32, 2u * HD>;

// Word w of the new key (side 0, RoPE'd) or value (side 1) of head h at `pos`: one f32, or two bf16 packed; a word a
// thread, so no thread walks a chain of RoPE'd elements.
fn new_word(h: u32, side: u32, w: u32, pos: u32) -> u32 {
  let row0 = (2u + side) * p.width + h * HD;
  let rope = side == 0u;
  if (KV_BF16) {
    return pack_bf16(head_elem(row0, 2u * w, HD, pos, p.log2_base, rope), head_elem(row0, 2u * w + 1u, HD, pos, p.log2_base, rope));
  }
  return bitcast<u32>(head_elem(row0, w, HD, pos, p.log2_base, rope));
}

// Word w of the new key (side 0) or value (side 1) into the cache at `pos` and into nw.
fn put_word(h: u32, side: u32, w: u32, pos: u32, word: u32) {
  let at = (h * p.cap + pos) * (HD / epu()) + w / 4u;
  if (side == 0u) { k4[at][w % 4u] = word; } else { v4[at][w % 4u] = word; }
  nw[side * 4u * (HD / epu()) + w] = word;
}

// Unit u (16 bytes) of the new key (side 0) or value (side 1), from nw.
fn new_unit(side: u32, u: u32) -> vec4<u32> {
  let b = side * 4u * (HD / epu()) + 4u * u;
  return vec4<u32>(nw[b], nw[b + 1u], nw[b + 2u], nw[b + 3u]);
}

// The chunk's units and, in the workgroup whose chunk holds the new position, the new key's and value's words (at
// most two a thread: 2 HD / epu() * 4 <= 2 WG), then the query RoPE'd, then those words into the cache (its units of
// that position taken from them), then the chunk's split: every load is in flight before the query's chain.
fn append_split(wid: vec3u, t: u32) {
  let last = p.kv_len - 1u;
  let k0 = wid.x * CK;
  let appending = k0 <= last && last < k0 + CK;   // the same for the whole workgroup
  let upr = HD / epu();
  let wpr = 4u * upr;   // words a row
  var units = chunk_units(wid.x, wid.y, t);
  var words: array<u32, 2>;
  if (appending) {
    for (var i = 0u; i < 2u; i++) {
      let w = t + i * WG;
      if (w < 2u * wpr) { words[i] = new_word(wid.y, w / wpr, w % wpr, last); }
    }
  }
  load_query(wid.x, wid.y, t);
  if (appending) {
    for (var i = 0u; i < 2u; i++) {
      let w = t + i * WG;
      if (w < 2u * wpr) { put_word(wid.y, w / wpr, w % wpr, last, words[i]); }
    }
    workgroupBarrier();
    for (var i = 0u; i < UPT; i++) {
      if (k0 + t / PK >= last) { units.k[i] = new_unit(0u, min(t % PK + i * PK, upr - 1u)); }
      if (v_key(k0, t, i) >= last) { units.v[i] = new_unit(1u, t % upr); }
    }
  }
  split(wid, t, units);
}

@compute @workgroup_size(WG)
fn one_split_append(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  append_split(wid, t);
}

@compute @workgroup_size(WG)
fn one_split_append_fold(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32) {
  append_split(wid, t);
  fold(wid, t);
}
