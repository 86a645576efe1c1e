// The open batch: one command encoder per batch of work (a forward pass) and its compute pass. Kernels record
// into it; a long batch is submitted in parts while it is recorded; `flush()` submits the rest and turns anything
// WebGPU complained about into a typed error naming the op. Capturing a batch for replay is capture.ts; this file
// only routes dispatches, uploads and allocations to a capture while one runs.
import { quietly } from './quiet.ts';
import { NotReplayableError, type HrmError } from '../errors.ts';
import { toTypedError, type DeviceWatch } from './watch.ts';
import type { BufferView } from './pool.ts';
import type { Profiler } from './profiler.ts';
import type { UniformArena } from './uniforms.ts';

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
 * Dispatches after which an open batch is submitted while recording goes on (Batch.dispatch): the first part small
 * so that the GPU starts at once, each next part `growth` times the last (rounded up) up to EARLY_SUBMIT.max. The
 * GPU runs part n while JavaScript records part n + 1, so it idles unless recording a part is no slower than
 * running one `growth` times shorter. A prefill on the H200 records a dispatch in a little less time than it runs
 * one: parts doubling, or a first part of 256, left it idle; 1.25 keeps recording within the GPU's time
 * (bench/results/README.md, "What the code's choices rest on").
 */
const EARLY_SUBMIT = { first: 32, growth: 1.25, max: 256 };

/** WebGPU's three error scopes, pushed around each batch (and each `scoped` op) and popped in reverse. */
const SCOPES: GPUErrorFilter[] = ['internal', 'out-of-memory', 'validation'];

export class Batch {
  /** Dispatches recorded since creation: a cheap counter for benchmarks. */
  dispatchCount = 0;
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private afterSubmit: Array<() => void> = [];
  private capturing: Recorder | null = null;
  /** Errors of ops' own error scopes (checkLater), reported at the next settle. */
  private opErrors: Promise<HrmError | null>[] = [];
  /** Dispatches in the open batch, the count that submits its next part early, and the error scopes of those parts. */
  private batchDispatches = 0;
  private nextPart = EARLY_SUBMIT.first;
  private early: Promise<GPUError | null>[] = [];

  constructor(
    private readonly device: GPUDevice,
    private readonly watch: DeviceWatch,
    private readonly uniforms: UniformArena,
    private readonly profiler: Profiler,
  ) {}

  /** No batch open, nothing being captured or profiled: what capture and replay need. */
  get idle(): boolean {
    return !this.encoder && !this.capturing && !this.profiler.profiling;
  }

  /** Route dispatches, uploads and allocations to `r` instead of the batch (null: back to the batch). */
  record(r: Recorder | null): void {
    this.capturing = r;
  }

  /** A buffer just handed out by the pool: a capture in progress keeps it (capture.ts, "Buffer identity"). */
  allocated(b: GPUBuffer): GPUBuffer {
    this.capturing?.allocated.add(b);
    return b;
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
    const staging = this.device.createBuffer({
      size, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true, label: 'staging',
    });
    new Uint8Array(staging.getMappedRange()).set(bytes);
    staging.unmap();
    this.endPass();
    this.encoder.copyBufferToBuffer(staging, 0, buffer, offset, size);
    this.afterSubmit.push(() => staging.destroy());
  }

  /** Copy between buffers inside the open encoder. */
  copy(src: BufferView, dst: BufferView): void {
    if (this.capturing) {
      throw new NotReplayableError('capture', 'a buffer copy cannot be captured (only dispatches replay)');
    }
    this.endPass();
    this.commandEncoder().copyBufferToBuffer(src.buffer, src.offset, dst.buffer, dst.offset, src.size);
  }

  /** Record one dispatch into the open batch, or into the capture in progress. */
  dispatch(d: Dispatch): void {
    if (this.capturing) {
      this.capturing.dispatches.push(d);
      return;
    }
    const pass = this.computePass(d.label);
    this.profiler.counted();
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
    this.dispatchCount++;
    // A long batch (a prefill) is submitted in parts as it is recorded, so the GPU runs the first layers while
    // JavaScript records the rest; its errors are reported at the next settle. Not while profiling (one pass set).
    if (++this.batchDispatches >= this.nextPart && !this.profiler.profiling) this.early.push(...this.submit(true));
  }

  /** Run `encode` (queue writes and submits of its own) inside error scopes; rejects with WebGPU's first error. */
  scoped(op: string, encode: () => void): Promise<void> {
    this.watch.check(op);
    for (const s of SCOPES) this.device.pushErrorScope(s);
    let errors: Promise<GPUError | null>[];
    try {
      encode();
    } finally {
      errors = this.popScopes();
    }
    return this.settle(op, errors);
  }

  /**
   * Report `error` (an error scope around one op's own WebGPU calls, e.g. creating its pipeline) at the next
   * settle, named after `op` rather than the batch that used it.
   */
  checkLater(op: string, error: Promise<GPUError | null>): void {
    this.opErrors.push(error.then((e) => (e ? toTypedError(op, e) : null)));
  }

  /** Submit everything recorded and report any WebGPU error raised while recording it. */
  async flush(op: string): Promise<void> {
    const pending = this.submit();
    await this.settle(op, pending);
  }

  /** Read bytes back to the CPU; flushes the batch first. */
  async read(src: BufferView, op: string): Promise<ArrayBuffer> {
    const size = Math.ceil(src.size / 4) * 4;
    const usage = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
    const staging = this.device.createBuffer({ size, usage, label: `${op}:readback` });
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

  /** Close the open compute pass (the next dispatch opens another). */
  endPass(): void {
    this.pass?.end();
    this.pass = null;
  }

  /** The compute pass dispatches go into (opened on demand; a profiled batch opens one per dispatch). */
  private computePass(label: string): GPUComputePassEncoder {
    this.watch.check(label);
    const own = this.profiler.dispatchWrites(label);
    if (own) {
      this.endPass();
      this.pass = this.commandEncoder().beginComputePass({ label, timestampWrites: own });
      return this.pass;
    }
    this.pass ??= this.commandEncoder().beginComputePass({
      label: 'batch', timestampWrites: this.profiler.passWrites(),
    });
    return this.pass;
  }

  /**
   * Submit without waiting; returns the error-scope promises for `settle`. `part`: an early part of a batch still
   * being recorded (the next part may be longer: EARLY_SUBMIT); otherwise the batch ends and the next starts small
   * again.
   */
  private submit(part = false): Promise<GPUError | null>[] {
    this.watch.check('submit');
    const grown = Math.min(Math.ceil(EARLY_SUBMIT.growth * this.nextPart), EARLY_SUBMIT.max);
    this.nextPart = part ? grown : EARLY_SUBMIT.first;
    if (!this.encoder) return [];
    this.endPass();
    // Timestamps resolved at the end of this batch; the flush that settles it waits for them too.
    const timed = this.profiler.resolve(this.encoder, part);
    for (const u of this.uniforms.take(false)) this.device.queue.writeBuffer(u.buffer, 0, u.data);
    this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    this.batchDispatches = 0;
    for (const f of this.afterSubmit.splice(0)) f();
    const errors = this.popScopes();
    return [...errors, ...timed.map((x) => x.then(() => null))];
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

  private commandEncoder(): GPUCommandEncoder {
    if (!this.encoder) {
      for (const s of SCOPES) this.device.pushErrorScope(s);
      this.encoder = this.device.createCommandEncoder({ label: 'batch' });
    }
    return this.encoder;
  }

  private popScopes(): Promise<GPUError | null>[] {
    return SCOPES.map(() => this.device.popErrorScope());
  }
}
