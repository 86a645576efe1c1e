// Elementwise f32 ops on flat arrays. One thread per element; the grid may be 2-D when n exceeds
// 65535 workgroups (index = x + y * num_workgroups.x * WG).
//   add   out = a + b

struct Params { n: u32, cols: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  out[i] = a[i] + b[i];
}
