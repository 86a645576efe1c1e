// Non-finite scan of a stored weight: counts the values whose exponent bits are all ones (NaN, +Inf, -Inf) and
// keeps the smallest such element index, in one pass over the stored words. It tests bits, not floats, so it
// reads bf16, f16 and f32 alike and needs no shader-f16 feature (and no float compare a driver could fold away).
//   half = 0: one f32 per word; half = 1: two 16-bit values per word (low half first), `mask` their exponent.
// Threads touch `found` only on a hit, so a finite tensor costs one read of its words.

struct Params { n: u32, half: u32, mask: u32, slot: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
// Per slot: [count, first index] (first starts at 0xffffffff).
@group(0) @binding(2) var<storage, read_write> found: array<atomic<u32>>;

override WG: u32 = 256;

fn hit(i: u32) {
  atomicAdd(&found[2u * p.slot], 1u);
  atomicMin(&found[2u * p.slot + 1u], i);
}

@compute @workgroup_size(WG)
fn scan(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let w = gid.x + gid.y * nwg.x * WG;
  if (p.half == 0u) {
    if (w >= p.n) { return; }
    if ((x[w] & p.mask) == p.mask) { hit(w); }
    return;
  }
  let i = 2u * w;
  if (i >= p.n) { return; }
  let v = x[w];
  if ((v & p.mask) == p.mask) { hit(i); }
  if (i + 1u < p.n && ((v >> 16u) & p.mask) == p.mask) { hit(i + 1u); }
}
