// One-off probe for the H200 (bundled like the bench): which form of Dawn's subgroup-matrix builtins gives right
// answers there, and how fast the tensor cores run through Dawn with and without the staged kernel's checks.
// Prints one JSON line per variant: { variant, maxAbsErr, ok, ms, TFLOPs }, raw kernels in both forms of the
// builtins (deprecated `(ptr, offset, col_major, stride)` and `<T, layout>(ptr, offset, stride)`), then the library's.
import { Gpu } from '../src/tensor/gpu.ts';
import { Tensor } from '../src/tensor/tensor.ts';
import { matmul } from '../src/kernels/matmul/matmul.ts';
import { checkSgmat } from '../tests/kernels/matmul_sgmat.check.ts';
import { sgmatStats } from '../src/kernels/matmul/matmul_sgmat.ts';
import { Kernel } from '../src/tensor/kernel.ts';
import { SHADERS } from '../src/kernels/shaders.gen.ts';

const gpu = await Gpu.create();
const device = gpu.device;
const out = { push: (o: unknown) => console.log(JSON.stringify(o)) };

/** Raw tensor-core kernel over f16 storage inputs (a [M, K] row-major, b [N, K]), f32 [M, N] out, 64 x 32 tiles. */
function raw(api: 'old' | 'new'): string {
  const L = (t: string, p: string, off: string, cm: boolean, st: string) => api === 'new'
    ? `subgroupMatrixLoad<subgroup_matrix_${t}<f16, 16, 16>, ${cm ? 'col_major' : 'row_major'}>(${p}, ${off}, ${st})`
    : `subgroupMatrixLoad<subgroup_matrix_${t}<f16, 16, 16>>(${p}, ${off}, ${cm}, ${st})`;
  const S = (off: string, m: string) => api === 'new' ? `subgroupMatrixStore<row_major>(&c, ${off}, ${m}, N)` : `subgroupMatrixStore(&c, ${off}, ${m}, false, N)`;
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
override K: u32 = 64u;
override N: u32 = 32u;
@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wid: vec3u) {
  let n0 = wid.x * 32u;
  let m0 = wid.y * 64u;
  var acc: array<subgroup_matrix_result<f32, 16, 16>, 8>;
  for (var k = 0u; k < K; k += 16u) {
    let b0 = ${L('right', '&b', 'n0 * K + k', true, 'K')};
    let b1 = ${L('right', '&b', '(n0 + 16u) * K + k', true, 'K')};
    for (var i = 0u; i < 4u; i++) {
      let a0 = ${L('left', '&a', '(m0 + i * 16u) * K + k', false, 'K')};
      acc[2u * i] = subgroupMatrixMultiplyAccumulate(a0, b0, acc[2u * i]);
      acc[2u * i + 1u] = subgroupMatrixMultiplyAccumulate(a0, b1, acc[2u * i + 1u]);
    }
  }
  for (var i = 0u; i < 4u; i++) {
    ${S('(m0 + i * 16u) * N + n0', 'acc[2u * i]')};
    ${S('(m0 + i * 16u) * N + n0 + 16u', 'acc[2u * i + 1u]')};
  }
}`;
}

/** f16 bits of a normal f16 value or zero (the probe's data are multiples of 1/64 below 1). */
const f16 = (v: number) => {
  if (v === 0) return 0;
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff);
};
function buffer(data: ArrayBufferView | number, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST): GPUBuffer {
  const size = typeof data === 'number' ? data : Math.ceil(data.byteLength / 4) * 4;
  const b = device.createBuffer({ size, usage });
  if (typeof data !== 'number') device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
  return b;
}
async function read(b: GPUBuffer, n: number): Promise<Float32Array> {
  const r = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(b, 0, r, 0, n * 4);
  device.queue.submit([e.finish()]);
  await r.mapAsync(GPUMapMode.READ);
  const v = new Float32Array(r.getMappedRange().slice(0));
  r.destroy();
  return v;
}

async function runRaw(api: 'old' | 'new', M: number, N: number, K: number, reps: number) {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: raw(api) });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main', constants: { K, N } } });
  const err = await device.popErrorScope();
  if (err) return { error: err.message.slice(0, 400) };
  // Small integers / 8 are exact in f16 and their sums exact in f32: any misplaced product shows.
  const av = Float32Array.from({ length: M * K }, (_, i) => ((i * 7) % 13 - 6) / 8);
  const bv = Float32Array.from({ length: N * K }, (_, i) => ((i * 5) % 11 - 5) / 8);
  const a = buffer(Uint16Array.from(av, f16)), b = buffer(Uint16Array.from(bv, f16)), c = buffer(M * N * 4);
  const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [a, b, c].map((buf, i) => ({ binding: i, resource: { buffer: buf } })) });
  const go = (n: number) => {
    const e = device.createCommandEncoder();
    const p = e.beginComputePass();
    p.setPipeline(pipeline);
    p.setBindGroup(0, bg);
    for (let i = 0; i < n; i++) p.dispatchWorkgroups(N / 32, M / 64);
    p.end();
    device.queue.submit([e.finish()]);
    return device.queue.onSubmittedWorkDone();
  };
  await go(1);
  const got = await read(c, M * N);
  let maxErr = 0;
  for (let m = 0; m < Math.min(M, 128); m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += av[m * K + k] * bv[n * K + k];
      maxErr = Math.max(maxErr, Math.abs(got[m * N + n] - s));
    }
  }
  const t0 = performance.now();
  await go(reps);
  const ms = (performance.now() - t0) / reps;
  for (const x of [a, b, c]) x.destroy();
  return { maxAbsErr: maxErr, ok: maxErr === 0, ms, TFLOPs: (2 * M * N * K) / ms / 1e9 };
}

/**
 * One 16x16x16 product with the left matrix loaded at element offset `off` of a 512-element f16 array: tells
 * whether the offset counts elements (as documented), or something else (bytes: off / 2 elements).
 */
async function offsetDiag(off: number) {
  const code = `enable f16;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(32)
fn main() {
  let l = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, ${off}u, 16u);
  let r = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, row_major>(&b, 0u, 16u);
  subgroupMatrixStore<row_major>(&c, 0u, subgroupMatrixMultiply<f32>(l, r), 16u);
}`;
  device.pushErrorScope('validation');
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
  const err = await device.popErrorScope();
  if (err) return { error: err.message.slice(0, 300) };
  const av = Float32Array.from({ length: 512 }, (_, i) => ((i * 7) % 13 - 6) / 8), bv = Float32Array.from({ length: 256 }, (_, i) => ((i * 5) % 11 - 5) / 8);
  const a = buffer(Uint16Array.from(av, f16)), b = buffer(Uint16Array.from(bv, f16)), c = buffer(256 * 4);
  const e = device.createCommandEncoder();
  const p = e.beginComputePass();
  p.setPipeline(pipeline);
  p.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [a, b, c].map((buf, i) => ({ binding: i, resource: { buffer: buf } })) }));
  p.dispatchWorkgroups(1);
  p.end();
  device.queue.submit([e.finish()]);
  const got = await read(c, 256);
  const errAt = (start: number) => {
    let m = 0;
    for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) {
      let s = 0;
      for (let k = 0; k < 16; k++) s += av[start + i * 16 + k] * bv[k * 16 + j];
      m = Math.max(m, Math.abs(got[i * 16 + j] - s));
    }
    return m;
  };
  return { errIfElements: errAt(off), errIfBytes: errAt(off / 2), errIfIgnored: errAt(0) };
}

for (const off of [0, 16, 256]) out.push({ variant: `offset diag, left at ${off}`, ...(await offsetDiag(off)) });
for (const api of ['old', 'new'] as const) {
  out.push({ variant: `raw ${api} 128x32x64`, ...(await runRaw(api, 128, 32, 64, 1)) });
  out.push({ variant: `raw ${api} 512x6144x1536`, ...(await runRaw(api, 512, 6144, 1536, 20)) });
}
/**
 * The library kernel (or a variant of its source) on small shapes of exact data (multiples of 1/8: every sum exact
 * in f32 and bf16-representable here): the largest error, to tell row, column and k-accumulation faults apart.
 */
async function shapes(label: string, file: string) {
  try {
    await shapesOf(label, new Kernel(file, 'matmul_sgmat'));
  } catch (e) {
    out.push({ variant: label, error: String(e).slice(0, 300) });
  }
}
async function shapesOf(label: string, kernel: Kernel) {
  for (const [M, N, K] of [[1, 16, 16], [1, 16, 32], [1, 16, 64], [16, 16, 16], [2, 1, 16], [1, 32, 16], [64, 32, 32]]) {
    const xv = Float32Array.from({ length: M * K }, (_, i) => ((i * 7) % 5 - 2) / 8);
    const wv = Float32Array.from({ length: N * K }, (_, i) => ((i * 3) % 7 - 3) / 8);
    const x = Tensor.from(gpu, xv, [M, K], 'f32', 'x'), w = Tensor.from(gpu, wv, [N, K], 'bf16', 'w');
    const o = Tensor.from(gpu, new Float32Array(M * N), [M, N], 'f32', 'o');
    kernel.dispatch(gpu, { bindings: { x, w, out: o, stats: sgmatStats(gpu) }, uniforms: { M, N, K, ldo: N, col0: 0 }, overrides: { ACC: 0 }, workgroups: [Math.ceil(N / 32), Math.ceil(M / 64)] });
    const got = await o.read();
    let err = 0, at = -1;
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let e = 0;
      for (let k = 0; k < K; k++) e += xv[m * K + k] * wv[n * K + k];
      if (Math.abs(got[m * N + n] - e) > err) { err = Math.abs(got[m * N + n] - e); at = m * N + n; }
    }
    out.push({ variant: `${label} [${M},${K}]@[${N},${K}]`, maxAbsErr: err, at: at < 0 ? null : [Math.floor(at / N), at % N] });
    for (const t of [x, w, o]) t.dispose();
  }
}
const lib = SHADERS['matmul/matmul_sgmat.wgsl'];
await shapes('library', 'matmul/matmul_sgmat.wgsl');
// Variant: the tensor-core slices unconditionally (no workgroup-uniform branch around them).
SHADERS['probe/nobranch.wgsl'] = lib.replace('if (workgroupUniformLoad(&slow) == 0u) {', 'if (workgroupUniformLoad(&slow) == 0u || true) {');
await shapes('no branch', 'probe/nobranch.wgsl');
// Variant: accumulators in an array, as the bare kernel that works keeps them.
let arr = lib.replace(/  var c(\d)(\d) = subgroup_matrix_result<f32, S, S>\(\);\n/g, (_, i, j) => (i === '0' && j === '0' ? '  var cc: array<subgroup_matrix_result<f32, S, S>, 8>;\n' : ''));
arr = arr.replace(/\bc(\d)(\d)\b/g, (_, i, j) => `cc[${Number(i) * 2 + Number(j)}]`);
SHADERS['probe/accarray.wgsl'] = arr;
await shapes('acc array', 'probe/accarray.wgsl');
// Can several subgroups share a workgroup? Offsets from @builtin(subgroup_id) (compile only).
device.pushErrorScope('validation');
device.createShaderModule({ code: `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(128)
fn main(@builtin(subgroup_id) sg: u32) {
  subgroupMatrixStore<row_major>(&c, sg * 256u, subgroup_matrix_result<f32, 16, 16>(), 16u);
}` });
const sgErr = await device.popErrorScope();
out.push({ variant: 'subgroup_id offsets compile', error: sgErr ? sgErr.message.slice(0, 300) : null });

// The library's staged kernel (matmul_sgmat.wgsl): its parity report and its speed on the prefill shape.
const r = await checkSgmat(gpu);
out.push({ variant: 'library sgmat parity', passed: r.passed, failed: r.failed, worstUlp: r.worstUlp, within1: r.within1,
  cases: r.cases.map((c) => `${c.name}: ${c.worstUlp} ulp, ${c.fallbackSlices} fallback slices${c.failure ? `, FAILED ${c.failure}` : ''}`) });
for (const path of ['tiled', 'sgmat'] as const) {
  const x = Tensor.from(gpu, Float32Array.from({ length: 512 * 1536 }, (_, i) => ((i * 7) % 13 - 6) / 8), [512, 1536], 'f32', 'x');
  const w = Tensor.from(gpu, Float32Array.from({ length: 6144 * 1536 }, (_, i) => ((i * 5) % 11 - 5) / 64), [6144, 1536], 'bf16', 'w');
  matmul(x, w, { round: 'bf16', path }).dispose();
  await gpu.sync();
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) matmul(x, w, { round: 'bf16', path }).dispose();
  await gpu.sync();
  const ms = (performance.now() - t0) / 20;
  out.push({ variant: `library ${path} 512x6144x1536`, ms, TFLOPs: (2 * 512 * 6144 * 1536) / ms / 1e9 });
  x.dispose(); w.dispose();
}
gpu.destroy();
process.exit(0);
