// Row sums in f32: one workgroup per row, strided partial sums then a tree reduction in shared memory.
struct Params { rows: u32, cols: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const WG: u32 = 64;
var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn sum_rows(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x;
  var acc = 0.0;
  for (var j = lid; j < p.cols; j += WG) { acc += a[row * p.cols + j]; }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { out[row] = partial[0]; }
}
