// Bench-only WGSL (kept out of src/kernels/: nothing in the library uses it). A string so that Node, Deno, the
// browser page and the one-file bundle all load it the same way.

/**
 * Streaming read: the bandwidth ceiling of this device, measured with the same loads the GEMV uses (vec4<u32>).
 * Every vec4 of `src` is loaded once, grid-stride (consecutive lanes read consecutive 16-byte words), XOR-folded,
 * and stored only when the fold equals a value random data practically never produces, so the loads cannot be
 * optimised away while the stores cost nothing.
 */
export const STREAM_READ = /* wgsl */ `
struct Params { n4: u32, stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sink: array<vec4<u32>>;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn stream_read(@builtin(global_invocation_id) gid: vec3<u32>) {
  var acc = vec4<u32>(0u);
  for (var i = gid.x; i < p.n4; i += p.stride) {
    acc ^= src[i];
  }
  if (acc.x == 0x12345678u && acc.y == 0x9abcdef0u) {
    sink[gid.x & 63u] = acc;
  }
}
`;
