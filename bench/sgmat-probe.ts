// Probe for the H200 (bundled by bench/pack.sh, run by bench/h200.sh with PROBE=1): which forms of Dawn's
// subgroup-matrix (tensor-core) builtins give right answers there, and how fast each kernel shape runs. One JSON
// line per variant. Earlier probes (bench/results/README.md) found: kernels reading f16 storage buffers are exact
// at 3.6-4.2 TFLOP/s with one subgroup and a 64 x 32 tile; operands staged through workgroup memory gave wrong
// products. This one asks (1) which workgroup-memory loads/stores are wrong, against hypotheses of how they are
// read, and (2) the speed of storage-direct kernels with larger tiles and several subgroups per workgroup, with and
// without Dawn's robustness transform, and of staged kernels whatever their correctness.
export {};
const { create, globals } = (await import('webgpu' as string)) as { create(o: string[]): GPU; globals: object };
Object.assign(globalThis, globals);
const out = (o: unknown) => console.log(JSON.stringify(o));

const instances: GPU[] = [];   // Dawn instances must outlive their devices (a collected one crashes Dawn)
async function device(extra: string): Promise<GPUDevice> {
  const gpu = create([`enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia${extra}`]);
  instances.push(gpu);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('no adapter');
  const want = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'].filter((f) => adapter.features.has(f)) as GPUFeatureName[];
  const limits = { maxBufferSize: adapter.limits.maxBufferSize, maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup };
  return adapter.requestDevice({ requiredFeatures: want, requiredLimits: limits });
}

/** f16 bits of a normal f16 value or zero (the data are multiples of 1/8 below 1). */
const f16 = (v: number) => {
  if (v === 0) return 0;
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff);
};
const ints = (n: number, a: number, b: number) => Float32Array.from({ length: n }, (_, i) => ((i * a) % b - (b >> 1)) / 8);

class Probe {
  constructor(readonly d: GPUDevice, readonly tag: string) {}
  buffer(data: ArrayBufferView | number): GPUBuffer {
    const size = typeof data === 'number' ? data : Math.ceil(data.byteLength / 4) * 4;
    const b = this.d.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    if (typeof data !== 'number') this.d.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  }
  async read(b: GPUBuffer, n: number): Promise<Float32Array> {
    const r = this.d.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const e = this.d.createCommandEncoder();
    e.copyBufferToBuffer(b, 0, r, 0, n * 4);
    this.d.queue.submit([e.finish()]);
    await r.mapAsync(GPUMapMode.READ);
    const v = new Float32Array(r.getMappedRange().slice(0));
    r.destroy();
    return v;
  }
  async pipeline(code: string, constants: Record<string, number> = {}): Promise<GPUComputePipeline | string> {
    this.d.pushErrorScope('validation');
    const p = this.d.createComputePipeline({ layout: 'auto', compute: { module: this.d.createShaderModule({ code }), entryPoint: 'main', constants } });
    const err = await this.d.popErrorScope();
    return err ? err.message.slice(0, 300) : p;
  }
  /** Runs `p` over buffers [a, b, c] `reps` times in one pass; returns ms per dispatch. */
  async go(p: GPUComputePipeline, bufs: GPUBuffer[], wg: [number, number], reps: number): Promise<number> {
    const bg = this.d.createBindGroup({ layout: p.getBindGroupLayout(0), entries: bufs.map((buffer, binding) => ({ binding, resource: { buffer } })) });
    const t0 = performance.now();
    const e = this.d.createCommandEncoder();
    const pass = e.beginComputePass();
    pass.setPipeline(p);
    pass.setBindGroup(0, bg);
    for (let i = 0; i < reps; i++) pass.dispatchWorkgroups(wg[0], wg[1]);
    pass.end();
    this.d.queue.submit([e.finish()]);
    await this.d.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / reps;
  }
}

// (1) One 16x16x16 product with operands (and/or the result) going through workgroup memory of row stride LDW.
function diagCode(ldw: number, left: boolean, right: boolean, store: boolean): string {
  const L = left ? `subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&wa, 0u, ${ldw}u)` : 'subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, 0u, 16u)';
  const R = right ? `subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, row_major>(&wb, 0u, ${ldw}u)` : 'subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, row_major>(&b, 0u, 16u)';
  const S = store
    ? `subgroupMatrixStore<row_major>(&wc, 0u, m, 16u);\n  workgroupBarrier();\n  for (var i = t; i < 256u; i += 32u) { c[i] = wc[i]; }`
    : 'subgroupMatrixStore<row_major>(&c, 0u, m, 16u);';
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
var<workgroup> wa: array<f16, ${16 * ldw}>;
var<workgroup> wb: array<f16, ${16 * ldw}>;
var<workgroup> wc: array<f32, 256>;
@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) t: u32) {
  for (var i = t; i < 256u; i += 32u) { wa[(i / 16u) * ${ldw}u + i % 16u] = a[i]; wb[(i / 16u) * ${ldw}u + i % 16u] = b[i]; }
  workgroupBarrier();
  let m = subgroupMatrixMultiply<f32>(${L}, ${R});
  ${S}
}`;
}

/** Error of `got` against A' @ B' for readings of the staged operands: as meant, transposed, other strides, 32-bit slots. */
function hypotheses(got: Float32Array, av: Float32Array, bv: Float32Array, ldw: number, left: boolean, right: boolean): Record<string, number> {
  // Memory as 16-bit units, element e of row r at r * ldw + e; `read(u)` is what a load at unit u sees.
  const reads: Record<string, (m: Float32Array, i: number, j: number) => number> = {
    meant: (m, i, j) => m[i * 16 + j],
    transposed: (m, i, j) => m[j * 16 + i],
    half_stride: (m, i, j) => { const u = i * (ldw / 2) + j, r = Math.floor(u / ldw), e = u % ldw; return e < 16 && r < 16 ? m[r * 16 + e] : 0; },
    double_stride: (m, i, j) => { const u = i * ldw * 2 + j, r = Math.floor(u / ldw), e = u % ldw; return e < 16 && r < 16 ? m[r * 16 + e] : 0; },
    slots32: (m, i, j) => { const u = i * ldw + j; if (u % 2) return 0; const s = u / 2, r = Math.floor(s / ldw), e = s % ldw; return e < 16 && r < 16 ? m[r * 16 + e] : 0; },
  };
  const res: Record<string, number> = {};
  for (const [name, f] of Object.entries(reads)) {
    let err = 0;
    for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) {
      let s = 0;
      for (let k = 0; k < 16; k++) s += (left ? f(av, i, k) : av[i * 16 + k]) * (right ? f(bv, k, j) : bv[k * 16 + j]);
      err = Math.max(err, Math.abs(got[i * 16 + j] - s));
    }
    res[name] = err;
  }
  return res;
}

async function diagnose(pr: Probe) {
  const av = ints(256, 7, 13), bv = ints(256, 5, 11);
  const a = pr.buffer(Uint16Array.from(av, f16)), b = pr.buffer(Uint16Array.from(bv, f16)), c = pr.buffer(1024);
  for (const ldw of [16, 24, 32]) {
    for (const [left, right, store] of [[true, false, false], [false, true, false], [true, true, false], [false, false, true]]) {
      const variant = `${pr.tag} diag ldw ${ldw}: ${[left && 'left', right && 'right', store && 'store'].filter(Boolean).join('+')} via workgroup`;
      const p = await pr.pipeline(diagCode(ldw, left, right, store));
      if (typeof p === 'string') { out({ variant, error: p }); continue; }
      await pr.go(p, [a, b, c], [1, 1], 1);
      out({ variant, err: hypotheses(await pr.read(c, 256), av, bv, ldw, left, right) });
    }
    // The library kernel's form: the right matrix column-major from workgroup memory (wb row n holds B[:, n]).
    const variant = `${pr.tag} diag ldw ${ldw}: right col_major via workgroup`;
    const p = await pr.pipeline(diagCode(ldw, false, true, false).replace('subgroup_matrix_right<f16, 16, 16>, row_major>(&wb', 'subgroup_matrix_right<f16, 16, 16>, col_major>(&wb'));
    if (typeof p === 'string') { out({ variant, error: p }); continue; }
    await pr.go(p, [a, b, c], [1, 1], 1);
    const got = await pr.read(c, 256);
    let err = 0;
    for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) {
      let e = 0;
      for (let k = 0; k < 16; k++) e += av[i * 16 + k] * bv[j * 16 + k];
      err = Math.max(err, Math.abs(got[i * 16 + j] - e));
    }
    out({ variant, err });
  }
}

// (2) Storage-direct kernels: a [M, K] f16 row-major, b [N, K] f16 (the right matrix column-major), c f32 [M, N].
// A workgroup is sgm x sgn subgroups, each owning tm x tn result matrices of 16 x 16.
interface Shape { tm: number; tn: number; sgm: number; sgn: number; staged?: number }
function directCode({ tm, tn, sgm, sgn }: Shape): string {
  const many = sgm * sgn > 1;
  const lines: string[] = [];
  for (let j = 0; j < tn; j++) lines.push(`    let b${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + ${16 * j}u) * K + k, K);`);
  for (let i = 0; i < tm; i++) {
    lines.push(`    let a${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + ${16 * i}u) * K + k, K);`);
    for (let j = 0; j < tn; j++) lines.push(`    c${i}_${j} = subgroupMatrixMultiplyAccumulate(a${i}, b${j}, c${i}_${j});`);
  }
  return header(many) + body({ tm, tn, sgm, sgn }, '', `  for (var k = 0u; k < K; k += 16u) {\n${lines.join('\n')}\n  }`);
}

function header(many: boolean): string {
  return `enable f16;
${many ? 'enable subgroups;\n' : ''}enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
override K: u32 = 64u;
override N: u32 = 32u;
`;
}

function body({ tm, tn, sgm, sgn }: Shape, decls: string, loop: string): string {
  const many = sgm * sgn > 1;
  const acc: string[] = [], st: string[] = [];
  for (let i = 0; i < tm; i++) for (let j = 0; j < tn; j++) {
    acc.push(`  var c${i}_${j} = subgroup_matrix_result<f32, 16, 16>();`);
    st.push(`  subgroupMatrixStore<row_major>(&c, (m0 + ${16 * i}u) * N + n0 + ${16 * j}u, c${i}_${j}, N);`);
  }
  return `${decls}@compute @workgroup_size(${32 * sgm * sgn})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32${many ? ', @builtin(subgroup_id) sg: u32' : ''}) {
  let sid = ${many ? 'sg' : '0u'};
  let n0 = wid.x * ${16 * tn * sgn}u + (sid % ${sgn}u) * ${16 * tn}u;
  let m0 = wid.y * ${16 * tm * sgm}u + (sid / ${sgn}u) * ${16 * tm}u;
${acc.join('\n')}
${loop}
${st.join('\n')}
}`;
}

// Staged: the workgroup's A (BM x 32) and B (BN x 32) slices copied to workgroup memory (row stride `staged`),
// loaded from there. Correct only where (1) says workgroup loads are.
function stagedCode(s: Shape): string {
  const { tm, tn, sgm, sgn } = s, ld = s.staged!, BM = 16 * tm * sgm, BN = 16 * tn * sgn, T = 32 * sgm * sgn;
  const decls = `var<workgroup> As: array<f16, ${BM * ld}>;\nvar<workgroup> Bs: array<f16, ${BN * ld}>;\n`;
  const lines: string[] = [];
  for (let h = 0; h < 2; h++) {
    for (let j = 0; j < tn; j++) lines.push(`    let b${h}${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&Bs, (bn + ${16 * j}u) * ${ld}u + ${16 * h}u, ${ld}u);`);
    for (let i = 0; i < tm; i++) {
      lines.push(`    let a${h}${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&As, (am + ${16 * i}u) * ${ld}u + ${16 * h}u, ${ld}u);`);
      for (let j = 0; j < tn; j++) lines.push(`    c${i}_${j} = subgroupMatrixMultiplyAccumulate(a${h}${i}, b${h}${j}, c${i}_${j});`);
    }
  }
  const loop = `  let am = (sid / ${sgn}u) * ${16 * tm}u;
  let bn = (sid % ${sgn}u) * ${16 * tn}u;
  let mw = wid.y * ${BM}u;
  let nw = wid.x * ${BN}u;
  for (var k = 0u; k < K; k += 32u) {
    for (var i = t; i < ${BM * 32}u; i += ${T}u) { As[(i / 32u) * ${ld}u + i % 32u] = a[(mw + i / 32u) * K + k + i % 32u]; }
    for (var i = t; i < ${BN * 32}u; i += ${T}u) { Bs[(i / 32u) * ${ld}u + i % 32u] = b[(nw + i / 32u) * K + k + i % 32u]; }
    workgroupBarrier();
${lines.join('\n')}
    workgroupBarrier();
  }`;
  return header(sgm * sgn > 1) + body(s, decls, loop);
}

async function speed(pr: Probe, s: Shape, M: number, N: number, K: number) {
  const BM = 16 * s.tm * s.sgm, BN = 16 * s.tn * s.sgn;
  const variant = `${pr.tag} ${s.staged ? `staged ld ${s.staged}` : 'direct'} sg ${s.sgm}x${s.sgn} tiles ${s.tm}x${s.tn} (${BM}x${BN}) ${M}x${N}x${K}`;
  const p = await pr.pipeline(s.staged ? stagedCode(s) : directCode(s), { K, N });
  if (typeof p === 'string') return out({ variant, error: p });
  const av = ints(M * K, 7, 13), bv = ints(N * K, 5, 11);
  const a = pr.buffer(Uint16Array.from(av, f16)), b = pr.buffer(Uint16Array.from(bv, f16)), c = pr.buffer(M * N * 4);
  const wg: [number, number] = [N / BN, M / BM];
  await pr.go(p, [a, b, c], wg, 1);
  const got = await pr.read(c, M * N);
  let maxErr = 0;
  for (let m = 0; m < Math.min(M, 64); m++) for (let n = 0; n < N; n += 7) {
    let e = 0;
    for (let k = 0; k < K; k++) e += av[m * K + k] * bv[n * K + k];
    maxErr = Math.max(maxErr, Math.abs(got[m * N + n] - e));
  }
  await pr.go(p, [a, b, c], wg, 3);
  const ms = await pr.go(p, [a, b, c], wg, 20);
  for (const x of [a, b, c]) x.destroy();
  out({ variant, maxAbsErr: maxErr, ms, TFLOPs: (2 * M * N * K) / ms / 1e9 });
}

const shapes: Shape[] = [
  { tm: 4, tn: 2, sgm: 1, sgn: 1 }, { tm: 4, tn: 4, sgm: 1, sgn: 1 }, { tm: 2, tn: 2, sgm: 2, sgn: 2 },
  { tm: 4, tn: 2, sgm: 2, sgn: 2 }, { tm: 2, tn: 4, sgm: 2, sgn: 2 }, { tm: 4, tn: 4, sgm: 2, sgn: 2 }, { tm: 2, tn: 2, sgm: 4, sgn: 2 },
];
for (const [tag, extra] of [['robust', ''], ['no-robustness', ',disable_robustness']] as const) {
  const pr = new Probe(await device(extra), tag);
  if (!pr.d.features.has('chromium-experimental-subgroup-matrix') || process.argv.includes('--tiled')) { out({ variant: tag, error: 'no subgroup-matrix feature' }); break; }
  if (tag === 'robust') await diagnose(pr);
  for (const s of shapes) await speed(pr, s, 512, 6144, 1536);
  if (tag === 'robust') {
    for (const s of [{ tm: 4, tn: 2, sgm: 1, sgn: 1 }, { tm: 2, tn: 2, sgm: 2, sgn: 2 }, { tm: 4, tn: 2, sgm: 2, sgn: 2 }]) {
      for (const staged of [32, 40]) await speed(pr, { ...s, staged }, 512, 6144, 1536);
    }
  }
  pr.d.destroy();
}
// (3) The f32-FMA tiled kernel (the fallback) over register-tile shapes, on the library's own dispatch.
{
  const { Gpu } = await import('../src/tensor/gpu.ts');
  const { Tensor } = await import('../src/tensor/tensor.ts');
  const { Kernel } = await import('../src/tensor/kernel.ts');
  const gpu = await Gpu.create();
  const tiled = new Kernel('matmul/matmul_tiled.wgsl', 'matmul_tiled');
  for (const [M, N, K] of [[512, 6144, 1536], [512, 1536, 1536], [512, 1536, 4096]]) {
    const x = Tensor.from(gpu, ints(M * K, 7, 13), [M, K], 'f32', 'x');
    const w = Tensor.from(gpu, ints(N * K, 5, 11), [N, K], 'bf16', 'w');
    const o = Tensor.empty(gpu, [M, N], 'f32', 'o');
    for (const [TX, TY, TM, TN, BK] of [[16, 16, 4, 4, 8], [16, 16, 4, 8, 8], [16, 16, 8, 8, 8], [16, 16, 8, 8, 16], [8, 16, 8, 8, 8], [16, 8, 8, 8, 8], [8, 8, 8, 8, 16]]) {
      const run = (n: number) => {
        for (let i = 0; i < n; i++) {
          tiled.dispatch(gpu, { bindings: { x, w, out: o }, uniforms: { M, N, K, ldo: N, col0: 0, eps: 0 }, overrides: { WDT: 1, ROUND: 1, ACC: 0, TX, TY, TM, TN, BK }, workgroups: [Math.ceil(N / (TX * TN)), Math.ceil(M / (TY * TM))] });
        }
        return gpu.sync();
      };
      try {
        await run(2);
        const t0 = performance.now();
        await run(20);
        const ms = (performance.now() - t0) / 20;
        out({ variant: `tiled ${TX}x${TY} threads, ${TM}x${TN} outputs, BK ${BK}, ${M}x${N}x${K}`, ms, TFLOPs: (2 * M * N * K) / ms / 1e9 });
      } catch (e) {
        out({ variant: `tiled ${TX}x${TY}x${TM}x${TN}x${BK}`, error: String(e).slice(0, 200) });
      }
    }
    for (const t of [x, w, o]) t.dispose();
  }
  gpu.destroy();
}
if (process.argv.includes('--print')) for (const s of [shapes[3], { ...shapes[3], staged: 40 }]) console.log(s.staged ? stagedCode(s) : directCode(s));
process.exit(0);
