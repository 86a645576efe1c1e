// The GPU context: device, buffer pool, one command encoder per batch of work (a forward pass), uniform
// arena, optional per-dispatch GPU timestamps, readback. Kernels record into the open encoder; `flush()`
// submits it and turns anything WebGPU complained about into a typed error. Capturing a batch for replay is
// capture.ts; this file only routes dispatches, uploads and allocations to a capture while one runs.
import { DeviceState } from './registry.ts';
import { quietly } from './quiet.ts';
import { BindingSizeError, GpuValidationError, NotReplayableError, type HrmError } from '../errors.ts';
import { DeviceWatch, isSoftwareAdapter, requestDevice, toTypedError, type AdapterSummary, type DeviceOptions } from './device.ts';
import type { KernelOptions } from './device.ts';

export interface BufferView { buffer: GPUBuffer; offset: number; size: number }

const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;
/** A stable small id per buffer (creation order), for cache keys and deterministic pool order. */
export function bufferId(b: GPUBuffer): number {
  let id = bufferIds.get(b);
  if (id === undefined) bufferIds.set(b, (id = nextBufferId++));
  return id;
}

const UNIFORM_CHUNK = 64 * 1024;

/** GPU time of each labelled dispatch of one profiled batch, in milliseconds. */
export interface DispatchTiming { label: string; ms: number }

/** One pass of a timed batch (see `timelineNext`): GPU milliseconds from the batch's first pass's start. */
export interface PassSpan { startMs: number; endMs: number; dispatches: number }

/** One dispatch, encoded or captured. `key` names the bound buffer ranges (equal keys bind the same bytes). */
export interface Dispatch {
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  key: string;
  workgroups: [number, number, number];
  label: string;
}

/** Bytes for the queue to write into a buffer before a batch. */
export interface Upload { buffer: GPUBuffer; offset: number; data: Uint8Array<ArrayBuffer> }

/** Where dispatches, uploads and allocations go while a capture runs (capture.ts). */
export interface Recorder { dispatches: Dispatch[]; uploads: Upload[]; allocated: Set<GPUBuffer> }

/**
 * Checks every new Gpu runs before `create` returns it: a kernel family verifying, on this driver, a feature the
 * adapter offers (matmul_sgmat.ts registers one for subgroup matrices), since drivers get experimental features
 * wrong. Registered when the kernel's module loads.
 */
const deviceChecks: Array<(gpu: Gpu) => Promise<void>> = [];
export function onNewDevice(check: (gpu: Gpu) => Promise<void>): void {
  deviceChecks.push(check);
}

/**
 * Dispatches after which an open batch is submitted while recording goes on (Gpu.dispatch): the first part small so
 * that the GPU starts at once, each next part `growth` times the last (rounded up) up to EARLY_SUBMIT.max. The GPU
 * runs part n while JavaScript records part n + 1, so it idles unless recording a part is no slower than running
 * one `growth` times shorter. A prefill at 512 tokens on the H200 records a dispatch in ~29 us and runs one in
 * ~35: parts doubling left the GPU idle 9.3 ms before the fifth part (20261202-174625Z's timeline); 1.25 keeps
 * recording within the GPU's time at that ratio. (A first part of 256 had left it idle ~5 ms at the start.)
 */
const EARLY_SUBMIT = { first: 32, growth: 1.25, max: 256 };

export class Gpu {
  readonly watch: DeviceWatch;
  readonly f16: boolean;
  readonly subgroups: boolean;
  readonly timestamps: boolean;
  readonly maxBinding: number;
  readonly maxBuffer: number;
  readonly storageAlign: number;
  /** A CPU implementation of WebGPU (SwiftShader, llvmpipe/lavapipe, WARP): kernels pick barrier-free variants. */
  readonly cpu: boolean;
  /** Kernels' cached state for this device (registry.ts). */
  readonly state = new DeviceState();
  private readonly pool = new Map<number, GPUBuffer[]>();
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private afterSubmit: Array<() => void> = [];
  private uniformChunks: Array<{ buffer: GPUBuffer; data: Uint8Array<ArrayBuffer>; used: number }> = [];
  private uniformIndex = 0;
  private profile: { querySet: GPUQuerySet; labels: string[]; capacity: number } | null = null;
  private capturing: Recorder | null = null;
  /** Errors of ops' own error scopes (checkLater), reported at the next settle. */
  private opErrors: Promise<HrmError | null>[] = [];
  /** Timings of the last profiled flush (see `profileNext`). */
  lastTimings: DispatchTiming[] = [];
  private timeline: { querySet: GPUQuerySet; passes: number[]; capacity: number } | null = null;
  /** The passes of the last timed batch (see `timelineNext`), once its flush has resolved them. */
  lastTimeline: PassSpan[] = [];
  /** Dispatches recorded since creation: a cheap counter for benchmarks. */
  dispatchCount = 0;
  /** Dispatches in the open batch, the count that submits its next part early, and the error scopes of those parts (see dispatch). */
  private batchDispatches = 0;
  private nextPart = EARLY_SUBMIT.first;
  private early: Promise<GPUError | null>[] = [];

  private constructor(
    readonly device: GPUDevice, readonly adapter: GPUAdapter, readonly summary: AdapterSummary, bindingLimit?: number,
    /** DeviceOptions.kernels as given: src/kernels/policy.ts checks them and plans the kernels' paths with them. */
    readonly kernelOptions: KernelOptions = {}) {
    this.watch = new DeviceWatch(device);
    this.f16 = device.features.has('shader-f16');
    this.subgroups = device.features.has('subgroups');
    this.timestamps = device.features.has('timestamp-query');
    this.maxBinding = Math.min(device.limits.maxStorageBufferBindingSize, bindingLimit ?? Infinity);
    this.maxBuffer = device.limits.maxBufferSize;
    this.storageAlign = device.limits.minStorageBufferOffsetAlignment;
    this.cpu = isSoftwareAdapter(summary);
  }

  /** Open the adapter of this runtime (browser, Deno, Node/Dawn) and wrap its device. */
  static async create(opts: DeviceOptions = {}): Promise<Gpu> {
    const { device, adapter, summary } = await requestDevice(opts);
    const gpu = new Gpu(device, adapter, summary, opts.bindingLimit, opts.kernels);
    for (const check of deviceChecks) await check(gpu);
    return gpu;
  }

  /** A storage buffer of exactly `bytes` bytes, from the pool when one is free. */
  allocate(bytes: number, label: string): GPUBuffer {
    this.watch.check(label);
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (size > this.maxBuffer) {
      throw new BindingSizeError(label, `needs a buffer of ${size} bytes, but this adapter's maxBufferSize is ${this.maxBuffer}`);
    }
    const free = this.pool.get(size);
    const b = free?.length ? free.pop()! : this.createStorage(size, label);
    this.capturing?.allocated.add(b);
    return b;
  }

  /**
   * Take buffers out of the pool for good (a captured step keeps binding them); `release` gives them back.
   * Buffers not in the pool (held by live tensors) are left alone.
   */
  claim(buffers: Iterable<GPUBuffer>): GPUBuffer[] {
    const taken: GPUBuffer[] = [];
    for (const b of buffers) {
      const list = this.pool.get(b.size);
      const i = list?.indexOf(b) ?? -1;
      if (i >= 0) { list!.splice(i, 1); taken.push(b); }
    }
    return taken;
  }

  private createStorage(size: number, label: string): GPUBuffer {
    const b = this.device.createBuffer({
      size, label,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    bufferId(b);
    return b;
  }

  /**
   * Give a buffer back to the pool; commands already recorded keep reading it in order. Free lists are kept
   * sorted so `allocate` hands out the oldest free buffer: the same sequence of allocations then gets the same
   * buffers every decode step, which keeps cached bind groups valid.
   */
  release(buffer: GPUBuffer): void {
    const list = this.pool.get(buffer.size) ?? [];
    const id = bufferId(buffer);
    let i = list.length;
    while (i > 0 && bufferId(list[i - 1]) < id) i--;
    list.splice(i, 0, buffer);
    this.pool.set(buffer.size, list);
  }

  /** Destroy pooled buffers (frees GPU memory held for reuse). */
  trimPool(): void {
    for (const list of this.pool.values()) for (const b of list) b.destroy();
    this.pool.clear();
  }

  /** Write bytes into a buffer, ordered after every command recorded so far. */
  write(buffer: GPUBuffer, offset: number, data: ArrayBufferView): void {
    this.watch.check(buffer.label);
    const bytes = new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
    this.capturing?.uploads.push({ buffer, offset, data: bytes.slice() });
    if (!this.encoder) {
      this.device.queue.writeBuffer(buffer, offset, bytes);
      return;
    }
    // Pending commands may still read the old contents: stage and copy inside the encoder instead.
    const size = Math.ceil(bytes.byteLength / 4) * 4;
    const staging = this.device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true, label: 'staging' });
    new Uint8Array(staging.getMappedRange()).set(bytes);
    staging.unmap();
    this.endPass();
    this.encoder.copyBufferToBuffer(staging, 0, buffer, offset, size);
    this.afterSubmit.push(() => staging.destroy());
  }

  /** Copy between buffers inside the open encoder. */
  copy(src: BufferView, dst: BufferView): void {
    if (this.capturing) throw new NotReplayableError('capture', 'a buffer copy cannot be captured (only dispatches replay)');
    this.endPass();
    this.commandEncoder().copyBufferToBuffer(src.buffer, src.offset, dst.buffer, dst.offset, src.size);
  }

  /** Profile the next flush: every dispatch gets its own pass with timestamps (slower; for benchmarks). */
  profileNext(capacity = 2048): void {
    if (!this.timestamps) throw new GpuValidationError('profile', 'this adapter does not offer timestamp-query');
    this.endPass();
    this.profile = { querySet: this.device.createQuerySet({ type: 'timestamp', count: capacity * 2 }), labels: [], capacity };
  }

  /**
   * Time the next batch pass by pass (for benchmarks): each pass, so each part a long batch is submitted in while
   * it is recorded, gets timestamps at its start and end, and the flush that ends the batch puts them in
   * `lastTimeline`. Unlike profileNext the batch runs as it would untimed; the gaps between its passes are where
   * the GPU waited for JavaScript.
   */
  timelineNext(capacity = 256): void {
    if (!this.timestamps) throw new GpuValidationError('timeline', 'this adapter does not offer timestamp-query');
    this.endPass();
    this.timeline = { querySet: this.device.createQuerySet({ type: 'timestamp', count: capacity * 2 }), passes: [], capacity };
  }

  /** Record one dispatch into the open batch, or into the capture in progress. */
  dispatch(d: Dispatch): void {
    if (this.capturing) {
      this.capturing.dispatches.push(d);
      return;
    }
    const pass = this.computePass(d.label);
    if (this.timeline?.passes.length) this.timeline.passes[this.timeline.passes.length - 1]++;
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
    this.dispatchCount++;
    // A long batch (a prefill) is submitted in parts as it is recorded, so the GPU runs the first layers while
    // JavaScript records the rest; its errors are reported at the next settle. Not while profiling (one pass set).
    if (++this.batchDispatches >= this.nextPart && !this.profile) this.early.push(...this.submit(true));
  }

  /** No batch open, nothing being captured or profiled: what capture and replay need. */
  get idle(): boolean {
    return !this.encoder && !this.capturing && !this.profile;
  }

  /** Route dispatches, uploads and allocations to `r` instead of the batch (null: back to the batch). */
  record(r: Recorder | null): void {
    this.capturing = r;
  }

  /**
   * The uniform blocks staged since the last submit; the arena starts over. A capture keeps them (`copy`); a
   * submit writes them to the queue at once (writeBuffer copies), so views of the arena serve.
   */
  takeUniforms(copy = true): Upload[] {
    const out: Upload[] = [];
    for (let i = 0; i <= this.uniformIndex && i < this.uniformChunks.length; i++) {
      const ch = this.uniformChunks[i];
      if (ch.used) out.push({ buffer: ch.buffer, offset: 0, data: copy ? ch.data.slice(0, ch.used) : ch.data.subarray(0, ch.used) });
      ch.used = 0;
    }
    this.uniformIndex = 0;
    return out;
  }

  /** Run `encode` (queue writes and submits of its own) inside error scopes; rejects with WebGPU's first error. */
  scoped(op: string, encode: () => void): Promise<void> {
    this.watch.check(op);
    this.device.pushErrorScope('internal');
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    let errors: Promise<GPUError | null>[];
    try {
      encode();
    } finally {
      errors = [this.device.popErrorScope(), this.device.popErrorScope(), this.device.popErrorScope()];
    }
    return this.settle(op, errors);
  }

  /** The compute pass dispatches go into (opened on demand; a profiled batch opens one per dispatch). */
  private computePass(label: string): GPUComputePassEncoder {
    this.watch.check(label);
    const p = this.profile;
    if (p && p.labels.length < p.capacity) {
      this.endPass();
      const i = p.labels.length;
      p.labels.push(label);
      this.pass = this.commandEncoder().beginComputePass({
        label, timestampWrites: { querySet: p.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
      });
      return this.pass;
    }
    const t = this.timeline;
    if (!this.pass && t && t.passes.length < t.capacity) {
      const i = t.passes.length;
      t.passes.push(0);
      this.pass = this.commandEncoder().beginComputePass({
        label: 'batch', timestampWrites: { querySet: t.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
      });
    }
    this.pass ??= this.commandEncoder().beginComputePass({ label: 'batch' });
    return this.pass;
  }

  /** Stage a uniform block; returns where it will live once the batch is submitted. */
  uniform(bytes: Uint8Array): BufferView {
    const align = this.device.limits.minUniformBufferOffsetAlignment;
    let chunk = this.uniformChunks[this.uniformIndex];
    if (chunk && chunk.used + bytes.byteLength > UNIFORM_CHUNK) chunk = this.uniformChunks[++this.uniformIndex];
    if (!chunk) {
      chunk = {
        buffer: this.device.createBuffer({ size: UNIFORM_CHUNK, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'uniforms' }),
        data: new Uint8Array(new ArrayBuffer(UNIFORM_CHUNK)), used: 0,
      };
      this.uniformChunks[this.uniformIndex] = chunk;
    }
    const offset = chunk.used;
    chunk.data.set(bytes, offset);
    chunk.used = Math.ceil((offset + bytes.byteLength) / align) * align;
    return { buffer: chunk.buffer, offset, size: bytes.byteLength };
  }

  /** Submit everything recorded and report any WebGPU error raised while recording it. */
  async flush(op = 'flush'): Promise<void> {
    const pending = this.submit();
    await this.settle(op, pending);
  }

  /**
   * Submit without waiting; returns the error-scope promises for `settle`. `part`: an early part of a batch still
   * being recorded (the next part may be longer: EARLY_SUBMIT); otherwise the batch ends and the next starts small again.
   */
  private submit(part = false): Promise<GPUError | null>[] {
    this.watch.check('submit');
    this.nextPart = part ? Math.min(Math.ceil(EARLY_SUBMIT.growth * this.nextPart), EARLY_SUBMIT.max) : EARLY_SUBMIT.first;
    if (!this.encoder) return [];
    this.endPass();
    // Timestamps resolved at the end of this batch; the flush that settles it waits for them too.
    const timed: Promise<void>[] = [];
    if (this.profile) timed.push(this.resolveTimings(this.encoder, this.profile).then((t) => { this.lastTimings = t; }));
    if (!part && this.timeline) {
      timed.push(this.resolveTimeline(this.encoder, this.timeline).then((p) => { this.lastTimeline = p; }));
      this.timeline = null;
    }
    for (const u of this.takeUniforms(false)) this.device.queue.writeBuffer(u.buffer, 0, u.data);
    this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    this.batchDispatches = 0;
    for (const f of this.afterSubmit.splice(0)) f();
    const errors = [this.device.popErrorScope(), this.device.popErrorScope(), this.device.popErrorScope()];
    this.profile = null;
    return [...errors, ...timed.map((x) => x.then(() => null))];
  }

  /**
   * Report `error` (an error scope around one op's own WebGPU calls, e.g. creating its pipeline) at the next
   * settle, named after `op` rather than the batch that used it.
   */
  checkLater(op: string, error: Promise<GPUError | null>): void {
    this.opErrors.push(error.then((e) => (e ? toTypedError(op, e) : null)));
  }

  private async settle(op: string, pending: Promise<GPUError | null>[]): Promise<void> {
    // This batch's pipeline checks are taken before awaiting: one a later batch adds meanwhile is that batch's.
    const ops = this.opErrors.splice(0);
    const errors = await quietly(Promise.all([...this.early.splice(0), ...pending]));
    const own = (await quietly(Promise.all(ops))).find((e) => e);
    this.watch.check(op);
    if (own) throw own;
    const first = errors.find((e) => e);
    if (first) throw toTypedError(op, first);
  }

  /** Read bytes back to the CPU; flushes the batch first. */
  async read(src: BufferView, op = 'read'): Promise<ArrayBuffer> {
    const size = Math.ceil(src.size / 4) * 4;
    const staging = this.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: `${op}:readback` });
    this.endPass();
    this.commandEncoder().copyBufferToBuffer(src.buffer, src.offset, staging, 0, size);
    const pending = this.submit();
    try {
      await this.settle(op, pending);
      await quietly(staging.mapAsync(GPUMapMode.READ));
      return staging.getMappedRange().slice(0, src.size);
    } finally {
      staging.destroy();
    }
  }

  /** Wait until the GPU has finished all submitted work. */
  async sync(): Promise<void> {
    await this.flush('sync');
    await quietly(this.device.queue.onSubmittedWorkDone());
  }

  destroy(): void {
    this.trimPool();
    this.device.destroy();
  }

  private commandEncoder(): GPUCommandEncoder {
    if (!this.encoder) {
      this.device.pushErrorScope('internal');
      this.device.pushErrorScope('out-of-memory');
      this.device.pushErrorScope('validation');
      this.encoder = this.device.createCommandEncoder({ label: 'batch' });
    }
    return this.encoder;
  }

  private endPass(): void {
    this.pass?.end();
    this.pass = null;
  }

  private async resolveTimings(encoder: GPUCommandEncoder, p: NonNullable<Gpu['profile']>): Promise<DispatchTiming[]> {
    const t = await readTimestamps(this.device, encoder, p.querySet, p.labels.length).finally(() => p.querySet.destroy());
    return p.labels.map((label, i) => ({ label, ms: Number(t[2 * i + 1] - t[2 * i]) / 1e6 }));
  }

  private async resolveTimeline(encoder: GPUCommandEncoder, l: NonNullable<Gpu['timeline']>): Promise<PassSpan[]> {
    const t = await readTimestamps(this.device, encoder, l.querySet, l.passes.length).finally(() => l.querySet.destroy());
    const at = (i: number) => Number(t[i] - t[0]) / 1e6;
    return l.passes.map((dispatches, i) => ({ startMs: at(2 * i), endMs: at(2 * i + 1), dispatches }));
  }
}

/**
 * The first `pairs` begin / end timestamp pairs of `querySet` (ns): the resolve and the copy are encoded into
 * `encoder` at once, so call this before finishing and submitting it; the copy is mapped once that has run.
 */
export async function readTimestamps(device: GPUDevice, encoder: GPUCommandEncoder, querySet: GPUQuerySet, pairs: number): Promise<BigUint64Array> {
  if (!pairs) return new BigUint64Array(0);
  const resolve = device.createBuffer({ size: 16 * pairs, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readback = device.createBuffer({ size: 16 * pairs, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    encoder.resolveQuerySet(querySet, 0, 2 * pairs, resolve, 0);
    encoder.copyBufferToBuffer(resolve, 0, readback, 0, 16 * pairs);
    await new Promise((r) => setTimeout(r, 0));   // the caller's submit first: mapping a buffer it copies into fails
    await readback.mapAsync(GPUMapMode.READ);
    return new BigUint64Array(readback.getMappedRange().slice(0));
  } finally {
    readback.destroy(); resolve.destroy();
  }
}
