// HRM's small elementwise ops, f32 in and out, one thread per output element (2-D grid past 65535 workgroups:
// i = gid.x + gid.y * num_workgroups.x * WG). ROUND (0 none, 1 bf16, 2 f16) rounds every op's output as MLX
// does in that dtype; computation between roundings is f32.
//   embed         out[s, h] = r(table[id, h] * scale), id = min(ids[s], vocab - 1); table f32 or packed bf16/f16
//                 (WDT) holding rows row0 .. row0 + rows of the whole [vocab, H] table: one dispatch per row-chunk,
//                 each writing only the positions whose id falls in its rows
//   add           out = r(a + b)
//   silu_mul      out[s, i] = r(r(g * r(sigmoid(g))) * u), g = a[s, i], u = a[s, cols + i], a row stride lda
//   sigmoid_gate  out[s, i] = r(r(sigmoid(g)) * b[s, i]),  g = a[s, i], a row stride lda
// r is round_out (common/round.inc.wgsl), sigmoid MLX's form (common/sigmoid.inc.wgsl).

struct Params { n: u32, cols: u32, lda: u32, vocab: u32, row0: u32, rows: u32, scale: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> ids: array<u32>;
@group(0) @binding(5) var<storage, read> table: array<u32>;

override WG: u32 = 64u;
override ROUND: u32 = 0u;
override WDT: u32 = 1u;

// #include "common/round.inc.wgsl"
// #include "common/sigmoid.inc.wgsl"

fn flat_index(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * WG; }

@compute @workgroup_size(WG)
fn embed(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = flat_index(gid, nwg);
  if (i >= p.n) { return; }
  let id = min(ids[i / p.cols], p.vocab - 1u);
  if (id < p.row0 || id - p.row0 >= p.rows) { return; }
  let e = (id - p.row0) * p.cols + i % p.cols;
  var t: f32;
  if (WDT == 0u) {
    t = bitcast<f32>(table[e]);
  } else {
    let word = table[e >> 1u];
    var h = vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
    if (WDT == 2u) { h = unpack2x16float(word); }
    t = select(h.x, h.y, (e & 1u) == 1u);
  }
  out[i] = round_out(t * p.scale);
}

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = flat_index(gid, nwg);
  if (i >= p.n) { return; }
  out[i] = round_out(a[i] + b[i]);
}

@compute @workgroup_size(WG)
fn silu_mul(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = flat_index(gid, nwg);
  if (i >= p.n) { return; }
  let at = (i / p.cols) * p.lda + i % p.cols;
  let g = a[at];
  out[i] = round_out(round_out(g * round_out(sigmoid(g))) * a[at + p.cols]);
}

@compute @workgroup_size(WG)
fn sigmoid_gate(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = flat_index(gid, nwg);
  if (i >= p.n) { return; }
  out[i] = round_out(round_out(sigmoid(a[(i / p.cols) * p.lda + i % p.cols])) * b[i]);
}
