// The device's usable bandwidth as WebGPU sees it: a trivial kernel that loads every 16-byte word of a large
// buffer once. Every decode figure is held against it (the ceiling), and the streaming floor (one dispatch of a
// projection's size, back to back) is what the matrix-vector products are held to. The WGSL is bench-only (kept out
// of src/kernels/: nothing in the library uses it), a string so that every runner and the bundle load it alike.
import type { Dispatch, Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { fillRandom } from '../../testkit/init/random.ts';
import type { Settings } from '../harness/settings.ts';
import { passMs, timeCalls } from '../timing/calls.ts';
import { stats } from '../timing/stats.ts';
import { bandwidth, type BandwidthFigure } from './figures.ts';

/** A streaming read of `bytes` (a decode projection's weight size), dispatched back to back in one pass. */
export interface StreamFloorPoint { bytes: number; us: number; GBps: number }

/**
 * Streaming read: the bandwidth ceiling of this device, measured with the same loads the GEMV uses (vec4<u32>).
 * Every vec4 of `src` is loaded once, grid-stride (consecutive lanes read consecutive 16-byte words), XOR-folded,
 * and stored only when the fold equals a value random data practically never produces, so the loads cannot be
 * optimised away while the stores cost nothing.
 */
export const STREAM_READ = /* wgsl */ `
struct Params { n4: u32, stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sink: array<vec4<u32>>;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn stream_read(@builtin(global_invocation_id) gid: vec3<u32>) {
  var acc = vec4<u32>(0u);
  for (var i = gid.x; i < p.n4; i += p.stride) {
    acc ^= src[i];
  }
  if (acc.x == 0x12345678u && acc.y == 0x9abcdef0u) {
    sink[gid.x & 63u] = acc;
  }
}
`;

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
  const params = device.createBuffer({
    size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'stream.params',
  });
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
function streamDispatch(
  gpu: Gpu, src: Tensor, sink: Tensor, params: GPUBuffer,
): { dispatch: Dispatch; data: Uint8Array<ArrayBuffer> } {
  const device = gpu.device;
  let pipeline = streamPipelines.get(device);
  if (!pipeline) {
    const module = device.createShaderModule({ code: STREAM_READ, label: 'bench/suites/stream.ts stream_read' });
    pipeline = device.createComputePipeline({
      layout: 'auto', label: 'stream_read',
      compute: { module, entryPoint: 'stream_read', constants: { WG: STREAM_WG } },
    });
    streamPipelines.set(device, pipeline);
  }
  const n4 = src.byteLength / 16;
  const groups = Math.min(device.limits.maxComputeWorkgroupsPerDimension, Math.ceil(n4 / (STREAM_WG * 8)));
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0), label: 'stream_read',
    entries: [{ binding: 0, resource: { buffer: params } }, { binding: 1, resource: src.binding('stream') },
      { binding: 2, resource: sink.binding('stream') }],
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
      const params = device.createBuffer({
        size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'floor.params',
      });
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
