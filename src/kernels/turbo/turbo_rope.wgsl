// The new positions of gqkv [S, 4 * width] (gate | q | k | v, head-major inside a block, width = H * D) coded into two
// TurboQuant cache sides in one dispatch: K at [h, offset + s] = code(r(RoPE(k block))), V = code(r(v block)),
// the same elements as ropeK / takeV give (rope/elem.inc.wgsl's head_elem, as rope_append.wgsl reads them) and the
// same code as turbo_append (turbo/code.inc.wgsl), so it equals ropeK / takeV then turbo_append, bit for bit.
// One workgroup of 128 threads a (side, head, position, 128-value group): K's H * S * groups first, then V's.
// Position offset is the only uniform that changes from step to step.

struct Params { heads: u32, seq: u32, width: u32, dim: u32, groups: u32, k_cap: u32, v_cap: u32, offset: u32,
  log2_base: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;          // gqkv [S, 4 * width]
@group(0) @binding(2) var<storage, read_write> kc: array<u32>;     // K codes [H, k_cap, groups * words(K_TYPE)]
@group(0) @binding(3) var<storage, read_write> vc: array<u32>;     // V codes [H, v_cap, groups * words(V_TYPE)]

override K_TYPE: u32 = 3u;
override V_TYPE: u32 = 3u;
override ROUND: u32 = 0u;

// #include "common/round.inc.wgsl"
// #include "rope/elem.inc.wgsl"
// #include "turbo/code.inc.wgsl"

@compute @workgroup_size(128)
fn turbo_rope_append(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                     @builtin(local_invocation_index) t: u32) {
  let n = p.heads * p.seq * p.groups;
  let flat = wid.x + wid.y * nwg.x;
  if (flat >= 2u * n) { return; }
  let is_k = flat < n;
  let f = flat % n;
  let g = f % p.groups;
  let s = (f / p.groups) % p.seq;
  let h = f / (p.groups * p.seq);
  let e = g * G + t;
  var v = 0.0;
  let row0 = s * 4u * p.width + select(3u, 2u, is_k) * p.width + h * p.dim;
  if (e < p.dim) { v = head_elem(row0, e, p.dim, p.offset + s, p.log2_base, is_k); }
  let ty = select(V_TYPE, K_TYPE, is_k);
  code_group(ty, v, t);
  let w = block_words(ty);
  if (t < w) {
    let word = block_word(ty, t);
    if (is_k) {
      kc[((h * p.k_cap + p.offset + s) * p.groups + g) * w + t] = word;
    } else {
      vc[((h * p.v_cap + p.offset + s) * p.groups + g) * w + t] = word;
    }
  }
}
