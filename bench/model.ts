// End-to-end figures of the HRM model with random bf16 weights: prefill tok/s, decode tok/s after a prompt (greedy,
// as generation runs it: one captured step replayed per token, the argmax fed back on the GPU, a few steps queued
// ahead of the token being read), and where a decode step's time goes (dispatches, JS time, GPU time per kernel
// label from one profiled step), per KV-cache configuration. Also the bytes a decode token must read, which turn
// a bandwidth into a ceiling.
import type { Dispatch, Gpu, PassSpan } from '../src/gpu/gpu.ts';
import { capture } from '../src/gpu/capture.ts';
import { passMs, queuedPassMs, type QueuedSteps } from './kernels.ts';
import type { Tensor } from '../src/gpu/tensor.ts';
import { HrmModel } from '../src/hrm/model.ts';
import { DecodeGraph, greedySteps } from '../src/hrm/decode.ts';
import { cacheBytes, type HrmCache } from '../src/hrm/cache.ts';
import { stackCalls, type HrmConfig } from '../src/hrm/config.ts';
import { disposeWeights, type HrmWeights } from '../src/hrm/weights.ts';
import { CACHES, type CacheName, type Settings } from './settings.ts';
import { addGc, gcWatch, now, stats, type GcFigure, type Stats } from './stats.ts';
import { deviceLoss } from './recover.ts';

export interface PrefillFigure {
  tokens: number;
  tokPerS: Stats;
  /** Whole forward, recording to logits on the CPU. */
  ms: Stats;
  /** JS time to record the forward (before anything is submitted). */
  encodeMs: Stats;
  dispatches: number;
  /** One more prefill recorded with per-dispatch timestamps (full cache, longest prompt; null elsewhere). */
  profile?: ProfileFigure | null;
  /** One more prefill timed pass by pass as it runs untimed (full cache, longest prompt; null elsewhere). */
  timeline?: PrefillTimeline | null;
}

/**
 * A prefill's passes on the GPU (Gpu.timelineNext: one pass per part submitted while recording), beside its wall
 * and recording time: how much of the wall the GPU was busy, and where it waited for JavaScript.
 */
export interface PrefillTimeline {
  wallMs: number;
  encodeMs: number;
  passes: PassSpan[];
  /** Sum of the passes' durations, and the span from the first pass's start to the last one's end (GPU clock). */
  busyMs: number;
  spanMs: number;
}

export interface DecodeFigure {
  prompt: number;
  tokens: number;
  /** Tokens / decode time of each repetition. */
  tokPerS: Stats;
  /** Decode time per token (steps overlap: this is the throughput, not one step's latency). */
  stepMs: Stats;
  /** JavaScript time to record (or replay) and submit one step. */
  encodeMs: Stats;
  dispatchesPerToken: number;
  /** Dispatches of the replayed step, or why each step was recorded instead. */
  path: { replayed: number } | { recorded: string };
  /** Mean positions attended per decoded token. */
  meanContext: number;
  /** Garbage-collection pauses over the timed steps of every repetition (null where not reported). */
  gc?: GcFigure | null;
}

export interface LabelTime { label: string; count: number; ms: number; share: number }

export interface ProfileFigure {
  context: number;
  dispatches: number;
  /** Dispatches that got timestamps (the profiler holds at most 2048 per step). */
  profiled: number;
  kernelMs: number;
  byLabel: LabelTime[];
  quantized: boolean;
  /** The step timed as one pass, whole and without each kernel (null without timestamps or on a CPU driver). */
  ablation?: Ablation | null;
}

/**
 * A captured decode step timed on the GPU as one compute pass (passMs: no JavaScript, no per-dispatch passes), and
 * for each kernel (label and grid: the projections share a label) how much faster the pass runs without its
 * dispatches: what they cost, barriers included. The outputs of such a pass are garbage; only its time counts.
 */
export interface Ablation {
  stepMs: number;
  dispatches: number;
  byKernel: Array<{ kernel: string; count: number; ms: number }>;
  /** Decode only: the step replayed 32 times with 4 steps in flight (a readback each), and all 32 at once. */
  queued?: QueuedSteps[];
}

/** Bytes one decode token reads at the decode's mean context, and the tok/s they allow at a bandwidth. */
export interface Ceiling {
  weightBytes: number;
  kvBytes: number;
  bytesPerToken: number;
  /** At the streaming bandwidth measured on this device (null if it was not measured). */
  tokPerS: number | null;
  /** At the H200's 4.27 TB/s. */
  tokPerSH200: number;
}

export interface CacheResult {
  name: CacheName;
  kv: { k: number | null; v: number | null };
  mode: 'after-prefill';
  /** Cache bytes per cached position, all slots, K and V. */
  bytesPerPosition: number;
  prefill: PrefillFigure[];
  decode: DecodeFigure | null;
  profile: ProfileFigure | null;
  ceiling: Ceiling;
  /** Bytes per token x median tok/s: the bandwidth decode achieves, and its share of the streaming read. */
  decodeGBps: number | null;
  shareOfStream: number | null;
  errors: string[];
  skipped: string[];
}

export interface ModelInfo {
  name: string;
  config: HrmConfig;
  parameters: number;
  /** bf16 bytes of one stack (all layers), of lm_head, and read per decode token (stack calls x stack + lm_head). */
  stackBytes: number;
  lmHeadBytes: number;
  weightBytesPerToken: number;
  stackCalls: number;
}

export function modelInfo(name: string, c: HrmConfig, parameters: number): ModelInfo {
  const h = c.hidden_size, a = c.num_attention_heads * c.head_dim, i = c.intermediate_size;
  const layer = 4 * a * h + h * a + 2 * i * h + h * i;
  const stackBytes = 2 * layer * c.num_layers_per_stack;
  const lmHeadBytes = 2 * c.vocab_size * h;
  return { name, config: c, parameters, stackBytes, lmHeadBytes, weightBytesPerToken: stackCalls(c) * stackBytes + lmHeadBytes, stackCalls: stackCalls(c) };
}

export function ceiling(info: ModelInfo, bytesPerPosition: number, context: number, streamGBps: number | null): Ceiling {
  const kvBytes = bytesPerPosition * context;
  const bytesPerToken = info.weightBytesPerToken + kvBytes;
  return {
    weightBytes: info.weightBytesPerToken, kvBytes, bytesPerToken,
    tokPerS: streamGBps ? (streamGBps * 1e9) / bytesPerToken : null,
    tokPerSH200: 4.27e12 / bytesPerToken,
  };
}

/** Deterministic prompt ids in [16, vocab) (a small LCG; any ids serve, the weights are random). */
export function promptIds(n: number, vocab: number, seed: number): number[] {
  let x = (seed * 2654435761 + 12345) >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return 16 + (x % (vocab - 16));
  });
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

async function readRow(t: Tensor): Promise<Float32Array> {
  try { return await t.readF32(); } finally { t.dispose(); }
}

export interface Clock { left(): number }

/**
 * Ablation of the dispatches `step` records (see Ablation); medians of `passes` passes each; with `queued` (a decode
 * step) also the step replayed as generation queues it (Ablation.queued). None on CPU drivers: a pass per kernel of
 * a step takes minutes there and says nothing of a GPU.
 */
async function ablate(gpu: Gpu, step: () => unknown, { passes = 5, queued = false } = {}): Promise<Ablation | null> {
  if (gpu.cpu) return null;
  await gpu.sync();
  const cap = capture(gpu, step);
  const claimed = gpu.claim(cap.allocated);
  try {
    const uploads = [...cap.uniforms, ...cap.uploads];
    const time = async (ds: Dispatch[]) => stats(await passMs(gpu, ds, uploads, passes)).median;
    const stepMs = await time(cap.dispatches);
    const kernel = (d: Dispatch) => `${d.label} [${d.workgroups.join('x')}]`;
    const byKernel = [];
    for (const k of new Set(cap.dispatches.map(kernel))) {
      const rest = cap.dispatches.filter((d) => kernel(d) !== k);
      byKernel.push({ kernel: k, count: cap.dispatches.length - rest.length, ms: stepMs - (await time(rest)) });
    }
    const q = queued ? [await queuedPassMs(gpu, cap.dispatches, uploads, 32, 4), await queuedPassMs(gpu, cap.dispatches, uploads, 32, 32)] : undefined;
    return { stepMs, dispatches: cap.dispatches.length, byKernel: byKernel.sort((a, b) => b.ms - a.ms), queued: q };
  } finally {
    for (const b of claimed) gpu.release(b);
  }
}

/** Runs the prefill, decode and profile measurements of one cache configuration. */
export class ModelBench {
  constructor(readonly gpu: Gpu, readonly model: HrmModel, readonly info: ModelInfo, readonly s: Settings, readonly clock: Clock, readonly log: (m: string) => void) {}

  private cache(name: CacheName, capacity: number): HrmCache {
    return this.model.newCache({ capacity, kv: CACHES[name], mode: 'after-prefill' });
  }

  /**
   * One prefill of `n` tokens into a fresh cache; times and dispatch count. `timing` 'profile': a pass and
   * timestamps per dispatch (Gpu.profileNext); 'timeline': timestamps per part's pass (Gpu.timelineNext).
   */
  private async prefillOnce(name: CacheName, n: number, seed: number, timing?: 'profile' | 'timeline'): Promise<{ ms: number; encodeMs: number; dispatches: number }> {
    const cache = this.cache(name, n);
    try {
      const ids = promptIds(n, this.info.config.vocab_size, seed);
      await this.gpu.sync();
      if (timing === 'profile') this.gpu.profileNext(2048);
      if (timing === 'timeline') this.gpu.timelineNext();
      const d0 = this.gpu.dispatchCount;
      const t0 = now();
      const logits = this.model.forward(ids, cache, { mask: 'prefix', logits: 'last' });
      const t1 = now();
      argmax(await readRow(logits));
      return { ms: now() - t0, encodeMs: t1 - t0, dispatches: this.gpu.dispatchCount - d0 };
    } finally {
      cache.dispose();
    }
  }

  /** The prefill of `n` tokens as one pass, ablated (see Ablation), into a fresh cache. */
  private async prefillAblation(name: CacheName, n: number): Promise<Ablation | null> {
    const cache = this.cache(name, n);
    try {
      const ids = promptIds(n, this.info.config.vocab_size, this.s.seed);
      return await ablate(this.gpu, () => this.model.forward(ids, cache, { mask: 'prefix' }).dispose(), { passes: 3 });
    } finally {
      cache.dispose();
    }
  }

  async prefill(name: CacheName, n: number): Promise<PrefillFigure> {
    for (let w = 0; w < this.s.warmup; w++) await this.prefillOnce(name, n, this.s.seed + 100 + w);
    const runs = [];
    for (let r = 0; r < this.s.reps; r++) {
      if (r > 0 && this.clock.left() <= 0) break;
      runs.push(await this.prefillOnce(name, n, this.s.seed + r));
    }
    let profile: ProfileFigure | null = null;
    let timeline: PrefillTimeline | null = null;
    if (name === 'full' && n === Math.max(...this.s.prefill) && this.gpu.timestamps) {
      // As the timed runs, but each part's pass timestamped: the GPU's busy time against the wall.
      const t = await this.prefillOnce(name, n, this.s.seed, 'timeline');
      const passes = this.gpu.lastTimeline;
      const busyMs = passes.reduce((a, x) => a + x.endMs - x.startMs, 0);
      timeline = { wallMs: t.ms, encodeMs: t.encodeMs, passes, busyMs, spanMs: passes.length ? passes[passes.length - 1].endMs : 0 };
      // Where a prefill goes: the same forward with a pass per dispatch (outside the timed runs).
      const r = await this.prefillOnce(name, n, this.s.seed, 'profile');
      profile = summarizeProfile(this.gpu.lastTimings, r.dispatches, n);
      // And as one pass, each kernel's dispatches left out in turn (all logits: reading the last row copies it,
      // which a capture cannot hold; lm_head over every row is a kernel of its own grid).
      profile.ablation = await this.prefillAblation(name, n);
    }
    return {
      tokens: n, tokPerS: stats(runs.map((r) => (n * 1000) / r.ms)), ms: stats(runs.map((r) => r.ms)),
      encodeMs: stats(runs.map((r) => r.encodeMs)), dispatches: runs[0].dispatches, profile, timeline,
    };
  }

  /**
   * Prefill `prompt` tokens, then decode `tokens` tokens; returns per-step times. With `profile`, one more step
   * is recorded with per-dispatch timestamps (outside the timed steps: profiling opens a pass per dispatch).
   */
  private async decodeOnce(name: CacheName, tokens: number, seed: number, profile: boolean): Promise<{ steps: Array<{ ms: number; encodeMs: number; dispatches: number }>; path: DecodeFigure['path']; profile: ProfileFigure | null; gc: GcFigure | null }> {
    const { prompt } = this.s;
    const cache = this.cache(name, prompt + tokens + 1);
    let graph: DecodeGraph | null = null;
    try {
      let tok = argmax(await readRow(this.model.forward(promptIds(prompt, this.info.config.vocab_size, seed), cache, { mask: 'prefix', logits: 'last' })));
      const built = DecodeGraph.tryBuild(this.model, cache, 'greedy');
      graph = built instanceof DecodeGraph ? built : null;
      const steps = [];
      const gc = gcWatch();
      if (graph) {
        // As generate() runs it (greedySteps: steps queued by QueueDepth unless --ahead fixes their number), each
        // token read while later steps run; each step's JavaScript is the time its next() takes to return.
        const g = graph;
        const encodeMs: number[] = [];
        const timed = { feed: (t: number) => g.feed(t), next: () => { const t0 = now(); const p = g.next(); encodeMs.push(now() - t0); return p; } };
        let last = now();
        for await (const t of greedySteps(timed, tok, tokens, this.s.ahead === 'auto' ? undefined : this.s.ahead)) {
          tok = t;
          const at = now();
          steps.push({ ms: at - last, encodeMs: encodeMs[steps.length], dispatches: g.size });
          last = at;
        }
      } else {
        for (let i = 0; i < tokens; i++) {
          const d0 = this.gpu.dispatchCount;
          const t0 = now();
          const logits = this.model.forward([tok], cache, { mask: 'causal', logits: 'last' });
          const t1 = now();
          tok = argmax(await readRow(logits));
          steps.push({ ms: now() - t0, encodeMs: t1 - t0, dispatches: this.gpu.dispatchCount - d0 });
        }
      }
      const gcs = gc?.stop() ?? null;
      const path: DecodeFigure['path'] = graph ? { replayed: graph.size } : { recorded: (built as { reason: string }).reason };
      graph?.dispose();
      graph = null;
      let prof: ProfileFigure | null = null;
      if (profile && this.gpu.timestamps && steps.length) {
        // The same forward recorded with a pass per dispatch (a replayed greedy step adds one argmax).
        const context = cache.offset + 1;
        this.gpu.profileNext(2048);
        const d0 = this.gpu.dispatchCount;
        await readRow(this.model.forward([tok], cache, { mask: 'causal', logits: 'last' }));
        prof = summarizeProfile(this.gpu.lastTimings, this.gpu.dispatchCount - d0, context);
        prof.ablation = await ablate(this.gpu, () => cache.at(cache.offset - 1, () => this.model.forward([tok], cache, { mask: 'causal', logits: 'last' })), { queued: true });
      }
      return { steps, path, profile: prof, gc: gcs };
    } finally {
      graph?.dispose();
      cache.dispose();
    }
  }

  async decode(name: CacheName): Promise<{ decode: DecodeFigure; profile: ProfileFigure | null }> {
    const { decodeTokens, prompt } = this.s;
    if (this.s.warmup > 0) await this.decodeOnce(name, Math.min(4, decodeTokens), this.s.seed + 200, false);
    const reps: Array<Awaited<ReturnType<ModelBench['decodeOnce']>>> = [];
    for (let r = 0; r < this.s.decodeReps; r++) {
      if (r > 0 && this.clock.left() <= 0) break;
      reps.push(await this.decodeOnce(name, decodeTokens, this.s.seed + r, r === 0));
    }
    const steps = reps.flatMap((r) => r.steps);
    const decode: DecodeFigure = {
      prompt, tokens: decodeTokens,
      tokPerS: stats(reps.map((r) => (r.steps.length * 1000) / r.steps.reduce((a, x) => a + x.ms, 0))),
      stepMs: stats(steps.map((x) => x.ms)),
      encodeMs: stats(steps.map((x) => x.encodeMs)),
      dispatchesPerToken: steps[steps.length - 1].dispatches,
      path: reps[0].path,
      meanContext: prompt + (decodeTokens + 1) / 2,
      gc: reps.every((r) => r.gc) ? addGc(reps.map((r) => r.gc!)) : null,
    };
    return { decode, profile: reps.map((r) => r.profile).find((p) => p) ?? null };
  }

  /** Every measurement of one cache configuration; errors are recorded, not thrown, except a lost device. */
  async run(name: CacheName, streamGBps: number | null): Promise<CacheResult> {
    const c = this.info.config;
    const bytesPerPosition = cacheBytes(c, 1, this.s.dtype, CACHES[name]);
    const res: CacheResult = {
      name, kv: CACHES[name], mode: 'after-prefill', bytesPerPosition, prefill: [], decode: null, profile: null,
      ceiling: ceiling(this.info, bytesPerPosition, this.s.prompt + (this.s.decodeTokens + 1) / 2, streamGBps),
      decodeGBps: null, shareOfStream: null, errors: [], skipped: [],
    };
    const attempt = async (what: string, f: () => Promise<void>): Promise<boolean> => {
      if (this.clock.left() <= 0) { res.skipped.push(`${what}: time budget spent`); return false; }
      const t0 = now();
      try {
        await f();
        this.log(`  ${name} ${what}: ${((now() - t0) / 1000).toFixed(1)} s`);
        return true;
      } catch (e) {
        if (deviceLoss(e, this.gpu)) throw e; // the harness redoes the whole configuration on a new device
        const msg = e instanceof Error ? e.message : String(e);
        res.errors.push(`${what}: ${msg}`);
        this.log(`  ${name} ${what}: ERROR ${msg.split('\n')[0]}`);
        await this.gpu.sync().catch(() => undefined); // submit (and so drop) whatever the failed forward recorded
        return false;
      }
    };
    await attempt(`decode ${this.s.decodeTokens} after ${this.s.prompt}`, async () => {
      const r = await this.decode(name);
      res.decode = r.decode;
      res.profile = r.profile;
      res.decodeGBps = (res.ceiling.bytesPerToken * r.decode.tokPerS.median) / 1e9;
      res.shareOfStream = streamGBps ? res.decodeGBps / streamGBps : null;
    });
    for (const n of this.s.prefill) {
      await attempt(`prefill ${n}`, async () => { res.prefill.push(await this.prefill(name, n)); });
    }
    return res;
  }
}

/**
 * The benchmarked model on the device in use: random weights made on the GPU the first time, and again when a
 * device loss moved the run to a new device.
 */
export class ModelOnDevice {
  private held: { gpu: Gpu; weights: HrmWeights; bench: ModelBench } | null = null;
  constructor(private readonly make: (gpu: Gpu) => Promise<{ weights: HrmWeights; bench: ModelBench }>) {}

  /** The model bench on `gpu`: the weights of an earlier device are dropped and made again on this one. */
  async on(gpu: Gpu): Promise<ModelBench> {
    if (this.held?.gpu !== gpu) {
      this.dispose();
      this.held = { gpu, ...(await this.make(gpu)) };
    }
    return this.held.bench;
  }

  dispose(): void {
    if (this.held) disposeWeights(this.held.weights);
    this.held = null;
  }
}

/** Per-label totals of one profiled step, largest first. */
export function summarizeProfile(t: Array<{ label: string; ms: number }>, dispatches: number, context: number): ProfileFigure {
  const by = new Map<string, { count: number; ms: number }>();
  for (const x of t) {
    const e = by.get(x.label) ?? { count: 0, ms: 0 };
    e.count++;
    e.ms += x.ms;
    by.set(x.label, e);
  }
  const kernelMs = t.reduce((a, x) => a + x.ms, 0);
  const q = 65536 / 1e6;
  return {
    context, dispatches, profiled: t.length, kernelMs,
    byLabel: [...by].map(([label, e]) => ({ label, count: e.count, ms: e.ms, share: kernelMs ? e.ms / kernelMs : 0 })).sort((a, b) => b.ms - a.ms),
    quantized: t.length > 1 && t.every((x) => Math.abs(x.ms / q - Math.round(x.ms / q)) < 1e-6),
  };
}
