// TurboQuant KV blocks (turbo/format.ts: the llama-cpp-turboquant fork's turbo2_0 / turbo3_0 / turbo4_0). One
// workgroup of 128 threads a (head, position, 128-value group); thread t owns the group's element t.
//   turbo_append: cache[h, offset + s] = code(src[h, s, :]) for src f32 [H, S, D], zero-padded to whole groups as
//                 the fork's cache pads heads (turbo/code.inc.wgsl: the fork's CPU order), then the block's words.
//   turbo_dequant: out[h, pos, :] = the block decoded back (centroid x norm, inverse WHT, unpadded), rounded per
//                 ROUND, for the positions below p.len; the grid spans p.span positions a head (len, or a captured
//                 step's reach: its workgroups past len return at once); with PAIR, V's codes (V_TYPE) into vout
//                 too, in the same dispatch (two turbo sides of one capacity). (turbo_append: p.span = S.)
// TYPE: index bits (2, 3, 4); a block takes block_words(TYPE) words (9, 13, 17: the fork's 34, 50, 68 bytes).

struct Params { heads: u32, span: u32, cap: u32, offset: u32, dim: u32, groups: u32, len: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;             // append: [H, S, D]
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;     // [H, cap, groups * words]
@group(0) @binding(3) var<storage, read_write> out: array<f32>;       // dequant: [H, cap, D]
@group(0) @binding(4) var<storage, read_write> vcodes: array<u32>;    // dequant, PAIR: V's codes and decoded values
@group(0) @binding(5) var<storage, read_write> vout: array<f32>;

override TYPE: u32 = 3u;
override V_TYPE: u32 = 3u;
override PAIR: bool = false;
override ROUND: u32 = 0u;

// #include "common/round.inc.wgsl"

// #include "turbo/code.inc.wgsl"

@compute @workgroup_size(128)
fn turbo_append(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) t: u32) {
  let flat = wid.x + wid.y * nwg.x;
  if (flat >= p.heads * p.span * p.groups) { return; }
  let g = flat % p.groups;
  let s = (flat / p.groups) % p.span;
  let h = flat / (p.groups * p.span);
  let e = g * G + t;
  var v = 0.0;
  if (e < p.dim) { v = src[(h * p.span + s) * p.dim + e]; }
  code_group(TYPE, v, t);
  let w = block_words(TYPE);
  if (t < w) { codes[((h * p.cap + p.offset + s) * p.groups + g) * w + t] = block_word(TYPE, t); }
}

// Byte b of a block at word `base` of K's codes (k) or V's (vcodes).
fn code_byte(k: bool, base: u32, b: u32) -> u32 {
  var word = 0u;
  if (k) { word = codes[base + (b >> 2u)]; } else { word = vcodes[base + (b >> 2u)]; }
  return (word >> (8u * (b & 3u))) & 0xffu;
}

@compute @workgroup_size(128)
fn turbo_dequant(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) t: u32) {
  let n = p.heads * p.span * p.groups;
  let flat = wid.x + wid.y * nwg.x;
  if (flat >= select(1u, 2u, PAIR) * n) { return; }
  let k = flat < n;
  let ty = select(V_TYPE, TYPE, k);
  let f = flat % n;
  let g = f % p.groups;
  let pos = (f / p.groups) % p.span;
  let h = f / (p.groups * p.span);
  if (pos >= p.len) { return; }
  let base = ((h * p.cap + pos) * p.groups + g) * block_words(ty);
  let norm = f16_value(code_byte(k, base, 0u) | (code_byte(k, base, 1u) << 8u));
  var idx = 0u;
  if (ty == 4u) {
    idx = (code_byte(k, base, 4u + (t >> 1u)) >> (4u * (t & 1u))) & 15u;
  } else {
    idx = (code_byte(k, base, 2u + (t >> 2u)) >> (2u * (t & 3u))) & 3u;
    if (ty == 3u) { idx |= ((code_byte(k, base, 34u + (t >> 3u)) >> (t & 7u)) & 1u) << 2u; }
  }
  xs[t] = centroid(ty, idx) * norm * sign2(t);
  workgroupBarrier();
  butterflies(t);
  let e = g * G + t;
  if (e < p.dim) {
    let y = round_out(xs[t] * (INV_SQRT_G * sign1(t)));
    let at = (h * p.cap + pos) * p.dim + e;
    if (k) { out[at] = y; } else { vout[at] = y; }
  }
}
