// End-to-end figures of the HRM model with random bf16 weights: prefill tok/s, decode tok/s after a prompt (greedy,
// as generation runs it: one captured step replayed per token, the argmax fed back on the GPU, a few steps queued
// ahead of the token being read), and where a decode step's time goes (dispatches, JS time, GPU time per kernel
// label from one profiled step), per KV-cache configuration. Also the bytes a decode token must read, which turn
// a bandwidth into a ceiling.
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { DecodeGraph, greedySteps } from '../../src/hrm/decode.ts';
import { cacheBytes, type HrmCache } from '../../src/hrm/cache.ts';
import { disposeWeights, type HrmWeights } from '../../src/hrm/weights.ts';
import { CACHES, type CacheName, type Settings } from '../harness/settings.ts';
import { deviceLoss } from '../harness/recover.ts';
import { addGc, gcWatch, now, stats, type GcFigure } from '../timing/stats.ts';
import { ablate, type Ablation } from './ablation.ts';
import {
  ceiling, promptIds, summarizeProfile, type CacheResult, type DecodeFigure, type ModelInfo, type PrefillFigure,
  type PrefillTimeline, type ProfileFigure,
} from './model-figures.ts';

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

async function readRow(t: Tensor): Promise<Float32Array> {
  try { return await t.readF32(); } finally { t.dispose(); }
}

export interface Clock { left(): number }

/** One decode repetition: each step's times, how steps ran, the profiled step (first repetition), GC pauses. */
interface DecodeRun {
  steps: Array<{ ms: number; encodeMs: number; dispatches: number }>;
  path: DecodeFigure['path'];
  profile: ProfileFigure | null;
  gc: GcFigure | null;
}

/** Runs the prefill, decode and profile measurements of one cache configuration. */
export class ModelBench {
  constructor(
    readonly gpu: Gpu, readonly model: HrmModel, readonly info: ModelInfo, readonly s: Settings, readonly clock: Clock,
    readonly log: (m: string) => void,
  ) {}

  private cache(name: CacheName, capacity: number): HrmCache {
    return this.model.newCache({ capacity, kv: CACHES[name], mode: 'after-prefill' });
  }

  /**
   * One prefill of `n` tokens into a fresh cache; times and dispatch count. `timing` 'profile': a pass and
   * timestamps per dispatch (Gpu.profileNext); 'timeline': timestamps per part's pass (Gpu.timelineNext).
   */
  private async prefillOnce(
    name: CacheName, n: number, seed: number, timing?: 'profile' | 'timeline',
  ): Promise<{ ms: number; encodeMs: number; dispatches: number }> {
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
      const spanMs = passes.length ? passes[passes.length - 1].endMs : 0;
      timeline = { wallMs: t.ms, encodeMs: t.encodeMs, passes, busyMs, spanMs };
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
  private async decodeOnce(name: CacheName, tokens: number, seed: number, profile: boolean): Promise<DecodeRun> {
    const { prompt } = this.s;
    const cache = this.cache(name, prompt + tokens + 1);
    let graph: DecodeGraph | null = null;
    try {
      const ids = promptIds(prompt, this.info.config.vocab_size, seed);
      let tok = argmax(await readRow(this.model.forward(ids, cache, { mask: 'prefix', logits: 'last' })));
      // One graph over every step: its attention reaches the capacity (generate builds one a reach, stepper.ts).
      // With --decode-step persistent its MLPs run on the persistent kernel, at the grid measured here, untimed.
      await this.model.prepareDecode();
      const built = DecodeGraph.tryBuild(this.model, cache, 'greedy', cache.capacity);
      graph = built instanceof DecodeGraph ? built : null;
      const steps = [];
      const gc = gcWatch();
      if (graph) {
        // As generate() runs it (greedySteps: steps queued by QueueDepth unless --ahead fixes their number), each
        // token read while later steps run; each step's JavaScript is the time its next() takes to return.
        const g = graph;
        const encodeMs: number[] = [];
        const next = () => {
          const t0 = now();
          const p = g.next();
          encodeMs.push(now() - t0);
          return p;
        };
        const timed = { feed: (t: number) => g.feed(t), next };
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
      const path: DecodeFigure['path'] = graph
        ? { replayed: graph.size, ...(graph.persistent ? { persistent: true as const } : {}) }
        : { recorded: (built as { reason: string }).reason };
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
        const step = () => this.model.forward([tok], cache, { mask: 'causal', logits: 'last' });
        prof.ablation = await ablate(this.gpu, () => cache.at(cache.offset - 1, step), { queued: true });
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
    const reps: DecodeRun[] = [];
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
