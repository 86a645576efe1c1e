// Kernel microbenchmarks: the device's streaming-read bandwidth (the ceiling every decode figure is held
// against), the library's bf16 matrix-vector product on the model's two characteristic shapes (f32 x, and f16 x
// where the device has shader-f16), the prefill-shaped
// matmul in TFLOP/s (and the tensor-core path's schedules on the layer's four prefill shapes), and the cost of one
// small dependent dispatch.
//
// Timing. A "call" is recorded `batch` times into one command buffer, then submitted and awaited: wall time per
// call = (submit -> GPU done) / batch, recording excluded, so the fixed submit/readback latency is spread over
// >= 25 ms of work. Where the adapter has timestamp queries, one more batch is profiled (one pass per dispatch)
// for the kernel's own GPU time; the wall figure also contains the barrier between dependent dispatches, which is
// what the model pays.
import { readTimestamps, type Dispatch, type Gpu, type Upload } from '../src/gpu/gpu.ts';
import { Tensor } from '../src/gpu/tensor.ts';
import { fillRandom } from '../src/kernels/init/random.ts';
import { matmul, type MatmulOptions } from '../src/kernels/matmul/matmul.ts';
import { matmulF16 } from '../src/kernels/matmul/matmul_f16.ts';
import { uplFit, type GemvKernel, type GemvShape } from '../src/kernels/matmul/gemv.ts';
import { sgmatUnavailable, stagedUnavailable } from '../src/kernels/matmul/matmul_sgmat.ts';
import type { SgmatKernel, SgmatSchedule } from '../src/kernels/matmul/sgmat_schedule.ts';
import { add, siluMul } from '../src/kernels/ops/ops.ts';
import { sdpa } from '../src/kernels/attention/sdpa.ts';
import { chunkRows } from '../src/hrm/weights.ts';
import type { Settings } from './settings.ts';
import { now, stats, type Stats } from './stats.ts';
import { STREAM_READ } from './wgsl.ts';
import { capture, replay } from '../src/gpu/capture.ts';

/** HBM bandwidth of an H200 as the CUDA device copy measures it (PERFORMANCE.md): the shares' reference. */
export const H200_BYTES_PER_S = 4.27e12;
/** Dawn quantizes timestamps to 2^16 ns unless told not to: timings that are all multiples of it are suspect. */
const QUANTUM_MS = 65536 / 1e6;

export interface Timing {
  /** Kernel labels dispatched by one call. */
  labels: string[];
  dispatchesPerCall: number;
  batch: number;
  /** Milliseconds per call: wall clock over a batch (submit to done). */
  wallMs: Stats;
  /** Milliseconds per call from GPU timestamps (null without timestamp-query). */
  gpuMs: Stats | null;
  /** The timestamps were all multiples of Dawn's 65.5 us quantum (per-dispatch values are then unreliable). */
  quantized: boolean;
}

export interface BandwidthFigure extends Timing {
  name: string;
  bytes: number;
  /** Bytes per second from the wall time, and from the GPU time where there is one. */
  GBps: Stats;
  kernelGBps: Stats | null;
  /** Median GB/s as a share of the measured streaming read, and of the H200's 4.27 TB/s. */
  shareOfStream: number | null;
  shareOfH200: number;
}

export interface MatmulFigure extends Timing {
  name: string;
  flops: number;
  TFLOPs: Stats;
  kernelTFLOPs: Stats | null;
}

export interface DispatchFigure {
  chain: number;
  /** Microseconds per dependent dispatch: JS recording, and submit -> GPU done. */
  encodeUs: Stats;
  gpuUs: Stats;
}

/**
 * One decode projection (fusions as the model runs them) at one matrix-vector kernel and workgroup shape: where the
 * adapter has timestamps the GPU us per call of one pass of back-to-back calls (passCalls), else the wall us per call.
 */
export interface SweepPoint { layer: string; kernel: GemvKernel; wg: number; rows: number; groups: number | null; bytes: number; wallUs: number | null; passUs: number | null; GBps: number }

/** Pass samples per sweep point (medians). */
const SWEEP_ROUNDS = 5;

/** Decode attention (one query, bf16 cache full to its capacity) on one path. */
/** path 'one': sdpa_one with its merge folded into the split; 'one-separate': with a merge dispatch of its own. */
export interface AttnPoint { heads: number; dim: number; keys: number; path: 'one' | 'one-separate' | 'decode'; wallUs: number }

/** A streaming read of `bytes` (a decode projection's weight size), dispatched back to back in one pass. */
export interface StreamFloorPoint { bytes: number; us: number; GBps: number }

export interface KernelResults {
  stream: BandwidthFigure | null;
  /** What one dispatch reading that many bytes costs at best: the floor the matrix-vector products are held to. */
  streamFloor?: StreamFloorPoint[];
  gemv: BandwidthFigure[];
  sweep: SweepPoint[];
  attention: AttnPoint[];
  matmul: MatmulFigure[];
  dispatch: DispatchFigure | null;
}

/** Time `record` (which records one call into the open batch) as described at the top. */
export async function timeCalls(gpu: Gpu, record: () => void, s: Settings): Promise<Timing> {
  record();
  await gpu.sync(); // compile and first touch
  const d0 = gpu.dispatchCount;
  let t0 = now();
  record();
  const dispatchesPerCall = gpu.dispatchCount - d0;
  await gpu.sync();
  const est = Math.max(now() - t0, 1e-3);
  const batch = Math.max(2, Math.min(1000, Math.ceil(25 / est)));
  const wall: number[] = [];
  for (let i = 0; i < s.samples; i++) {
    for (let b = 0; b < batch; b++) record();
    t0 = now();
    await gpu.sync();
    wall.push((now() - t0) / batch);
  }
  let gpuMs: Stats | null = null;
  let labels: string[] = [];
  let quantized = false;
  if (gpu.timestamps) {
    const calls = Math.max(1, Math.min(batch, Math.floor(2048 / dispatchesPerCall)));
    gpu.profileNext(calls * dispatchesPerCall);
    for (let b = 0; b < calls; b++) record();
    await gpu.sync();
    const t = gpu.lastTimings;
    const per: number[] = [];
    for (let c = 0; c + dispatchesPerCall <= t.length; c += dispatchesPerCall) {
      per.push(t.slice(c, c + dispatchesPerCall).reduce((a, x) => a + x.ms, 0));
    }
    labels = [...new Set(t.slice(0, dispatchesPerCall).map((x) => x.label))];
    quantized = t.length > 1 && t.every((x) => Math.abs(x.ms / QUANTUM_MS - Math.round(x.ms / QUANTUM_MS)) < 1e-6);
    if (per.length) gpuMs = stats(per);
  }
  return { labels, dispatchesPerCall, batch, wallMs: stats(wall), gpuMs, quantized };
}

/**
 * `calls` calls of `record` captured once, to be timed as one compute pass (passMs) as often as wanted: GPU
 * microseconds per call, dependent dispatches back to back with their barriers and nothing of JavaScript's
 * recording (which, at ~7-10 us a dispatch, hides a kernel shorter than that behind wall-clock timing). `release`
 * gives the capture's buffers back. The caller has timestamp-query.
 */
export async function passCalls(gpu: Gpu, record: () => void, calls: number): Promise<{ us: (samples: number) => Promise<number[]>; release: () => void }> {
  await gpu.sync();
  const cap = capture(gpu, () => { for (let i = 0; i < calls; i++) record(); });
  const claimed = gpu.claim(cap.allocated);
  const uploads = [...cap.uniforms, ...cap.uploads];
  return {
    us: async (samples) => (await passMs(gpu, cap.dispatches, uploads, samples)).map((m) => (m * 1000) / calls),
    release: () => { for (const b of claimed) gpu.release(b); },
  };
}

/**
 * GPU milliseconds of `dispatches` encoded as one compute pass (after `uploads`), between the pass's two
 * timestamps, `samples` times after a warm-up. The caller has timestamp-query.
 */
export async function passMs(gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], samples: number): Promise<number[]> {
  const device = gpu.device;
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolve = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readback = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const ms: number[] = [];
    for (let i = 0; i <= samples; i++) {
      await replay(gpu, dispatches, uploads, (enc) => {
        enc.resolveQuerySet(qs, 0, 2, resolve, 0);
        enc.copyBufferToBuffer(resolve, 0, readback, 0, 16);
      }, { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 });
      await readback.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(readback.getMappedRange().slice(0));
      readback.unmap();
      if (i) ms.push(Number(t[1] - t[0]) / 1e6);
    }
    return ms;
  } finally {
    qs.destroy(); resolve.destroy(); readback.destroy();
  }
}

/** Replayed steps timed by their own pass timestamps while `ahead` of them are queued (see QueuedSteps). */
export interface QueuedSteps { steps: number; ahead: number; passMs: Stats; gapMs: Stats; wallMs: number }

/**
 * `dispatches` replayed `steps` times as a decode runs them: each its own submit and pass (with timestamps), a
 * 4-byte readback mapped per step, `ahead` steps in flight before the oldest is awaited. Where a replayed step's
 * time goes beyond its lone pass (passMs): its pass running slower when queued, or the GPU idle between passes
 * (gapMs: next pass's start after this pass's end). The caller has timestamp-query.
 */
export async function queuedPassMs(gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], steps: number, ahead: number): Promise<QueuedSteps> {
  const device = gpu.device;
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 * steps });
  const probe = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const staging = Array.from({ length: ahead }, () => device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  try {
    await replay(gpu, dispatches, uploads); // warm
    const queued: Array<Promise<void>> = [];
    const t0 = now();
    for (let i = 0; i < steps; i++) {
      if (queued.length === ahead) await queued.shift();
      const buf = staging[i % ahead];
      const done = replay(gpu, dispatches, uploads, (enc) => enc.copyBufferToBuffer(probe, 0, buf, 0, 4),
        { querySet: qs, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 });
      queued.push(done.then(() => buf.mapAsync(GPUMapMode.READ)).then(() => buf.unmap()));
    }
    await Promise.all(queued);
    const wallMs = (now() - t0) / steps;
    const enc = device.createCommandEncoder();
    const read = readTimestamps(device, enc, qs, steps);
    device.queue.submit([enc.finish()]);
    const t = await read;
    const ms = (a: bigint, b: bigint) => Number(b - a) / 1e6;
    const pass = Array.from({ length: steps }, (_, i) => ms(t[2 * i], t[2 * i + 1]));
    const gap = Array.from({ length: steps - 1 }, (_, i) => ms(t[2 * i + 1], t[2 * i + 2]));
    return { steps, ahead, passMs: stats(pass), gapMs: stats(gap), wallMs };
  } finally {
    qs.destroy(); probe.destroy();
    for (const b of staging) b.destroy();
  }
}

function bandwidth(name: string, bytes: number, t: Timing, streamGBps: number | null): BandwidthFigure {
  const GBps = stats(t.wallMs.samples.map((ms) => bytes / ms / 1e6));
  const kernelGBps = t.gpuMs && t.gpuMs.median > 0 ? stats(t.gpuMs.samples.filter((ms) => ms > 0).map((ms) => bytes / ms / 1e6)) : null;
  return {
    name, bytes, ...t, GBps, kernelGBps,
    shareOfStream: streamGBps ? GBps.median / streamGBps : null,
    shareOfH200: (GBps.median * 1e9) / H200_BYTES_PER_S,
  };
}

/** A storage buffer outside the pool, or null when the device is out of memory for it. */
async function tryBuffer(gpu: Gpu, size: number, label: string): Promise<GPUBuffer | null> {
  gpu.device.pushErrorScope('out-of-memory');
  const b = gpu.device.createBuffer({ size, label, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  if (!(await gpu.device.popErrorScope())) return b;
  b.destroy();
  return null;
}

/**
 * Streaming read of min(streamBytes, binding limit) bytes of random data; halves the size while the device cannot
 * allocate it (software drivers cap their memory), down to 16 MiB.
 */
export async function streamRead(gpu: Gpu, s: Settings): Promise<BandwidthFigure> {
  let bytes = Math.floor(Math.min(s.streamBytes, gpu.maxBinding, gpu.maxBuffer) / 16) * 16;
  let buffer = await tryBuffer(gpu, bytes, 'stream.src');
  while (!buffer && bytes > 16 * 2 ** 20) {
    bytes = Math.floor(bytes / 32) * 16;
    buffer = await tryBuffer(gpu, bytes, 'stream.src');
  }
  if (!buffer) throw new Error(`[stream read] out of GPU memory for a ${bytes}-byte buffer`);
  const src = new Tensor(gpu, buffer, [bytes / 4], 'f32', 'stream.src', 0, false);
  const sink = Tensor.empty(gpu, [64 * 4], 'u32', 'stream.sink');
  const device = gpu.device;
  const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'stream.params' });
  try {
    fillRandom(src, { seed: s.seed, scale: 1 });
    const { dispatch, data } = streamDispatch(gpu, src, sink, params);
    device.queue.writeBuffer(params, 0, data);
    const t = await timeCalls(gpu, () => gpu.dispatch(dispatch), s);
    return bandwidth(`stream read ${(bytes / 2 ** 20).toFixed(0)} MiB`, bytes, t, null);
  } finally {
    await gpu.sync().catch(() => undefined);
    buffer.destroy();
    sink.dispose();
    params.destroy();
  }
}

const STREAM_WG = 256;
const streamPipelines = new WeakMap<GPUDevice, GPUComputePipeline>();

/**
 * One streaming read of all of `src` (STREAM_READ, grid-stride, ~8 vec4 a thread), its pipeline made once per
 * device, and the params block to upload into `params` before it runs.
 */
function streamDispatch(gpu: Gpu, src: Tensor, sink: Tensor, params: GPUBuffer): { dispatch: Dispatch; data: Uint8Array<ArrayBuffer> } {
  const device = gpu.device;
  let pipeline = streamPipelines.get(device);
  if (!pipeline) {
    const module = device.createShaderModule({ code: STREAM_READ, label: 'bench/wgsl.ts stream_read' });
    pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'stream_read', constants: { WG: STREAM_WG } }, label: 'stream_read' });
    streamPipelines.set(device, pipeline);
  }
  const n4 = src.byteLength / 16;
  const groups = Math.min(device.limits.maxComputeWorkgroupsPerDimension, Math.ceil(n4 / (STREAM_WG * 8)));
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0), label: 'stream_read',
    entries: [{ binding: 0, resource: { buffer: params } }, { binding: 1, resource: src.binding('stream') }, { binding: 2, resource: sink.binding('stream') }],
  });
  return {
    dispatch: { pipeline, bindGroup, key: 'stream_read', workgroups: [groups, 1, 1], label: 'stream_read' },
    data: new Uint8Array(new Uint32Array([n4, groups * STREAM_WG, 0, 0]).buffer),
  };
}

/**
 * The streaming read over each of `sizes` bytes as 200 dependent dispatches in one timestamped pass (passMs),
 * cycling over copies that together exceed the L2: per dispatch, launch, tail and barrier included.
 */
export async function streamFloor(gpu: Gpu, sizes: number[], s: Settings): Promise<StreamFloorPoint[]> {
  if (!gpu.timestamps) return [];
  const device = gpu.device;
  const sink = Tensor.empty(gpu, [64 * 4], 'u32', 'stream.sink');
  const out: StreamFloorPoint[] = [];
  try {
    for (const size of sizes) {
      const bytes = Math.floor(size / 16) * 16;
      const copies = Math.max(2, Math.min(64, Math.ceil(s.cacheBust / bytes)));
      const srcs = Array.from({ length: copies }, (_, i) => Tensor.empty(gpu, [bytes / 4], 'f32', `floor.src${i}`));
      const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'floor.params' });
      try {
        // Every copy has the same size, so one params block serves them all.
        const reads = srcs.map((src) => streamDispatch(gpu, src, sink, params));
        const data = reads[0].data;
        const dispatches = Array.from({ length: 200 }, (_, i) => reads[i % copies].dispatch);
        const ms = stats(await passMs(gpu, dispatches, [{ buffer: params, offset: 0, data }], 5)).median;
        const us = (ms * 1000) / dispatches.length;
        out.push({ bytes, us, GBps: bytes / us / 1e3 });
      } finally {
        for (const t of srcs) t.dispose();
        params.destroy();
      }
    }
  } finally {
    sink.dispose();
  }
  return out;
}

/** A bf16 [rows, cols] weight split like a checkpoint into bindable row chunks, filled on the GPU. */
function randomWeight(gpu: Gpu, rows: number, cols: number, seed: number, label: string): Tensor[] {
  const per = chunkRows(gpu, rows, cols * 2);
  const chunks: Tensor[] = [];
  for (let r = 0; r < rows; r += per) {
    const t = Tensor.empty(gpu, [Math.min(per, rows - r), cols], 'bf16', label);
    fillRandom(t, { seed: seed + r, scale: 1 / Math.sqrt(cols) });
    chunks.push(t);
  }
  return chunks;
}

function randomX(gpu: Gpu, rows: number, cols: number, seed: number): Tensor {
  const x = Tensor.empty(gpu, [rows, cols], 'f32', 'bench.x');
  fillRandom(x, { seed, scale: 1 });
  return x;
}

/**
 * x[1, cols] @ W[rows, cols]^T with bf16 W through the library's matrix-vector path: matmul with f32 x and output,
 * or (xDtype 'f16', devices with shader-f16) matmulF16 with f16 x and output. Bytes = the weights + x + out.
 * Cycles through enough copies of W to exceed `cacheBust` bytes, as the model's layers do.
 */
export async function gemv(gpu: Gpu, rows: number, cols: number, s: Settings, streamGBps: number | null, xDtype: 'f32' | 'f16' = 'f32'): Promise<BandwidthFigure> {
  const wBytes = rows * cols * 2;
  const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / wBytes)));
  const ws = Array.from({ length: copies }, (_, i) => randomWeight(gpu, rows, cols, s.seed * 7919 + i * 104729, `gemv.w${i}`));
  // fillRandom writes f32 / bf16 only; one row of f16 x is small enough to upload.
  const x = xDtype === 'f16'
    ? Tensor.from(gpu, Float32Array.from({ length: cols }, (_, k) => Math.sin(s.seed + k)), [1, cols], 'f16', 'bench.x16')
    : randomX(gpu, 1, cols, s.seed);
  const call = xDtype === 'f16' ? (w: Tensor[]) => matmulF16(x, w) : (w: Tensor[]) => matmul(x, w);
  let i = 0;
  try {
    const t = await timeCalls(gpu, () => call(ws[i++ % copies]).dispose(), s);
    const io = xDtype === 'f16' ? 2 : 4;
    const fig = bandwidth(`bf16 GEMV ${rows}x${cols}${xDtype === 'f16' ? ', f16 x' : ''}`, wBytes + (cols + rows) * io, t, streamGBps);
    return { ...fig, name: `${fig.name} (${copies} cop${copies > 1 ? 'ies' : 'y'})` };
  } finally {
    x.dispose();
    for (const w of ws) for (const c of w) c.dispose();
  }
}

/**
 * The decode layer's four projections with the model's fusions (norm into gqkv and gate_up, SwiGLU, residual into
 * o and down), one x row, over kernels and workgroup shapes: GPU time per call in one pass of 200 back-to-back
 * calls, barriers included, as a replayed step pays it (passCalls; wall time only without timestamps: recording a
 * call costs JavaScript more than the smaller kernels take). 'vec4' (the K loop) at 32..256 lanes x 2 or 4 rows;
 * 'upl' and 'upl-sg' (loads up front; the latter reduced on subgroups, where the adapter has them) at the lanes that
 * split a row's units evenly, x 2, 4 or 8 rows as its registers allow; 'wide' (sweepShapes).
 */
export async function gemvSweep(gpu: Gpu, hidden: number, inter: number, qkv: number, s: Settings): Promise<SweepPoint[]> {
  const layers = [
    { layer: 'gqkv (norm)', n: qkv, k: hidden, norm: true, swiglu: false, acc: false },
    { layer: 'o_proj (residual)', n: hidden, k: hidden, norm: false, swiglu: false, acc: true },
    { layer: 'gate_up (norm, swiglu)', n: 2 * inter, k: hidden, norm: true, swiglu: true, acc: false },
    // gate_up's rows without the SwiGLU pairing, and paired with the up half 8 rows further on: is the pairing
    // slower because gate row i and up row i sit an exact multiple of 4 MiB apart?
    { layer: 'gate_up rows (norm only)', n: 2 * inter, k: hidden, norm: true, swiglu: false, acc: false },
    { layer: 'gate_up + 16 rows (norm, swiglu)', n: 2 * inter + 16, k: hidden, norm: true, swiglu: true, acc: false },
    { layer: 'down_proj (residual)', n: hidden, k: inter, norm: false, swiglu: false, acc: true },
  ];
  const out: SweepPoint[] = [];
  for (const L of layers) {
    const wBytes = L.n * L.k * 2;
    const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / wBytes)));
    const ws = Array.from({ length: copies }, (_, i) => randomWeight(gpu, L.n, L.k, s.seed * 13 + i * 7, `sweep.w${i}`));
    const x = randomX(gpu, 1, L.k, s.seed + 5);
    const acc = randomX(gpu, 1, L.n, s.seed + 6);
    try {
      const shapes = sweepShapes(L.k, gpu.subgroups);
      const calls = shapes.map((gemv) => {
        let i = 0;
        return () => {
          const y = matmul(x, ws[i++ % copies], { norm: L.norm ? { eps: 1e-5 } : undefined, swiglu: L.swiglu, accumulate: L.acc ? acc : undefined, gemv, path: 'gemv' });
          if (!L.acc) y.dispose();
        };
      });
      // Wall time only without timestamps. Pass samples go round the shapes, so a drift of the GPU's clocks
      // during the sweep spreads over all of them instead of favouring the first.
      const wall: number[] = [];
      for (const c of gpu.timestamps ? [] : calls) wall.push((await timeCalls(gpu, c, { ...s, samples: Math.min(s.samples, 3) })).wallMs.median * 1000);
      const pass: number[][] = shapes.map(() => []);
      const captured = [];
      try {
        for (const c of gpu.timestamps ? calls : []) captured.push(await passCalls(gpu, c, 200));
        for (let round = 0; round < SWEEP_ROUNDS; round++) {
          for (const [j, c] of captured.entries()) pass[j].push(...(await c.us(1)));
        }
      } finally {
        for (const c of captured) c.release();
      }
      for (const [j, gemv] of shapes.entries()) {
        const passUs = pass[j].length ? stats(pass[j]).median : null;
        const wallUs = wall[j] ?? null;
        out.push({ layer: `${L.layer} ${L.n}x${L.k}`, kernel: gemv.kernel ?? 'vec4', wg: gemv.wg, rows: gemv.rows, groups: gemv.groups ?? null, bytes: wBytes, wallUs, passUs, GBps: wBytes / (passUs ?? wallUs!) / 1e3 });
      }
    } finally {
      x.dispose();
      acc.dispose();
      for (const w of ws) for (const c of w) c.dispose();
    }
  }
  return out;
}

/**
 * The sweep's matrix-vector kernels and shapes for rows of K bf16 weights ('upl-sg' where the adapter has
 * subgroups; 'wide' at 16..64 lanes a row x 2..8 row groups x 1..4 rows a group, as its registers allow).
 */
function sweepShapes(K: number, subgroups: boolean): GemvShape[] {
  const shapes: GemvShape[] = [];
  const upl: GemvKernel[] = subgroups ? ['upl', 'upl-sg'] : ['upl'];
  for (const wg of [32, 64, 128]) {
    for (const rows of [2, 4]) shapes.push({ kernel: 'vec4', wg, rows });
    for (const rows of [2, 4, 8]) {
      const f = uplFit(K, 'bf16', wg, rows);
      if (f.exact && f.fits) for (const kernel of upl) shapes.push({ kernel, wg, rows });
    }
  }
  for (const wg of [16, 32, 64]) {
    for (const groups of [2, 4, 8]) {
      for (const per of [1, 2, 4]) {
        const f = uplFit(K, 'bf16', wg, per);
        if (wg * groups <= 256 && groups * per >= 2 && f.exact && f.fits) shapes.push({ kernel: 'wide', wg, groups, rows: groups * per });
      }
    }
  }
  return shapes;
}

/** Decode attention with the gate, 32-key chunks (merge folded or separate) vs split keys, over cache lengths: wall time per call. */
export async function attentionSweep(gpu: Gpu, heads: number, dim: number, s: Settings): Promise<AttnPoint[]> {
  const out: AttnPoint[] = [];
  for (const keys of [256, 641, 1024, 2048, 4096]) {
    const q = randomX(gpu, heads, dim, s.seed + 7).reshape([heads, 1, dim]);
    const kv = Tensor.empty(gpu, [heads, keys, dim], 'bf16', 'attn.kv');
    fillRandom(kv, { seed: s.seed + 8, scale: 1 });
    const gate = randomX(gpu, 1, 4 * heads * dim, s.seed + 9);
    try {
      for (const path of ['one', 'one-separate', 'decode'] as const) {
        const side = { kind: 'full' as const, data: kv };
        const how = path === 'one-separate' ? { path: 'one' as const, merge: 'separate' as const } : { path, merge: 'fold' as const };
        const t = await timeCalls(gpu, () => sdpa(q, side, side, { kvLen: keys, offset: keys - 1, mask: { kind: 'none' }, scale: 1 / Math.sqrt(dim), round: 'bf16', gate, ...how }).dispose(), { ...s, samples: Math.min(s.samples, 3) });
        out.push({ heads, dim, keys, path, wallUs: t.wallMs.median * 1000 });
      }
    } finally {
      q.dispose(); kv.dispose(); gate.dispose();
    }
  }
  return out;
}

/**
 * x[m, k] @ W[n, k]^T, bf16 W: 2mnk FLOP per call, in f32 mode (f32 x, tiled) and in bf16 mode (x holding bf16
 * values, output rounded to bf16) through the tiled kernel and, where the adapter offers them, subgroup matrices
 * (tensor cores, path 'sgmat').
 */
export async function matmulFlops(gpu: Gpu, m: number, n: number, k: number, s: Settings): Promise<MatmulFigure[]> {
  const w = randomWeight(gpu, n, k, s.seed * 31, 'mm.w');
  const x = randomX(gpu, m, k, s.seed + 1);
  const xb = add(x, x, { round: 'bf16' });   // 2x is exact; the rounding makes every value a bf16 value
  const variants: Array<[string, () => Tensor]> = [
    ['f32', () => matmul(x, w)],
    ['bf16, tiled', () => matmul(xb, w, { round: 'bf16', path: 'tiled' })],
  ];
  if (sgmatUnavailable(gpu) === null) variants.push(['bf16, subgroup matrices', () => matmul(xb, w, { round: 'bf16', path: 'sgmat' })]);
  const out: MatmulFigure[] = [];
  try {
    for (const [mode, call] of variants) {
      out.push(flopsFigure(`matmul ${m}x${k} @ ${n}x${k}^T (bf16 weights; ${mode})`, 2 * m * n * k, await timeCalls(gpu, () => call().dispose(), s)));
    }
    return out;
  } finally {
    x.dispose();
    xb.dispose();
    for (const c of w) c.dispose();
  }
}

function flopsFigure(name: string, flops: number, t: Timing): MatmulFigure {
  return {
    name, flops, ...t,
    TFLOPs: stats(t.wallMs.samples.map((ms) => flops / ms / 1e9)),
    kernelTFLOPs: t.gpuMs && t.gpuMs.median > 0 ? stats(t.gpuMs.samples.filter((ms) => ms > 0).map((ms) => flops / ms / 1e9)) : null,
  };
}

/**
 * The tensor-core matmul (path 'sgmat') on the model layer's four prefill products at `m` rows, with the model's
 * fusions (swiglu into gate_up, the residual into o_proj and down), under each schedule (sgmat_schedule.ts: the
 * direct kernel with operand prefetch off / on and the staged kernel, x split-K 1, 2, 4), and gate_up once more as matmul then siluMul at the default schedule:
 * which schedule each shape should default to. GPU time by timestamps covers the whole call (x to f16, the
 * product, the output pass). Empty where the adapter has no subgroup matrices.
 */
export async function sgmatSchedules(gpu: Gpu, m: number, hidden: number, inter: number, qkv: number, s: Settings): Promise<MatmulFigure[]> {
  if (sgmatUnavailable(gpu) !== null) return [];
  const owned: Tensor[] = [];
  /** x [m, k] holding bf16 values (2x is exact; the rounding makes every value a bf16 value). */
  const bfX = (k: number, seed: number): Tensor => {
    const r = randomX(gpu, m, k, seed), b = add(r, r, { round: 'bf16' });
    r.dispose();
    owned.push(b);
    return b;
  };
  const xh = bfX(hidden, s.seed + 5), xi = bfX(inter, s.seed + 6);
  const acc = Tensor.empty(gpu, [m, hidden], 'f32', 'bench.residual');
  fillRandom(acc, { seed: s.seed + 7, scale: 1 });
  owned.push(acc);
  const shapes: Array<{ name: string; x: Tensor; n: number; k: number; opts: MatmulOptions; fusion: string }> = [
    { name: 'gqkv', x: xh, n: qkv, k: hidden, opts: {}, fusion: 'plain' },
    { name: 'o_proj', x: xh, n: hidden, k: hidden, opts: { accumulate: acc }, fusion: 'residual' },
    { name: 'gate_up', x: xh, n: 2 * inter, k: hidden, opts: { swiglu: true }, fusion: 'swiglu fused' },
    { name: 'down', x: xi, n: hidden, k: inter, opts: { accumulate: acc }, fusion: 'residual' },
  ];
  const quick = { ...s, samples: Math.min(s.samples, 3) };
  const out: MatmulFigure[] = [];
  try {
    for (const sh of shapes) {
      const w = randomWeight(gpu, sh.n, sh.k, s.seed * 37 + sh.n + sh.k, `sched.${sh.name}`);
      owned.push(...w);
      const call = (sgmat: Partial<SgmatSchedule>) => () => {
        const r = matmul(sh.x, w, { round: 'bf16', path: 'sgmat', sgmat, ...sh.opts });
        if (r !== sh.opts.accumulate) r.dispose();
      };
      const label = `sgmat ${sh.name} ${m}x${sh.k} @ ${sh.n}x${sh.k}^T`;
      const forms: Array<{ kernel: SgmatKernel; pipe: boolean }> = [{ kernel: 'direct', pipe: false }, { kernel: 'direct', pipe: true }];
      if (stagedUnavailable(gpu) === null) forms.push({ kernel: 'staged', pipe: false });
      for (const { kernel, pipe } of forms) for (const splitK of [1, 2, 4] as const) {
        const form = kernel === 'staged' ? 'staged' : `direct, pipe ${pipe ? 'on' : 'off'}`;
        const ms = await timeCalls(gpu, call({ kernel, pipe, splitK }), quick);
        out.push(flopsFigure(`${label} (${sh.fusion}; ${form}, split-K ${splitK})`, 2 * m * sh.n * sh.k, ms));
      }
      if (sh.opts.swiglu) {
        // The form before the fusion: the product into [m, 2I], then siluMul.
        const composed = () => {
          const gu = matmul(sh.x, w, { round: 'bf16', path: 'sgmat' });
          siluMul(gu, { round: 'bf16' }).dispose();
          gu.dispose();
        };
        out.push(flopsFigure(`${label} (matmul then siluMul; default schedule)`, 2 * m * sh.n * sh.k, await timeCalls(gpu, composed, quick)));
      }
    }
    return out;
  } finally {
    for (const t of owned) t.dispose();
  }
}

/** `chain` dependent adds of 256 floats (each reads the previous output): the per-dispatch price, recording and GPU. */
export async function dispatchCost(gpu: Gpu, s: Settings): Promise<DispatchFigure> {
  const b = randomX(gpu, 1, 256, s.seed + 2);
  const run = async (): Promise<{ enc: number; gpu: number }> => {
    let x = randomX(gpu, 1, 256, s.seed + 3);
    await gpu.sync();
    const t0 = now();
    for (let i = 0; i < s.dispatchChain; i++) {
      const y = add(x, b);
      x.dispose();
      x = y;
    }
    const t1 = now();
    await gpu.sync();
    const t2 = now();
    x.dispose();
    return { enc: ((t1 - t0) * 1000) / s.dispatchChain, gpu: ((t2 - t1) * 1000) / s.dispatchChain };
  };
  try {
    await run();
    const runs = [];
    for (let i = 0; i < s.samples; i++) runs.push(await run());
    return { chain: s.dispatchChain, encodeUs: stats(runs.map((r) => r.enc)), gpuUs: stats(runs.map((r) => r.gpu)) };
  } finally {
    b.dispose();
  }
}
