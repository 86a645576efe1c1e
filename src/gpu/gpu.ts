// The GPU context: one device and the parts that share it, each a job of its own: the buffer pool (pool.ts), the
// uniform arena (uniforms.ts), the open batch that kernels record into and that submits, settles and routes to a
// capture (batch.ts), and the optional GPU timestamps (profiler.ts). Capturing a batch for replay is capture.ts.
// This class composes them behind the one API kernels, the model, bench and tests call. It has no factory of its
// own: `Gpu.create` (src/kernels/gpu.ts) opens the device with `openDevice` and prepares it for the kernels before
// any of them runs (src/kernels/plan/prepare.ts), so that no module registers anything when it is imported.
import { DeviceState } from './registry.ts';
import { Batch, type Recorder } from './batch.ts';
import { BufferPool, type BufferView } from './pool.ts';
import { Profiler, type DispatchTiming, type PassSpan } from './profiler.ts';
import { UniformArena } from './uniforms.ts';
import type { Dispatch, Upload } from './batch.ts';
import { isSoftwareAdapter, requestDevice, type AdapterSummary, type DeviceOptions,
  type KernelOptions } from './device.ts';
import { stampsInPasses } from './features.ts';
import { DeviceWatch } from './watch.ts';

export { bufferId, type BufferView } from './pool.ts';
export { readTimestamps, type DispatchTiming, type PassSpan } from './profiler.ts';
export type { Dispatch, Recorder, Upload } from './batch.ts';

export class Gpu {
  /** @internal The device's loss and uncaptured errors (device.ts). */
  readonly watch: DeviceWatch;
  readonly f16: boolean;
  readonly subgroups: boolean;
  readonly timestamps: boolean;
  /** Timestamps can be written between the dispatches of one pass (replay's `stamps`): Chrome, not npm `webgpu`. */
  readonly inPassTimestamps: boolean;
  readonly maxBinding: number;
  readonly maxBuffer: number;
  readonly storageAlign: number;
  /** A CPU implementation of WebGPU (SwiftShader, llvmpipe/lavapipe, WARP): kernels pick barrier-free variants. */
  readonly cpu: boolean;
  /** @internal Kernels' cached state for this device (registry.ts). */
  readonly state = new DeviceState();
  private readonly pool: BufferPool;
  private readonly uniforms: UniformArena;
  private readonly profiler: Profiler;
  private readonly batch: Batch;
  /** DeviceOptions.kernels as given: src/kernels/plan/options.ts checks them and plans the kernels' paths with them. */
  readonly kernelOptions: KernelOptions;
  /** DeviceOptions.warn: where the kernels report a fast path they gave up at run time. */
  readonly warn: (message: string) => void;

  protected constructor(readonly device: GPUDevice, readonly adapter: GPUAdapter, readonly summary: AdapterSummary,
    opts: DeviceOptions) {
    this.watch = new DeviceWatch(device);
    this.f16 = device.features.has('shader-f16');
    this.subgroups = device.features.has('subgroups');
    this.timestamps = device.features.has('timestamp-query');
    this.inPassTimestamps = stampsInPasses(device);
    this.maxBinding = Math.min(device.limits.maxStorageBufferBindingSize, opts.bindingLimit ?? Infinity);
    this.maxBuffer = device.limits.maxBufferSize;
    this.storageAlign = device.limits.minStorageBufferOffsetAlignment;
    this.cpu = isSoftwareAdapter(summary);
    this.kernelOptions = opts.kernels ?? {};
    this.warn = opts.warn ?? ((m) => console.warn(m));
    this.pool = new BufferPool(device);
    this.uniforms = new UniformArena(device);
    this.profiler = new Profiler(device);
    this.batch = new Batch(device, this.watch, this.uniforms, this.profiler);
  }

  /**
   * Open the adapter of this runtime (browser, Deno, Node/Dawn) and its device, not yet prepared for the kernels:
   * the subclass that `Gpu.create` makes (src/kernels/gpu.ts) wraps it.
   */
  protected static openDevice(opts: DeviceOptions): ReturnType<typeof requestDevice> {
    return requestDevice(opts);
  }

  /** Dispatches recorded since creation: a cheap counter for benchmarks (replay adds its own). */
  get dispatchCount(): number { return this.batch.dispatchCount; }
  set dispatchCount(n: number) { this.batch.dispatchCount = n; }

  /** Timings of the last profiled flush (see `profileNext`). */
  get lastTimings(): DispatchTiming[] { return this.profiler.lastTimings; }

  /** The passes of the last timed batch (see `timelineNext`), once its flush has resolved them. */
  get lastTimeline(): PassSpan[] { return this.profiler.lastTimeline; }

  /** @internal A storage buffer of exactly `bytes` bytes, from the pool when one is free. */
  allocate(bytes: number, label: string): GPUBuffer {
    this.watch.check(label);
    return this.batch.allocated(this.pool.allocate(bytes, label));
  }

  /**
   * @internal Take buffers out of the pool for good (a captured step keeps binding them); `release` gives them
   * back.
   */
  claim(buffers: Iterable<GPUBuffer>): GPUBuffer[] { return this.pool.claim(buffers); }

  /** @internal Give a buffer back to the pool; commands already recorded keep reading it in order. */
  release(buffer: GPUBuffer): void { this.pool.release(buffer); }

  /** Destroy pooled buffers (frees GPU memory held for reuse). */
  trimPool(): void { this.pool.trim(); }

  /** @internal Stage a uniform block; returns where it will live once the batch is submitted. */
  uniform(bytes: Uint8Array): BufferView { return this.uniforms.uniform(bytes); }

  /**
   * @internal The uniform blocks staged since the last submit (copied unless `copy` is false); the arena starts
   * over.
   */
  takeUniforms(copy = true): Upload[] { return this.uniforms.take(copy); }

  /** @internal Write bytes into a buffer, ordered after every command recorded so far. */
  write(buffer: GPUBuffer, offset: number, data: ArrayBufferView): void { this.batch.write(buffer, offset, data); }

  /** @internal Copy between buffers inside the open encoder. */
  copy(src: BufferView, dst: BufferView): void { this.batch.copy(src, dst); }

  /** @internal Record one dispatch into the open batch, or into the capture in progress. */
  dispatch(d: Dispatch): void { this.batch.dispatch(d); }

  /** @internal No batch open, nothing being captured or profiled: what capture and replay need. */
  get idle(): boolean { return this.batch.idle; }

  /** @internal Route dispatches, uploads and allocations to `r` instead of the batch (null: back to the batch). */
  record(r: Recorder | null): void { this.batch.record(r); }

  /**
   * @internal Run `encode` (queue writes and submits of its own) inside error scopes; rejects with WebGPU's first
   * error.
   */
  scoped(op: string, encode: () => void): Promise<void> { return this.batch.scoped(op, encode); }

  /**
   * @internal Report `error` (one op's own error scope, e.g. creating its pipeline) at the next settle, named after
   * `op`.
   */
  checkLater(op: string, error: Promise<GPUError | null>): void { this.batch.checkLater(op, error); }

  /** Submit everything recorded and report any WebGPU error raised while recording it. */
  flush(op = 'flush'): Promise<void> { return this.batch.flush(op); }

  /** @internal Read bytes back to the CPU; flushes the batch first (Tensor.read is the public form). */
  read(src: BufferView, op = 'read'): Promise<ArrayBuffer> { return this.batch.read(src, op); }

  /** Wait until the GPU has finished all submitted work. */
  sync(): Promise<void> { return this.batch.sync(); }

  /** Profile the next flush: every dispatch gets its own pass with timestamps (slower; for benchmarks). */
  profileNext(capacity = 2048): void {
    this.profiler.profileNext(capacity);
    this.batch.endPass();
  }

  /** Time the next batch pass by pass, its gaps included, into `lastTimeline` (profiler.ts; for benchmarks). */
  timelineNext(capacity = 256): void {
    this.profiler.timelineNext(capacity);
    this.batch.endPass();   // the pass open now has no timestamps: the timed batch starts a new one
  }

  destroy(): void {
    this.trimPool();
    this.device.destroy();
  }
}
