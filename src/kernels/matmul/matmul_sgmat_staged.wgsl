// C = A @ B^T on subgroup matrices with the operands staged through workgroup memory: matmul_sgmat.wgsl's product
// (same bindings' data, same split-K slabs, same f32 accumulation of exact f16 products) for tiles of 128 x 128,
// also batched (prefill attention's products, a head per batch: attention/sdpa-mm.ts).
// A workgroup is 4 subgroups of 32 lanes (2 x 2, each owning 4 x 4 result matrices of 16 x 16, a 64 x 64
// quarter). Every 64 columns of K, its 128 threads copy the tile's A rows (128 x 64) and B rows (128 x 64) into
// workgroup memory with 16-byte loads (a and b bound as vec4<u32>: 8 f16 each), and the subgroups load their
// matrices from there: each operand is read from memory once per workgroup instead of once per subgroup matrix
// load, and the next 64 columns' loads are issued before this block's products (a register double buffer).
// Rows are padded to 72 f16 (144 bytes) so the 16 rows one matrix load reads fall in different banks.
// Measured on the H200 (bench/sgmat-probe.ts, 512 x 8192 x 1536, the probe's clock): 39 TFLOP/s against 12 for
// the storage-direct kernel; 32 columns a block 37, 64 x 64 tiles of one subgroup 24.
// Needs Mp and Np multiples of 128 and the slice bounds multiples of 64 (matmul-sgmat.ts pads and splits so),
// subgroups of exactly 32 (so 128 threads are 4 subgroups) and 36 KiB of workgroup memory.

enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;

// nslice K slices a product, workgroups.z = batch * nslice + slice; a_batch / b_batch: 16-byte units between the
// operands of consecutive batches (0 for one product: the matmul path; a head's q and K in attention).
struct Params { Kp: u32, Np: u32, Ks: u32, slab: u32, nslice: u32, a_batch: u32, b_batch: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;   // f16 [Mp, Kp], 8 a unit
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;   // f16 [Np, Kp]
@group(0) @binding(3) var<storage, read_write> c: array<f32>;   // f32 [S, Mp, Np]

const BK: u32 = 64u;
const LD: u32 = 72u;   // BK + 8: a matrix load's 16 rows start 144 bytes apart, 4 banks on from each other

var<workgroup> sa: array<f16, 9216>;   // 128 rows x LD
var<workgroup> sb: array<f16, 9216>;

// 8 f16 (one 16-byte unit) into workgroup memory at `at`.
fn put(s: ptr<workgroup, array<f16, 9216>>, at: u32, v: vec4<u32>) {
  let x = bitcast<vec2<f16>>(v.x);
  let y = bitcast<vec2<f16>>(v.y);
  let z = bitcast<vec2<f16>>(v.z);
  let w = bitcast<vec2<f16>>(v.w);
  (*s)[at] = x.x; (*s)[at + 1u] = x.y; (*s)[at + 2u] = y.x; (*s)[at + 3u] = y.y;
  (*s)[at + 4u] = z.x; (*s)[at + 5u] = z.y; (*s)[at + 6u] = w.x; (*s)[at + 7u] = w.y;
}

// Thread t copies units (t % 8) of rows t / 8 + 16 r, r < 8, of each operand: one block is 8 units a row.
struct Block {
  a0: vec4<u32>, a1: vec4<u32>, a2: vec4<u32>, a3: vec4<u32>,
  a4: vec4<u32>, a5: vec4<u32>, a6: vec4<u32>, a7: vec4<u32>,
  b0: vec4<u32>, b1: vec4<u32>, b2: vec4<u32>, b3: vec4<u32>,
  b4: vec4<u32>, b5: vec4<u32>, b6: vec4<u32>, b7: vec4<u32>
}

// The block at unit column u of this thread's rows (ia, ib: the first row's unit index; rs: 16 rows of units).
fn fetch(ia: u32, ib: u32, rs: u32) -> Block {
  return Block(
    a[ia], a[ia + rs], a[ia + 2u * rs], a[ia + 3u * rs],
    a[ia + 4u * rs], a[ia + 5u * rs], a[ia + 6u * rs], a[ia + 7u * rs],
    b[ib], b[ib + rs], b[ib + 2u * rs], b[ib + 3u * rs],
    b[ib + 4u * rs], b[ib + 5u * rs], b[ib + 6u * rs], b[ib + 7u * rs]);
}

fn stage(g: Block, at: u32) {
  let r = 16u * LD;
  put(&sa, at, g.a0); put(&sa, at + r, g.a1); put(&sa, at + 2u * r, g.a2); put(&sa, at + 3u * r, g.a3);
  put(&sa, at + 4u * r, g.a4); put(&sa, at + 5u * r, g.a5); put(&sa, at + 6u * r, g.a6); put(&sa, at + 7u * r, g.a7);
  put(&sb, at, g.b0); put(&sb, at + r, g.b1); put(&sb, at + 2u * r, g.b2); put(&sb, at + 3u * r, g.b3);
  put(&sb, at + 4u * r, g.b4); put(&sb, at + 5u * r, g.b5); put(&sb, at + 6u * r, g.b6); put(&sb, at + 7u * r, g.b7);
}

// Every subgroup-matrix statement stands on a line of its own, as the `#sgmat` lines unroll (the 4 x 4 tile's
// statements, scripts/gen-wgsl.mjs): reflection (kernels/kernel.ts, reflectable) leaves those lines out.
@compute @workgroup_size(128)
fn matmul_sgmat_staged(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32,
                       @builtin(subgroup_id) sg: u32) {
  // Never true (Kp >= 64): names the bindings for reflection.
  if (p.Kp == 0u) { c[0] = f32(a[0].x + b[0].x); }
  let mw = wid.y * 128u;
  let nw = wid.x * 128u;
  let am = (sg / 2u) * 64u;
  let bn = (sg % 2u) * 64u;
  let kv = p.Kp / 8u;
  let batch = wid.z / p.nslice;
  let k0 = (wid.z % p.nslice) * p.Ks;
  let k1 = min(p.Kp, k0 + p.Ks);
  let row = t / 8u;
  let u = t % 8u;
  let ia = batch * p.a_batch + (mw + row) * kv + u;
  let ib = batch * p.b_batch + (nw + row) * kv + u;
  let rs = 16u * kv;
  let at = row * LD + u * 8u;
  // #sgmat results
  // The first block (at a valid column even for an empty slice, which never stages it).
  var g = fetch(ia + min(k0, p.Kp - BK) / 8u, ib + min(k0, p.Kp - BK) / 8u, rs);
  for (var k = k0; k < k1; k += BK) {
    stage(g, at);
    workgroupBarrier();
    if (k + BK < k1) { g = fetch(ia + (k + BK) / 8u, ib + (k + BK) / 8u, rs); }
    for (var kk = 0u; kk < BK; kk += 16u) {
      // #sgmat step a="&sa, (am + ${16 * i}u) * LD + kk, LD" b="&sb, (bn + ${16 * j}u) * LD + kk, LD"
    }
    workgroupBarrier();
  }
  let N = p.Np;
  let o = wid.z * p.slab + (mw + am) * N + nw + bn;
  // #sgmat store at="o${plus(16 * i, 'u * N')}${plus(16 * j, 'u')}"
}
