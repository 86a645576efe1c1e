// What the model suite reports (model.ts measures it): prefill, decode and profile figures per KV-cache
// configuration, the model's byte accounting, and the bytes a decode token must read, which turn a bandwidth into a
// ceiling.
import type { PassSpan } from '../../src/gpu/gpu.ts';
import { stackCalls, type HrmConfig } from '../../src/hrm/config.ts';
import type { KvStorage } from '../../src/hrm/cache.ts';
import type { CacheName } from '../harness/settings.ts';
import { onQuantumGrid } from '../timing/calls.ts';
import type { GcFigure, Stats } from '../timing/stats.ts';
import type { Ablation } from './ablation.ts';
import { H200_BYTES_PER_S } from './figures.ts';

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
  /**
   * Dispatches of the replayed step (`persistent`: its MLPs ran on the persistent kernel, --decode-step), or why
   * each step was recorded instead.
   */
  path: { replayed: number; persistent?: true } | { recorded: string };
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
  kv: KvStorage;
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
  /**
   * Bytes (bf16, or the run's quantized weights) of one stack (all layers), of lm_head, and read per decode token
   * (stack calls x stack + lm_head).
   */
  stackBytes: number;
  lmHeadBytes: number;
  weightBytesPerToken: number;
  stackCalls: number;
}

/**
 * The model's byte accounting at `bytesPerWeight` (2: bf16; quantized weights: quantizedBytesPerValue(spec)), so
 * that the ceiling of a quantized run counts the bytes it reads.
 */
export function modelInfo(name: string, c: HrmConfig, parameters: number, bytesPerWeight = 2): ModelInfo {
  const h = c.hidden_size, a = c.num_attention_heads * c.head_dim, i = c.intermediate_size;
  const layer = 4 * a * h + h * a + 2 * i * h + h * i;
  const stackBytes = bytesPerWeight * layer * c.num_layers_per_stack;
  const lmHeadBytes = bytesPerWeight * c.vocab_size * h;
  return {
    name, config: c, parameters, stackBytes, lmHeadBytes,
    weightBytesPerToken: stackCalls(c) * stackBytes + lmHeadBytes, stackCalls: stackCalls(c),
  };
}

export function ceiling(
  info: ModelInfo, bytesPerPosition: number, context: number, streamGBps: number | null,
): Ceiling {
  const kvBytes = bytesPerPosition * context;
  const bytesPerToken = info.weightBytesPerToken + kvBytes;
  return {
    weightBytes: info.weightBytesPerToken, kvBytes, bytesPerToken,
    tokPerS: streamGBps ? (streamGBps * 1e9) / bytesPerToken : null,
    tokPerSH200: H200_BYTES_PER_S / bytesPerToken,
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

/** Per-label totals of one profiled step, largest first. */
export function summarizeProfile(
  t: Array<{ label: string; ms: number }>, dispatches: number, context: number,
): ProfileFigure {
  const by = new Map<string, { count: number; ms: number }>();
  for (const x of t) {
    const e = by.get(x.label) ?? { count: 0, ms: 0 };
    e.count++;
    e.ms += x.ms;
    by.set(x.label, e);
  }
  const kernelMs = t.reduce((a, x) => a + x.ms, 0);
  return {
    context, dispatches, profiled: t.length, kernelMs,
    byLabel: [...by].map(([label, e]) => ({ label, count: e.count, ms: e.ms, share: kernelMs ? e.ms / kernelMs : 0 }))
      .sort((a, b) => b.ms - a.ms),
    quantized: onQuantumGrid(t.map((x) => x.ms)),
  };
}
