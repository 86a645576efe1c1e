// Probe for the H200 (bundled by bench/pack.sh, run by bench/h200.sh with PROBE=1): how fast Dawn's subgroup-matrix
// (tensor-core) builtins run there by kernel shape, with and without Dawn's robustness transform, and the f32 tiled
// kernel by register tile. One JSON line per variant. Found so far (bench/results/README.md, run 20261201-224909Z):
// single 16x16x16 products through workgroup memory are right in every layout tried, so the library kernel's wrong
// sums came from elsewhere; storage-direct kernels are exact, one subgroup with a 64 x 64 tile the fastest
// (10.4 TFLOP/s), several subgroups per workgroup slower (5-7), operands staged through workgroup memory slowest
// (1.2-3.1).
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

// (2) Storage-direct kernels: a [M, K] f16 row-major, b [N, K] f16 (the right matrix column-major), c f32 [M, N].
// A workgroup is sgm x sgn subgroups, each owning tm x tn result matrices of 16 x 16.
interface Shape { tm: number; tn: number; sgm: number; sgn: number }
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

async function speed(pr: Probe, s: Shape, M: number, N: number, K: number) {
  const BM = 16 * s.tm * s.sgm, BN = 16 * s.tn * s.sgn;
  const variant = `${pr.tag} sg ${s.sgm}x${s.sgn} tiles ${s.tm}x${s.tn} (${BM}x${BN}) ${M}x${N}x${K}`;
  const p = await pr.pipeline(directCode(s), { K, N });
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

const shapes: Shape[] = [{ tm: 4, tn: 4, sgm: 1, sgn: 1 }, { tm: 2, tn: 4, sgm: 1, sgn: 1 }, { tm: 4, tn: 8, sgm: 1, sgn: 1 }, { tm: 8, tn: 4, sgm: 1, sgn: 1 }, { tm: 4, tn: 4, sgm: 2, sgn: 1 }];
for (const [tag, extra] of [['no-robustness', ',disable_robustness'], ['robust', '']] as const) {
  const pr = new Probe(await device(extra), tag);
  if (!pr.d.features.has('chromium-experimental-subgroup-matrix') || process.argv.includes('--tiled')) { out({ variant: tag, error: 'no subgroup-matrix feature' }); break; }
  for (const s of tag === 'robust' ? shapes : shapes.slice(0, 3)) await speed(pr, s, 512, 6144, 1536);
  if (tag === 'robust') await speed(pr, shapes[0], 512, 1536, 4096);
  pr.d.destroy();
}

// (3) The f32-FMA tiled kernel (the fallback) over register-tile shapes, on the library's own dispatch.
{
  const { Gpu } = await import('../src/tensor/gpu.ts');
  const { Tensor } = await import('../src/tensor/tensor.ts');
  const { Kernel } = await import('../src/tensor/kernel.ts');
  const gpu = await Gpu.create();
  const tiled = new Kernel('matmul/matmul_tiled.wgsl', 'matmul_tiled');
  for (const [M, N, K] of [[512, 6144, 1536], [512, 1536, 4096]]) {
    const x = Tensor.from(gpu, ints(M * K, 7, 13), [M, K], 'f32', 'x');
    const w = Tensor.from(gpu, ints(N * K, 5, 11), [N, K], 'bf16', 'w');
    const o = Tensor.empty(gpu, [M, N], 'f32', 'o');
    for (const [TX, TY, TM, TN, BK] of [[16, 16, 4, 4, 8], [16, 16, 4, 8, 8], [16, 16, 8, 8, 8], [16, 16, 8, 8, 16], [16, 8, 8, 8, 8]]) {
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
process.exit(0);
