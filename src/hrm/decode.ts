// A decode step recorded once and replayed every token. Recording a forward costs tens of microseconds of
// JavaScript per dispatch, as much as the GPU needs to run it, but one decode step differs from the next only in
// the position: the same pipelines, bind groups and workgroup counts, with a few uniform words (offset, kv_len,
// pos0) one larger. So the step is captured at the next position, the one after and the last of its attention's
// reach (the keys its dispatches cover: kernels/plan/reach.ts, fixed over the three); if the three agree on
// everything but words that move linearly with the position, replaying is exact for every position in between,
// and a token costs three calls per dispatch plus one write of the uniform blocks. A graph covers one reach:
// generate builds the next when decoding leaves it, so a step's work follows the keys in use, not the capacity.
// Greedy decoding also keeps the token on the GPU: the step ends with argmax written into its own input, so
// several steps can be queued before any is read back. Its forward may run the persistent MLP (DeviceOptions.kernels
// .decodeStep): then each step's readback carries the barrier's run-out flag too, and a step that finds it set
// throws BarrierRanOutError (the stepper redoes it per op).
import { BarrierRanOutError, HrmError, InputError, NotReplayableError } from '../errors.ts';
import type { Dispatch, Upload } from '../gpu/gpu.ts';
import { capture, replay, type Capture } from '../gpu/capture.ts';
import { quietly } from '../gpu/quiet.ts';
import { Tensor } from '../tensor/tensor.ts';
import { argmaxRows } from '../kernels/ops/ops.ts';
import { attentionReach } from '../kernels/plan/reach.ts';
import { flagWord, MLP_LABEL } from '../kernels/persist/mlp.ts';
import type { HrmCache } from './cache.ts';
import type { HrmModel } from './model.ts';

/** 'greedy': the step feeds its argmax back and reports the token; 'logits': the caller samples from the logits. */
export type DecodeMode = 'greedy' | 'logits';

interface Patch { chunk: number; word: number; base: number; slope: number }

export class DecodeGraph {
  private readonly words: Uint32Array[];
  private readonly staging: GPUBuffer[] = [];
  private disposed = false;
  /** Whether the step runs the persistent MLP (whose flag each readback then carries). */
  readonly persistent: boolean;

  private constructor(
    private readonly cache: HrmCache,
    readonly mode: DecodeMode,
    private readonly ids: Tensor,
    private readonly logits: Tensor,
    private readonly dispatches: Dispatch[],
    private readonly uploads: Upload[],
    private readonly patches: Patch[],
    private readonly origin: number,
    /** The step replays at positions origin .. end - 1 (its attention covers `end` keys). */
    readonly end: number,
    private readonly claimed: GPUBuffer[],
  ) {
    this.words = uploads.map((u) => new Uint32Array(u.data.buffer, u.data.byteOffset, u.data.byteLength >> 2));
    this.persistent = dispatches.some((d) => d.label === MLP_LABEL);
  }

  /** Dispatches one replayed step runs. */
  get size(): number { return this.dispatches.length; }

  /**
   * Capture the next decode step of `cache` (one causal token at cache.offset), replayable up to position
   * `reach` - 1: by default the reach of the third position (attentionReach), so that a graph covers at least
   * three. Returns the reason instead when the step cannot be replayed (a NotReplayableError: too few positions
   * left, a full-precision first pass pending, a structure that changes with the position, a buffer copy); any
   * other error propagates.
   */
  static tryBuild(model: HrmModel, cache: HrmCache, mode: DecodeMode, reach?: number):
    DecodeGraph | { reason: string } {
    const gpu = model.gpu;
    const origin = cache.offset;
    const end = reach ?? attentionReach(origin + 3, cache.capacity);
    const last = end - 1;
    if (last - origin < 2) return { reason: `only ${end - origin} positions left in the cache` };
    if (cache.fullPrecisionPass) {
      return { reason: 'the first forward of an after-prefill cache attends to full precision' };
    }
    const ids = Tensor.from(gpu, [0], [1], 'u32', 'decode.ids');
    const step = () => {
      const logits = model.forward(ids, cache, { mask: 'causal', logits: 'last', persistent: true });
      if (mode === 'greedy') argmaxRows(logits, ids);
      return logits;
    };
    const at = (pos: number) => capture(gpu, () => cache.at(pos, step, end));
    let c0: Capture<Tensor> | null = null;
    try {
      // The first capture settles the buffer pool and compiles pipelines; the next three must then agree.
      at(origin).result.dispose();
      const far = at(last);
      far.result.dispose();
      const near = at(origin + 1);
      near.result.dispose();
      c0 = at(origin);
      const reason = sameStructure(c0, near) ?? sameStructure(c0, far);
      if (reason) throw new NotReplayableError('decode graph', reason);
      const patches = linearPatches(c0, near, far, last - origin);
      if (typeof patches === 'string') throw new NotReplayableError('decode graph', patches);
      // Uniform blocks first: the patches index them.
      return new DecodeGraph(cache, mode, ids, c0.result, c0.dispatches, [...c0.uniforms, ...c0.uploads], patches,
        origin, end, gpu.claim(c0.allocated));
    } catch (e) {
      ids.dispose();
      c0?.result.dispose();
      if (e instanceof NotReplayableError) return { reason: e.message };
      throw e;
    }
  }

  /** The token the next step reads (greedy: only before the first step; later steps feed themselves). */
  feed(token: number): void {
    const c = this.cache.config;
    if (!Number.isInteger(token) || token < 0 || token >= c.vocab_size) {
      throw new InputError('decode graph', `token id ${token} is outside the vocabulary [0, ${c.vocab_size})`);
    }
    this.ids.gpu.write(this.ids.buffer, 0, new Uint32Array([token]));
  }

  /**
   * Queue one step at the cache's offset; resolves to the token it picked (greedy mode). Rejects with
   * BarrierRanOutError where a persistent step's barrier ran out, in this step or one before it.
   */
  async next(): Promise<number> {
    if (this.mode !== 'greedy') throw new InputError('decode graph', 'next() needs a greedy graph; use nextLogits()');
    const token = new Uint32Array(await this.run(this.ids))[0];
    if (token >= this.cache.config.vocab_size) throw new HrmError('decode graph',
      'the step\'s logits hold a NaN (argmax found no token)');
    return token;
  }

  /** Queue one step at the cache's offset; resolves to its logits [vocab] (BarrierRanOutError: as next()). */
  async nextLogits(): Promise<Float32Array> {
    return new Float32Array(await this.run(this.logits));
  }

  private async run(out: Tensor): Promise<ArrayBuffer> {
    if (this.disposed) throw new HrmError('decode graph', 'used after dispose()');
    const pos = this.cache.offset;
    if (pos >= this.end) {
      throw new HrmError('decode graph',
        `position ${pos} is past the step's reach (${this.end} keys); build the next graph`);
    }
    this.cache.reserve(1);
    for (const p of this.patches) this.words[p.chunk][p.word] = p.base + p.slope * (pos - this.origin);
    const size = out.byteLength;
    const gpu = this.ids.gpu;
    // The flag word after the output, in the same copy-out: the flag is sticky, so the first step to read it set is
    // the one whose barrier ran out.
    const staging = this.takeStaging(size + (this.persistent ? 4 : 0));
    const done = replay(gpu, this.dispatches, this.uploads, (enc) => {
      enc.copyBufferToBuffer(out.buffer, out.offset, staging, 0, size);
      if (!this.persistent) return;
      const flag = flagWord(gpu);
      enc.copyBufferToBuffer(flag.buffer, flag.offset, staging, size, flag.size);
    });
    this.cache.advance([0]);
    let bytes: ArrayBuffer;
    try {
      await quietly(done);
      await quietly(staging.mapAsync(GPUMapMode.READ));
      bytes = staging.getMappedRange().slice(0);
      staging.unmap();
    } finally {
      this.staging.push(staging);
    }
    if (!this.persistent) return bytes;
    if (new Uint32Array(bytes, size, 1)[0] !== 0) throw new BarrierRanOutError('decode graph', pos);
    return bytes.slice(0, size);
  }

  private takeStaging(size: number): GPUBuffer {
    const i = this.staging.findIndex((b) => b.size === size);
    if (i >= 0) return this.staging.splice(i, 1)[0];
    return this.ids.gpu.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'decode.readback' });
  }

  /** Give the captured buffers back to the pool (the cache itself stays usable by ordinary forwards). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const gpu = this.ids.gpu;
    for (const b of this.claimed) gpu.release(b);
    this.ids.dispose();
    this.logits.dispose();
    for (const b of this.staging) b.destroy();
  }
}

/** Why two captures of a step differ in anything but uniform values, or null. */
function sameStructure(a: Capture<unknown>, b: Capture<unknown>): string | null {
  if (a.dispatches.length !== b.dispatches.length) {
    return `the step has ${a.dispatches.length} dispatches at one position and ${b.dispatches.length} at another`;
  }
  for (let i = 0; i < a.dispatches.length; i++) {
    const x = a.dispatches[i], y = b.dispatches[i];
    if (x.pipeline !== y.pipeline || x.key !== y.key || x.workgroups.join() !== y.workgroups.join()) {
      return `dispatch ${i} (${x.label}) changes its pipeline, buffers or workgroups with the position`;
    }
  }
  if (a.uniforms.length !== b.uniforms.length ||
    a.uniforms.some((u, i) => u.buffer !== b.uniforms[i].buffer ||
    u.data.byteLength !== b.uniforms[i].data.byteLength)) {
    return 'the uniform blocks differ in layout between positions';
  }
  const up = (c: Capture<unknown>) => c.uploads.map((u) => `${u.offset}:${u.data.join()}`).join(';');
  if (a.uploads.length !== b.uploads.length || a.uploads.some((u, i) => u.buffer !== b.uploads[i].buffer) ||
    up(a) !== up(b)) {
    return 'the step uploads different data at different positions';
  }
  return null;
}

/** Uniform words as base + slope * (position - origin), checked at origin, origin + 1 and origin + span. */
function linearPatches(c0: Capture<unknown>, c1: Capture<unknown>, far: Capture<unknown>,
  span: number): Patch[] | string {
  const patches: Patch[] = [];
  const view = (c: Capture<unknown>, i: number) => new Uint32Array(c.uniforms[i].data.buffer,
    c.uniforms[i].data.byteOffset, c.uniforms[i].data.byteLength / 4);
  for (let i = 0; i < c0.uniforms.length; i++) {
    const a = view(c0, i), b = view(c1, i), z = view(far, i);
    for (let w = 0; w < a.length; w++) {
      const slope = (b[w] - a[w]) | 0;
      if (((a[w] + slope * span) >>> 0) !== z[w]) {
        return `uniform word ${w} of block ${i} does not move linearly with the position`;
      }
      if (slope !== 0) patches.push({ chunk: i, word: w, base: a[w], slope });
    }
  }
  return patches;
}

/**
 * How many greedy steps stay queued ahead of the token being read: enough for QUEUE_MS of steps, so that a pause of
 * the JavaScript thread (on the H200 a stall or two of 25-115 ms per 128 tokens after a prefill, garbage collection
 * among them) leaves the GPU busy; at most 32. Submitted steps cannot be cancelled, so a stop leaves the queue
 * behind: on a CPU driver, where one step takes longer than QUEUE_MS, a single step is queued (reading a token back
 * takes well under a millisecond of the step's time), and START before any step was timed, so that a stop leaves at
 * most about QUEUE_MS or one step of work. Learnt from the time between tokens read; `fixed` pins it (benchmarks).
 */
export class QueueDepth {
  static readonly QUEUE_MS = 100;
  static readonly START = 2;
  static readonly MAX = 32;
  private stepMs = 0;
  private lastRead: number | null = null;

  constructor(private readonly fixed?: number) {}

  get depth(): number {
    if (this.fixed !== undefined) return this.fixed;
    if (this.stepMs <= 0) return QueueDepth.START;
    return Math.max(1, Math.min(QueueDepth.MAX, Math.ceil(QueueDepth.QUEUE_MS / this.stepMs)));
  }

  /** A token was read (at `t`, ms): its interval from the one before is a step's time once the queue runs. */
  read(t = performance.now()): void {
    if (this.lastRead !== null) {
      const ms = t - this.lastRead;
      this.stepMs = this.stepMs === 0 ? ms : 0.8 * this.stepMs + 0.2 * ms;
    }
    this.lastRead = t;
  }
}

/**
 * Greedy tokens after `first`, `count` of them, from a greedy graph: steps are queued (QueueDepth, or `ahead`
 * fixed) before the oldest is awaited, so the GPU has the next steps while JavaScript handles a token. Closing the
 * generator early waits for the steps still queued (their tokens are dropped). `graph` is anything that feeds and
 * queues steps as a DecodeGraph does (the bench wraps one to time its calls).
 */
export async function* greedySteps(graph: Pick<DecodeGraph, 'feed' | 'next'>, first: number, count: number,
  ahead?: number): AsyncGenerator<number> {
  graph.feed(first);
  const depth = new QueueDepth(ahead);
  const queued: Array<Promise<number>> = [];
  let left = count;
  try {
    while (left > 0 || queued.length) {
      while (left > 0 && queued.length < depth.depth) {
        // Marked handled at once: a lost device rejects every queued step, and only the oldest is awaited here.
        const step = graph.next();
        step.catch(() => {});
        queued.push(step);
        left--;
      }
      const token = await queued.shift()!;
      depth.read();
      yield token;
    }
  } finally {
    await Promise.allSettled(queued);
  }
}
