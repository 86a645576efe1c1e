// Probe for the H200 (bundled by bench/pack.sh, run by bench/h200.sh with PROBE=1): how fast Dawn's subgroup-matrix
// (tensor-core) builtins run there by kernel shape and load schedule, with and without Dawn's robustness
// transform. One JSON line per variant. What its runs found, and which choices of the library's tensor-core kernels
// rest on them, is in bench/results/README.md.
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
  const want = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix', 'timestamp-query']
    .filter((f) => adapter.features.has(f)) as GPUFeatureName[];
  const l = adapter.limits;
  const limits = {
    maxBufferSize: l.maxBufferSize, maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
    maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
  };
  return adapter.requestDevice({ requiredFeatures: want, requiredLimits: limits });
}

/** f16 bits of a normal f16 value or zero (the data are multiples of 1/8 below 1). */
const f16 = (v: number) => {
  if (v === 0) return 0;
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff);
};
const ints = (n: number, a: number, b: number) =>
  Float32Array.from({ length: n }, (_, i) => ((i * a) % b - (b >> 1)) / 8);

class Probe {
  constructor(readonly d: GPUDevice, readonly tag: string) {}
  buffer(data: ArrayBufferView | number): GPUBuffer {
    const size = typeof data === 'number' ? data : Math.ceil(data.byteLength / 4) * 4;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.d.createBuffer({ size, usage });
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
    const module = this.d.createShaderModule({ code });
    const p = this.d.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main', constants } });
    const err = await this.d.popErrorScope();
    return err ? err.message.slice(0, 300) : p;
  }
  /** Runs `p` over buffers [a, b, c] `reps` times in one pass; returns GPU ms per dispatch (the pass's timestamps). */
  async go(p: GPUComputePipeline, bufs: GPUBuffer[], wg: [number, number], reps: number): Promise<number> {
    const entries = bufs.map((buffer, binding) => ({ binding, resource: { buffer } }));
    const bg = this.d.createBindGroup({ layout: p.getBindGroupLayout(0), entries });
    const qs = this.d.createQuerySet({ type: 'timestamp', count: 2 });
    const res = this.d.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    const rd = this.d.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const e = this.d.createCommandEncoder();
    const pass = e.beginComputePass({
      timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    });
    pass.setPipeline(p);
    pass.setBindGroup(0, bg);
    for (let i = 0; i < reps; i++) pass.dispatchWorkgroups(wg[0], wg[1]);
    pass.end();
    e.resolveQuerySet(qs, 0, 2, res, 0);
    e.copyBufferToBuffer(res, 0, rd, 0, 16);
    this.d.queue.submit([e.finish()]);
    await rd.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(rd.getMappedRange().slice(0));
    rd.unmap();
    for (const x of [res, rd]) x.destroy();
    qs.destroy();
    return Number(t[1] - t[0]) / 1e6 / reps;
  }
}

// (2) Storage-direct kernels: a [M, K] f16 row-major, b [N, K] f16 (the right matrix column-major), c f32 [M, N].
// A workgroup is sgm x sgn subgroups, each owning tm x tn result matrices of 16 x 16.
interface Shape { tm: number; tn: number; sgm: number; sgn: number; unroll?: number; prefetch?: boolean; bk?: number }
function directCode({ tm, tn, sgm, sgn, unroll = 1, prefetch = false }: Shape): string {
  const many = sgm * sgn > 1;
  const L = (side: 'left' | 'right', name: string, i: number, k: string) => side === 'right'
    ? `subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b, (n0 + ${16 * i}u) * K + ${k}, K)`
    : `subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a, (m0 + ${16 * i}u) * K + ${k}, K)`;
  const mma = (a: string, b: string) => {
    const o: string[] = [];
    for (let i = 0; i < tm; i++) {
      for (let j = 0; j < tn; j++) {
        o.push(`    c${i}_${j} = subgroupMatrixMultiplyAccumulate(${a}${i}, ${b}${j}, c${i}_${j});`);
      }
    }
    return o;
  };
  const lines: string[] = [];
  if (prefetch) {
    // Register double buffer: the next k-step's tiles load while this one multiplies.
    const pre: string[] = [];
    for (let j = 0; j < tn; j++) pre.push(`  var b${j} = ${L('right', 'b', j, '0u')};`);
    for (let i = 0; i < tm; i++) pre.push(`  var a${i} = ${L('left', 'a', i, '0u')};`);
    for (let j = 0; j < tn; j++) lines.push(`    let nb${j} = ${L('right', 'b', j, 'min(k + 16u, K - 16u)')};`);
    for (let i = 0; i < tm; i++) lines.push(`    let na${i} = ${L('left', 'a', i, 'min(k + 16u, K - 16u)')};`);
    lines.push(...mma('a', 'b'));
    for (let j = 0; j < tn; j++) lines.push(`    b${j} = nb${j};`);
    for (let i = 0; i < tm; i++) lines.push(`    a${i} = na${i};`);
    const loop = `  for (var k = 0u; k < K; k += 16u) {\n${lines.join('\n')}\n  }`;
    return header(many) + body({ tm, tn, sgm, sgn }, '', `${pre.join('\n')}\n${loop}`);
  }
  for (let u = 0; u < unroll; u++) {
    for (let j = 0; j < tn; j++) lines.push(`    let b${u}_${j} = ${L('right', 'b', j, `k + ${16 * u}u`)};`);
    for (let i = 0; i < tm; i++) lines.push(`    let a${u}_${i} = ${L('left', 'a', i, `k + ${16 * u}u`)};`);
  }
  for (let u = 0; u < unroll; u++) lines.push(...mma(`a${u}_`, `b${u}_`));
  const loop = `  for (var k = 0u; k < K; k += ${16 * unroll}u) {\n${lines.join('\n')}\n  }`;
  return header(many) + body({ tm, tn, sgm, sgn }, '', loop);
}

// (3) Staged: the workgroup's A (BM x bk) and B (BN x bk) slices copied to workgroup memory with 16-byte loads (a
// and b bound as vec4<u32>: 8 f16 each), row stride bk + 8 (no bank conflicts between the 16 rows a matrix load
// reads); the next slice's loads are issued before this slice's products (register double buffer), two barriers a
// slice. (The first staged probe copied one f16 per load and per thread: its slowness is no evidence against
// staging as such.)
function stagedCode({ tm, tn, sgm, sgn, bk = 32 }: Shape): string {
  const BM = 16 * tm * sgm, BN = 16 * tn * sgn, T = 32 * sgm * sgn, LD = bk + 8, CV = bk / 8;
  const RA = (BM * CV) / T, RB = (BN * CV) / T;
  if (!Number.isInteger(RA) || !Number.isInteger(RB)) throw new Error('tile does not divide over the threads');
  const g: string[] = [], put: string[] = [], pre: string[] = [], next: string[] = [];
  for (const [side, R, rows] of [['a', RA, 'mw'], ['b', RB, 'nw']] as const) {
    for (let r = 0; r < R; r++) {
      const v = `g${side}${r}`, idx = `(t + ${r * T}u)`;
      pre.push(`  let r${side}${r} = ${idx} / ${CV}u;\n  let c${side}${r} = ${idx} % ${CV}u;`);
      g.push(`  var ${v} = ${side}[(${rows} + r${side}${r}) * kv + c${side}${r}];`);
      next.push(`      ${v} = ${side}[(${rows} + r${side}${r}) * kv + (k + ${bk}u) / 8u + c${side}${r}];`);
      put.push(`    put_${side}(r${side}${r} * ${LD}u + c${side}${r} * 8u, ${v});`);
    }
  }
  const mm: string[] = [];
  for (let kk = 0; kk < bk; kk += 16) {
    for (let j = 0; j < tn; j++) {
      mm.push(`    let b${kk}_${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(` +
        `&Bs, (bn + ${16 * j}u) * ${LD}u + ${kk}u, ${LD}u);`);
    }
    for (let i = 0; i < tm; i++) {
      mm.push(`    let a${kk}_${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(` +
        `&As, (am + ${16 * i}u) * ${LD}u + ${kk}u, ${LD}u);`);
      for (let j = 0; j < tn; j++) {
        mm.push(`    c${i}_${j} = subgroupMatrixMultiplyAccumulate(a${kk}_${i}, b${kk}_${j}, c${i}_${j});`);
      }
    }
  }
  const putFn = (side: string) => `fn put_${side}(at: u32, v: vec4<u32>) {
  let x = bitcast<vec2<f16>>(v.x); let y = bitcast<vec2<f16>>(v.y);
  let z = bitcast<vec2<f16>>(v.z); let w = bitcast<vec2<f16>>(v.w);
  ${side.toUpperCase()}s[at] = x.x; ${side.toUpperCase()}s[at + 1u] = x.y;
  ${side.toUpperCase()}s[at + 2u] = y.x; ${side.toUpperCase()}s[at + 3u] = y.y;
  ${side.toUpperCase()}s[at + 4u] = z.x; ${side.toUpperCase()}s[at + 5u] = z.y;
  ${side.toUpperCase()}s[at + 6u] = w.x; ${side.toUpperCase()}s[at + 7u] = w.y;
}
`;
  const acc: string[] = [], st: string[] = [];
  for (let i = 0; i < tm; i++) for (let j = 0; j < tn; j++) {
    acc.push(`  var c${i}_${j} = subgroup_matrix_result<f32, 16, 16>();`);
    st.push(`  subgroupMatrixStore<row_major>(&c, (mw + am + ${16 * i}u) * N + nw + bn + ${16 * j}u, c${i}_${j}, N);`);
  }
  return `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
override K: u32 = 64u;
override N: u32 = 32u;
var<workgroup> As: array<f16, ${BM * LD}>;
var<workgroup> Bs: array<f16, ${BN * LD}>;
${putFn('a')}${putFn('b')}
@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32, @builtin(subgroup_id) sg: u32) {
  let mw = wid.y * ${BM}u;
  let nw = wid.x * ${BN}u;
  let am = (sg / ${sgn}u) * ${16 * tm}u;
  let bn = (sg % ${sgn}u) * ${16 * tn}u;
  let kv = K / 8u;
${pre.join('\n')}
${g.join('\n')}
${acc.join('\n')}
  for (var k = 0u; k < K; k += ${bk}u) {
${put.join('\n')}
    workgroupBarrier();
    if (k + ${bk}u < K) {
${next.join('\n')}
    }
${mm.join('\n')}
    workgroupBarrier();
  }
${st.join('\n')}
}`;
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
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) t: u32${
  many ? ', @builtin(subgroup_id) sg: u32' : ''}) {
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
  const variant = `${pr.tag} ${s.bk ? `staged bk ${s.bk}` : 'direct'} sg ${s.sgm}x${s.sgn} tiles ${s.tm}x${s.tn} ` +
    `(${BM}x${BN})${s.unroll ? ` unroll ${s.unroll}` : ''}${s.prefetch ? ' prefetch' : ''} ${M}x${N}x${K}`;
  const p = await pr.pipeline(s.bk ? stagedCode(s) : directCode(s), { K, N });
  if (typeof p === 'string') return out({ variant, error: p });
  const av = ints(M * K, 7, 13), bv = ints(N * K, 5, 11);
  const a = pr.buffer(Uint16Array.from(av, f16)), b = pr.buffer(Uint16Array.from(bv, f16)), c = pr.buffer(M * N * 4);
  const wg: [number, number] = [N / BN, M / BM];
  await pr.go(p, [a, b, c], wg, 1);
  const got = await pr.read(c, M * N);
  let maxErr = 0;
  for (let m = 0; m < M; m += 37) for (let n = 0; n < N; n += 7) {
    let e = 0;
    for (let k = 0; k < K; k++) e += av[m * K + k] * bv[n * K + k];
    maxErr = Math.max(maxErr, Math.abs(got[m * N + n] - e));
  }
  await pr.go(p, [a, b, c], wg, 3);
  const ms = await pr.go(p, [a, b, c], wg, 20);
  for (const x of [a, b, c]) x.destroy();
  out({ variant, maxAbsErr: maxErr, ms, TFLOPs: (2 * M * N * K) / ms / 1e9 });
}

const base: Shape = { tm: 4, tn: 4, sgm: 1, sgn: 1 };
const staged = (sgm: number, sgn: number, bk: number, tm = 4, tn = 4): Shape => ({ tm, tn, sgm, sgn, bk });
const shapes: Shape[] = [
  { ...base, prefetch: true }, staged(1, 1, 32), staged(2, 2, 32), staged(2, 2, 64), staged(2, 1, 32), staged(1, 2, 32),
  staged(2, 4, 32), staged(4, 2, 32), staged(2, 2, 32, 4, 2), staged(4, 4, 32, 2, 2),
];
// The layer products of HRM-Text-1B at a 512-token prefill: gqkv, o_proj, gate_up, down.
const products: Array<[number, number, number]> = [[512, 6144, 1536], [512, 8192, 1536], [512, 1536, 4096]];
for (const [tag, extra] of [['no-robustness', ',disable_robustness'], ['robust', '']] as const) {
  const pr = new Probe(await device(extra), tag);
  if (!pr.d.features.has('chromium-experimental-subgroup-matrix') || process.argv.includes('--tiled')) {
    out({ variant: tag, error: 'no subgroup-matrix feature' });
    break;
  }
  for (const s of tag === 'robust' ? shapes.slice(0, 4) : shapes) await speed(pr, s, 512, 6144, 1536);
  if (tag === 'no-robustness') {
    for (const [M, N, K] of products.slice(1)) for (const s of shapes.slice(0, 4)) await speed(pr, s, M, N, K);
  }
  pr.d.destroy();
}
if (process.argv.includes('--print')) {
  for (const s of [shapes[0], shapes[2]]) console.log(s.bk ? stagedCode(s) : directCode(s));
}
process.exit(0);
