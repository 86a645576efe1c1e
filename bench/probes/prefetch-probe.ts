// Probe for the H200 (bundled by bench/pack.sh, run by bench/h200.sh with PREFETCH=1): can a dispatch that leaves
// HBM idle pull the next products' weights into L2 for them? WebGPU has no programmatic dependent launch (a
// dispatch starts only after the one it depends on has drained), and a decode layer's five dispatches are mostly
// launch, ramp and drain. The probe mimics a decode layer as five dependent dispatches, a bf16 matrix-vector product
// per projection (gqkv 6144x1536, o 1536x1536, gate_up 8192x1536, down 1536x4096; a warp a row) and, in place of
// attention, a latency-bound chain of loads and barriers, over 16 layers of distinct weights (~1 GB, so every read
// is cold), and times one pass of them by timestamps. Extra workgroups of a dispatch read (and drop) a range of
// later weights: the attention stand-in o's and gate_up's, or each product the first MB of the next. One JSON line
// per variant: GPU us per layer (median of 7 passes) and the attention stand-in's own time with that load.
export {};
const { create, globals } = (await import('webgpu' as string)) as { create(o: string[]): GPU; globals: object };
Object.assign(globalThis, globals);
const out = (o: unknown) => console.log(JSON.stringify(o));

const gpu = create([]);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) throw new Error('[prefetch-probe] no WebGPU adapter');
const device = await adapter.requestDevice({
  requiredFeatures: ['timestamp-query'],
  requiredLimits: {
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
  },
});

const CODE = `
struct P { rows: u32, k8: u32, nwork: u32, pf_words: u32, pf_wgs: u32, magic: u32, iters: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;     // [rows, K / 8] bf16
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> pf: array<vec4<u32>>;    // weights to pull into L2 (pf_words from 0)
@group(0) @binding(5) var<storage, read_write> sink: array<u32>;
override LAT: bool = false;
var<workgroup> red: array<f32, 256>;
fn lo(v: u32) -> f32 { return bitcast<f32>(v << 16u); }
fn hi(v: u32) -> f32 { return bitcast<f32>(v & 0xffff0000u); }
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) t: u32) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.nwork) {
    // A prefetching workgroup: its stride of pf, xor-folded; written only on a value no data makes.
    var acc = 0u;
    for (var i = (g - p.nwork) * 256u + t; i < p.pf_words; i += p.pf_wgs * 256u) {
      let v = pf[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == p.magic) { sink[0] = acc; }
    return;
  }
  if (LAT) {
    // The attention stand-in: iters dependent loads of x (L2-resident), each followed by a barrier.
    var idx = t;
    var s = 0.0;
    for (var i = 0u; i < p.iters; i++) {
      let v = x[idx % 4096u];
      s += v;
      idx = idx * 1664525u + select(1013904223u, 12345u, v > 1.0);
      workgroupBarrier();
    }
    if (t == 0u) { y[g] = s; }
    return;
  }
  let lane = t % 32u;
  let row = g * 8u + t / 32u;
  var s = 0.0;
  if (row < p.rows) {
    for (var c = lane; c < p.k8; c += 32u) {
      let v = w[row * p.k8 + c];
      let b = c * 8u;
      s += lo(v.x) * x[b] + hi(v.x) * x[b + 1u] + lo(v.y) * x[b + 2u] + hi(v.y) * x[b + 3u]
         + lo(v.z) * x[b + 4u] + hi(v.z) * x[b + 5u] + lo(v.w) * x[b + 6u] + hi(v.w) * x[b + 7u];
    }
  }
  red[t] = s;
  workgroupBarrier();
  for (var n = 16u; n > 0u; n >>= 1u) {
    if (lane < n) { red[t] += red[t + n]; }
    workgroupBarrier();
  }
  if (lane == 0u && row < p.rows) { y[row] = red[t]; }
}`;
const module = device.createShaderModule({ code: CODE });
// One explicit layout for both pipelines ('auto' would drop the bindings the attention stand-in does not read).
const storage = (type: GPUBufferBindingType) => ({ visibility: GPUShaderStage.COMPUTE, buffer: { type } });
const layout = device.createBindGroupLayout({
  entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } },
    { binding: 1, ...storage('read-only-storage') }, { binding: 2, ...storage('read-only-storage') },
    { binding: 3, ...storage('storage') }, { binding: 4, ...storage('read-only-storage') },
    { binding: 5, ...storage('storage') }],
});
const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
const pipes = [false, true].map((lat) => device.createComputePipeline({
  layout: pipelineLayout, compute: { module, entryPoint: 'main', constants: { LAT: lat ? 1 : 0 } },
}));

// One layer's weights in one buffer: gqkv | o | gate_up | down, each [rows, K] bf16.
const MATS = [{ name: 'gqkv', rows: 6144, K: 1536 }, { name: 'o', rows: 1536, K: 1536 },
  { name: 'gate_up', rows: 8192, K: 1536 }, { name: 'down', rows: 1536, K: 4096 }];
const at: number[] = [];
let layerBytes = 0;
for (const m of MATS) { at.push(layerBytes); layerBytes += m.rows * m.K * 2; }
const LAYERS = 16;
const weights = Array.from({ length: LAYERS },
  () => device.createBuffer({ size: layerBytes, usage: GPUBufferUsage.STORAGE }));
const act = [0, 1].map(() => device.createBuffer({ size: 8192 * 4, usage: GPUBufferUsage.STORAGE }));
const sink = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE });
const MB = 2 ** 20;

interface Step {
  pipe: number; nwork: number; w: [number, number] | null; rows: number; K: number; pf: [number, number] | null;
  pfWgs: number;
}
/** A variant: what the attention stand-in prefetches (bytes from o's start) and each product of the next's weights. */
interface Variant { name: string; attn: number; tail: number; iters: number }

function layerSteps(v: Variant): Step[] {
  const mat = (i: number): Step => {
    const m = MATS[i];
    const next = i === 0 ? null : i + 1 < MATS.length ? at[i + 1] : null;
    return {
      pipe: 0, nwork: m.rows / 8, w: [at[i], m.rows * m.K * 2], rows: m.rows, K: m.K,
      pf: v.tail && next !== null ? [next, v.tail] : null, pfWgs: 32,
    };
  };
  const attn: Step = { pipe: 1, nwork: 252, w: null, rows: 0, K: 0, pf: v.attn ? [at[1], v.attn] : null, pfWgs: 132 };
  return [mat(0), attn, mat(1), mat(2), mat(3)];
}

async function timePass(v: Variant, only?: number): Promise<number> {
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 });
  const res = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const rd = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder();
  const pass = e.beginComputePass({
    timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
  });
  const steps = layerSteps(v);
  const uniforms: GPUBuffer[] = [];
  let n = 0;
  for (let l = 0; l < LAYERS; l++) {
    for (const [i, s] of steps.entries()) {
      if (only !== undefined && i !== only) continue;
      const uni = device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
      const pfWords = s.pf ? s.pf[1] / 16 : 0;
      new Uint32Array(uni.getMappedRange())
        .set([s.rows, s.K / 8, s.nwork, pfWords, s.pf ? s.pfWgs : 0, 0xdeadbeef, v.iters, 0]);
      uni.unmap();
      uniforms.push(uni);
      const range = (r: [number, number] | null) =>
        (r ? { buffer: weights[l], offset: r[0], size: r[1] } : { buffer: weights[l], offset: 0, size: 16 });
      const bg = device.createBindGroup({
        layout,
        entries: [
          { binding: 0, resource: { buffer: uni } }, { binding: 1, resource: range(s.w) },
          { binding: 2, resource: { buffer: act[n % 2] } }, { binding: 3, resource: { buffer: act[(n + 1) % 2] } },
          { binding: 4, resource: range(s.pf) }, { binding: 5, resource: { buffer: sink } },
        ],
      });
      pass.setPipeline(pipes[s.pipe]);
      pass.setBindGroup(0, bg);
      pass.dispatchWorkgroups(s.nwork + (s.pf ? s.pfWgs : 0));
      n++;
    }
  }
  pass.end();
  e.resolveQuerySet(qs, 0, 2, res, 0);
  e.copyBufferToBuffer(res, 0, rd, 0, 16);
  device.queue.submit([e.finish()]);
  await rd.mapAsync(GPUMapMode.READ);
  const t = new BigUint64Array(rd.getMappedRange().slice(0));
  rd.unmap();
  for (const b of [res, rd, ...uniforms]) b.destroy();
  qs.destroy();
  return Number(t[1] - t[0]) / 1e3 / LAYERS;
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
const VARIANTS: Variant[] = [
  { name: 'none', attn: 0, tail: 0, iters: 24 },
  { name: 'attention pulls o', attn: MATS[1].rows * 1536 * 2, tail: 0, iters: 24 },
  { name: 'attention pulls o + half gate_up', attn: (1536 + 4096) * 1536 * 2, tail: 0, iters: 24 },
  { name: 'attention pulls o + gate_up', attn: (1536 + 8192) * 1536 * 2, tail: 0, iters: 24 },
  { name: 'products pull the next 2 MB', attn: 0, tail: 2 * MB, iters: 24 },
  { name: 'products pull the next 6 MB', attn: 0, tail: 6 * MB, iters: 24 },
  {
    name: 'attention pulls o + half gate_up, products the next 2 MB', attn: (1536 + 4096) * 1536 * 2, tail: 2 * MB,
    iters: 24,
  },
  { name: 'none, shorter attention', attn: 0, tail: 0, iters: 8 },
  { name: 'attention pulls o + half gate_up, shorter attention', attn: (1536 + 4096) * 1536 * 2, tail: 0, iters: 8 },
];
device.pushErrorScope('validation');
await timePass(VARIANTS[0]);
const err = await device.popErrorScope();
if (err) throw new Error(`[prefetch-probe] ${err.message}`);
for (const v of VARIANTS) {
  const layer: number[] = [], attn: number[] = [];
  for (let r = 0; r < 7; r++) {
    layer.push(await timePass(v));
    attn.push(await timePass(v, 1));
  }
  out({
    variant: v.name, usPerLayer: +median(layer).toFixed(2), attentionUs: +median(attn).toFixed(2),
    prefetchMB: +((v.attn + 3 * v.tail) / MB).toFixed(1), samples: layer.map((x) => +x.toFixed(2)),
  });
}
process.exit(0);
