// How the bench times GPU work. A "call" is recorded `batch` times into one command buffer, then submitted and
// awaited: wall time per call = (submit -> GPU done) / batch, recording excluded, so the fixed submit/readback
// latency is spread over >= 25 ms of work. Where the adapter has timestamp queries, calls captured back to back are
// timed as one compute pass between two timestamps (passCalls), the GPU time a call takes with its barriers as the
// model pays them. Calls that cannot be captured (a buffer copy among them) fall back to a profiled batch, one pass
// and two timestamps a dispatch: a pass's first timestamp can be written before the dispatch ahead of it has
// finished (the barrier between them comes inside the pass), which on an H200 stretched a 1 GiB read from 0.24 to
// 0.56 ms (issue 30), so those figures are marked. A captured sequence can also be timed as one compute pass between
// two timestamps (passMs), alone or replayed as a decode queues its steps (queuedPassMs).
import { NotReplayableError } from '../../src/errors.ts';
import { readTimestamps, type Dispatch, type Gpu, type Upload } from '../../src/gpu/gpu.ts';
import { capture, replay } from '../../src/gpu/capture.ts';
import { now, stats, type Stats } from './stats.ts';
/** Dawn quantizes timestamps to 2^16 ns unless told not to: timings that are all multiples of it are suspect. */
const QUANTUM_MS = 65536 / 1e6;

/** True when every one of several timestamped durations falls on Dawn's 65.5 us grid. */
export function onQuantumGrid(ms: readonly number[]): boolean {
  return ms.length > 1 && ms.every((x) => Math.abs(x / QUANTUM_MS - Math.round(x / QUANTUM_MS)) < 1e-6);
}

export interface Timing {
  /** Kernel labels dispatched by one call. */
  labels: string[];
  dispatchesPerCall: number;
  batch: number;
  /** Milliseconds per call: wall clock over a batch (submit to done). */
  wallMs: Stats;
  /** Milliseconds per call from GPU timestamps (null without timestamp-query). */
  gpuMs: Stats | null;
  /** How gpuMs was timed: calls back to back in one pass, or a pass a dispatch (calls that cannot be captured). */
  gpuMethod: 'one pass' | 'pass per dispatch' | null;
  /** The timestamps were all multiples of Dawn's 65.5 us quantum (per-dispatch values are then unreliable). */
  quantized: boolean;
}

/** Replayed steps timed by their own pass timestamps while `ahead` of them are queued (see queuedPassMs). */
export interface QueuedSteps { steps: number; ahead: number; passMs: Stats; gapMs: Stats; wallMs: number }

/**
 * A captured sequence to time as one pass: GPU us per call (`samples` passes), its dispatches' labels (each once, in
 * order) and its buffers' release.
 */
export interface PassTimer { us: (samples: number) => Promise<number[]>; labels: string[]; release: () => void }

/** Time `record` (which records one call into the open batch) as described at the top; `samples` timed batches. */
export async function timeCalls(gpu: Gpu, record: () => void, s: { samples: number }): Promise<Timing> {
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
  let gpuMethod: Timing['gpuMethod'] = null;
  if (gpu.timestamps) {
    // Enough calls for ~25 ms of GPU work (the wall estimate), within one query-free pass of at most 4096 dispatches.
    const calls = Math.max(1, Math.min(batch, Math.floor(4096 / dispatchesPerCall)));
    const pass = await passCalls(gpu, record, calls).catch((e: unknown) => {
      if (e instanceof NotReplayableError) return null;
      throw e;
    });
    if (pass) {
      try {
        const perCall = (await pass.us(s.samples)).map((us) => us / 1000);
        gpuMs = stats(perCall);
        labels = pass.labels;
        quantized = onQuantumGrid(perCall.map((ms) => ms * calls));
        gpuMethod = 'one pass';
      } finally {
        pass.release();
      }
    } else {
      ({ gpuMs, labels, quantized } = await profiledCalls(gpu, record, dispatchesPerCall, batch));
      gpuMethod = 'pass per dispatch';
    }
  }
  return { labels, dispatchesPerCall, batch, wallMs: stats(wall), gpuMs, gpuMethod, quantized };
}

/** GPU ms per call from a profiled batch (a pass and two timestamps a dispatch), its labels and Dawn's quantum. */
async function profiledCalls(gpu: Gpu, record: () => void, dispatchesPerCall: number, batch: number) {
  const calls = Math.max(1, Math.min(batch, Math.floor(2048 / dispatchesPerCall)));
  gpu.profileNext(calls * dispatchesPerCall);
  for (let b = 0; b < calls; b++) record();
  await gpu.sync();
  const t = gpu.lastTimings;
  const per: number[] = [];
  for (let c = 0; c + dispatchesPerCall <= t.length; c += dispatchesPerCall) {
    per.push(t.slice(c, c + dispatchesPerCall).reduce((a, x) => a + x.ms, 0));
  }
  return {
    gpuMs: per.length ? stats(per) : null,
    labels: [...new Set(t.slice(0, dispatchesPerCall).map((x) => x.label))],
    quantized: onQuantumGrid(t.map((x) => x.ms)),
  };
}

/**
 * `calls` calls of `record` captured once, to be timed as one compute pass (passMs) as often as wanted: GPU
 * microseconds per call, dependent dispatches back to back with their barriers and nothing of JavaScript's
 * recording (which costs more a dispatch than the smaller kernels take, hiding them behind wall-clock timing).
 * `release` gives the capture's buffers back. The caller has timestamp-query.
 */
export async function passCalls(gpu: Gpu, record: () => void, calls: number): Promise<PassTimer> {
  await gpu.sync();
  const cap = capture(gpu, () => { for (let i = 0; i < calls; i++) record(); });
  const claimed = gpu.claim(cap.allocated);
  const uploads = [...cap.uniforms, ...cap.uploads];
  return {
    us: async (samples) => (await passMs(gpu, cap.dispatches, uploads, samples)).map((m) => (m * 1000) / calls),
    labels: [...new Set(cap.dispatches.map((d) => d.label))],
    release: () => { for (const b of claimed) gpu.release(b); },
  };
}

/**
 * Each of `calls` (one call each) timed against the others: with timestamps, GPU us per call in one pass of 200
 * back-to-back calls (passCalls), the samples going round the calls `rounds` times so that a drift of the GPU's
 * clocks spreads over all of them instead of favouring the first (medians); without, wall us per call (timeCalls).
 */
export async function timeAround(
  gpu: Gpu, calls: ReadonlyArray<() => void>, s: { samples: number }, rounds: number,
): Promise<Array<{ passUs: number | null; wallUs: number | null }>> {
  const wall: number[] = [];
  for (const c of gpu.timestamps ? [] : calls) {
    wall.push((await timeCalls(gpu, c, { samples: Math.min(s.samples, 3) })).wallMs.median * 1000);
  }
  const pass: number[][] = calls.map(() => []);
  const captured: PassTimer[] = [];
  try {
    for (const c of gpu.timestamps ? calls : []) captured.push(await passCalls(gpu, c, 200));
    for (let round = 0; round < rounds; round++) {
      for (const [j, c] of captured.entries()) pass[j].push(...(await c.us(1)));
    }
  } finally {
    for (const c of captured) c.release();
  }
  return calls.map((_, j) => ({ passUs: pass[j].length ? stats(pass[j]).median : null, wallUs: wall[j] ?? null }));
}

/**
 * GPU milliseconds of `dispatches` encoded as one compute pass (after `uploads`), between the pass's two
 * timestamps, `samples` times after a warm-up. The caller has timestamp-query.
 */
export async function passMs(
  gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], samples: number,
): Promise<number[]> {
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

/**
 * Per dispatch, the GPU milliseconds from the timestamp before it to the one after it, all inside one compute pass
 * (Gpu.inPassTimestamps: Chrome; replay's `stamps`): its run and its wait on the one before, as the step pays them,
 * with no pass of its own. Medians of `samples` replays after a warm-up; their sum is the pass's time.
 */
export async function inPassMs(
  gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], samples: number,
): Promise<number[]> {
  const device = gpu.device;
  const n = dispatches.length + 1;
  const qs = device.createQuerySet({ type: 'timestamp', count: n });
  const resolve = device.createBuffer({ size: 8 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readback = device.createBuffer({ size: 8 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const per: number[][] = dispatches.map(() => []);
    for (let s = 0; s <= samples; s++) {
      await replay(gpu, dispatches, uploads, (enc) => {
        enc.resolveQuerySet(qs, 0, n, resolve, 0);
        enc.copyBufferToBuffer(resolve, 0, readback, 0, 8 * n);
      }, undefined, qs);
      await readback.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(readback.getMappedRange().slice(0));
      readback.unmap();
      if (s) for (let i = 0; i < dispatches.length; i++) per[i].push(Number(t[i + 1] - t[i]) / 1e6);
    }
    return per.map((v) => stats(v).median);
  } finally {
    qs.destroy(); resolve.destroy(); readback.destroy();
  }
}

/**
 * `dispatches` replayed `steps` times as a decode runs them: each its own submit and pass (with timestamps), a
 * 4-byte readback mapped per step, `ahead` steps in flight before the oldest is awaited. Where a replayed step's
 * time goes beyond its lone pass (passMs): its pass running slower when queued, or the GPU idle between passes
 * (gapMs: next pass's start after this pass's end). The caller has timestamp-query.
 */
export async function queuedPassMs(
  gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], steps: number, ahead: number,
): Promise<QueuedSteps> {
  const device = gpu.device;
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 * steps });
  const probe = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const staging = Array.from({ length: ahead },
    () => device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
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
