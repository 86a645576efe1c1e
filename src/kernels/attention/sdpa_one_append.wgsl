// Decode's cache append fused into sdpa_one.wgsl's split, for full-precision caches (the model's decode step
// then has no rope_append dispatch): one_split_append is one_split (attention/one_split.inc.wgsl) whose query is
// gqkv's q block RoPE'd at position kv_len - 1 as rope_append does it (each workgroup rotates its own head's), and
// whose workgroup holding that position also writes the new key (RoPE'd) and value into the cache, bit for bit
// as rope_append. Its units of that position come from the words it wrote, kept in workgroup memory (no other
// workgroup reads that position; no trip back through memory). The query is RoPE'd first, so its loads are in
// flight with the new key's and value's, as in qsdpa_one_append.wgsl. sdpa_one.wgsl's one_merge follows;
// one_split_append_fold is the same with the merge folded in (sdpa_one.wgsl's one_split_fold).

@group(0) @binding(2) var<storage, read_write> k4: array<vec4<u32>>;  // [H, cap, D]: f32 bits or packed bf16
@group(0) @binding(3) var<storage, read_write> v4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read> src: array<f32>;             // gqkv [1, 4 * width], width = H * D

// #include "attention/one_split.inc.wgsl"
// #include "attention/one_merge.inc.wgsl"
// #include "rope/elem.inc.wgsl"

fn qv(h: u32, d: u32) -> f32 { return head_elem(p.width + h * HD, d, HD, p.kv_len - 1u, p.log2_base, true); }

// The new key's words, then the new value's (HD f32 words or HD / 2 bf16 pairs each).
var<workgroup> nw: array<u32, 2u * HD>;

// Word w of the new key (side 0, RoPE'd) or value (side 1) of head h into the cache at `pos` and into nw: one
// f32, or two bf16 packed; a word a thread, so no thread walks a chain of RoPE'd elements.
fn new_word(h: u32, side: u32, w: u32, pos: u32) {
  let row0 = (2u + side) * p.width + h * HD;
  let rope = side == 0u;
  var word: u32;
  if (KV_BF16) {
    word = pack_bf16(head_elem(row0, 2u * w, HD, pos, p.log2_base, rope), head_elem(row0, 2u * w + 1u, HD, pos, p.log2_base, rope));
  } else {
    word = bitcast<u32>(head_elem(row0, w, HD, pos, p.log2_base, rope));
  }
  let at = (h * p.cap + pos) * (HD / epu()) + w / 4u;
  if (side == 0u) { k4[at][w % 4u] = word; } else { v4[at][w % 4u] = word; }
  nw[side * 4u * (HD / epu()) + w] = word;
}

// Unit u (16 bytes) of the new key (side 0) or value (side 1), from nw.
fn new_unit(side: u32, u: u32) -> vec4<u32> {
  let b = side * 4u * (HD / epu()) + 4u * u;
  return vec4<u32>(nw[b], nw[b + 1u], nw[b + 2u], nw[b + 3u]);
}

// The chunk's units loaded and the query RoPE'd, then the new key and value into the cache by the workgroup whose
// chunk holds them (its units of that position taken from the words it wrote), then the chunk's split.
fn append_split(wid: vec3u, t: u32) {
  let last = p.kv_len - 1u;
  let k0 = wid.x * CK;
  var units = chunk_start(wid, t);
  if (k0 <= last && last < k0 + CK) {   // the same for the whole workgroup
    let upr = HD / epu();
    let wpr = 4u * upr;   // words a row
    for (var w = t; w < 2u * wpr; w += WG) { new_word(wid.y, w / wpr, w % wpr, last); }
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
