// Random weights made on the GPU (benchmarks and sizing tests of the 1B shape need no file).
// Value i = scale * (2 * u - 1), u = top 24 bits of pcg(seed ^ pcg(i)) / 2^24: uniform in [-scale, scale).
//   fill_bf16: one thread per u32 word = two packed bf16 values (round to nearest even).
//   fill_f32:  one thread per value.

struct Params { n: u32, seed: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

override WG: u32 = 256;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn value(i: u32) -> f32 {
  let u = f32(pcg(p.seed ^ pcg(i)) >> 8u) / 16777216.0;
  return p.scale * (2.0 * u - 1.0);
}

fn bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

@compute @workgroup_size(WG)
fn fill_bf16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let w = gid.x + gid.y * nwg.x * WG;
  if (w >= p.n) { return; }
  out[w] = bf16_bits(value(2u * w)) | (bf16_bits(value(2u * w + 1u)) << 16u);
}

@compute @workgroup_size(WG)
fn fill_f32(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  out[i] = bitcast<u32>(value(i));
}
