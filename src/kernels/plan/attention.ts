// The planner's attention half (plan/options.ts): which of sdpa's four paths a call takes, whether prefill attention's
// products run on the tensor cores, the decode merge, how a cache slot's step runs (a decode step's append fused
// into attention, or append then attend) and the verdicts on attention's fast paths for the adapter summary. The
// facts it decides from are the kernels' own (sdpa-one.ts: shapes it takes; sdpa-mm.ts: budget, self-check).
import type { Gpu } from '../../gpu/gpu.ts';
import type { OnOff } from '../../gpu/device.ts';
import { ShapeError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import type { AttnMask, CacheSide, FullKV, QuantKV, TurboKV } from '../attention/types.ts';
import { oneShape, ONE_WG } from '../attention/sdpa-one.ts';
import { attentionTensorCoresUnavailable, sdpaMmFits, tensorCoresFit } from '../attention/sdpa-mm.ts';
import { turboOneFits } from '../turbo/turbo-one.ts';
import { batchedSgmatUnavailable } from '../matmul/sgmat-caps.ts';
import { kernelPolicy, mergeFor, type DecodeMerge } from './options.ts';
import { CPU_DRIVER, onOff } from './matmul.ts';

/** Up to this many queries the decode path (key axis split across workgroups) is used by default. */
export const DECODE_MAX_QUERIES = 4;

/**
 * 'one' (sdpa_one.wgsl: one query seeing every key), 'decode' (keys split across workgroups), 'matmul' (sdpa-mm.ts:
 * two batched matmuls), 'prefill' (sdpa_prefill.wgsl: the reference, and CPU drivers' path).
 */
export type AttentionPath = 'prefill' | 'decode' | 'one' | 'matmul';

/** One sdpa call as the planner sees it. */
export interface AttentionCall {
  heads: number; seq: number; dim: number; kvLen: number; kvBf16: boolean; mask: AttnMask['kind']; round?: Round;
  /** Both cache sides start at a multiple of 16 bytes (sdpa_one reads 16-byte units). */
  aligned: boolean;
}

/** What a call forces (tests, benchmarks: SdpaOptions.path and merge). */
export interface AttentionForce { path?: AttentionPath; merge?: DecodeMerge }

export interface AttentionPlan {
  path: AttentionPath;
  /** Path 'one': the merge folded into the split or a dispatch of its own. */
  merge: DecodeMerge;
  /** Path 'matmul': the products on the tensor cores (sdpa_mm_f16.wgsl) instead of f32. */
  tensorCores: boolean;
}

/**
 * The plan of one sdpa call; `force` names a path or merge (tests, benchmarks), a forced path that cannot take the
 * call being a ShapeError. By default: 'one' for a single query that sees every key when the head dim suits it,
 * else 'decode' for S <= DECODE_MAX_QUERIES, else on a GPU 'matmul' where its score matrix fits, else 'prefill';
 * the Gpu's merge; the tensor cores where the Gpu allows them and they take the call.
 */
export function planAttention(gpu: Gpu, c: AttentionCall, force: AttentionForce = {}): AttentionPlan {
  const merge = mergeFor(gpu, 'sdpa', force.merge);
  const oneFits = c.seq === 1 && (c.mask === 'none' || c.mask === 'causal') && oneShape(c.dim, c.kvBf16) && c.aligned;
  if (force.path === 'one' && !oneFits) {
    throw new ShapeError('sdpa', `path 'one' needs one query (got ${c.seq}) seeing every key (mask ${c.mask}), a head `
      + `dim whose 16-byte units per row divide ${ONE_WG} (got ${c.dim}) and 16-byte aligned K/V`);
  }
  const mmFits = sdpaMmFits(gpu, c.heads, c.seq, c.kvLen);
  if (force.path === 'matmul' && !mmFits) {
    const scores = `${c.heads} heads x ${c.seq} queries x ${c.kvLen} keys`;
    throw new ShapeError('sdpa', `path 'matmul': the scores of ${scores} exceed its budget`);
  }
  const decode = c.seq <= DECODE_MAX_QUERIES;
  const path = force.path ?? (oneFits ? 'one' : decode ? 'decode' : !gpu.cpu && mmFits ? 'matmul' : 'prefill');
  const tensorCores = path === 'matmul' && kernelPolicy(gpu).attentionTensorCores && tensorCoresFit(gpu, c)
    && attentionTensorCoresUnavailable(gpu) === null;
  return { path, merge, tensorCores };
}

/** A cache slot's step as one forward sees it. */
export interface SlotStep { seq: number; mask: AttnMask; k: CacheSide; v: CacheSide; shadowed: boolean }

/**
 * How a slot runs a step: a decode step (one position seeing every key, no full-precision shadow) into two
 * full-precision sides appends inside sdpa_one's split ('full-one', appendAttendOne, in the Gpu's merge), into two
 * quantized sides inside qsdpa_one's scores ('quant-one', qsdpaOneAppend): the same bits as append then attend,
 * fewer dispatches. Into two TurboQuant sides, turbo_one reads the codes ('turbo-one', turboAppendAttend: the same
 * codes, the attention up to float order) unless the Gpu's policy names the general path. Everything else, and a
 * fused kernel that declines the shapes (it returns null), composes; `reason` says why where a turbo side is in it.
 */
export type StepPlan =
  | { kind: 'full-one'; k: FullKV; v: FullKV; merge: DecodeMerge }
  | { kind: 'quant-one'; k: QuantKV; v: QuantKV }
  | { kind: 'turbo-one'; k: TurboKV; v: TurboKV }
  | { kind: 'composed'; reason?: string };

export function planStep(gpu: Gpu, s: SlotStep): StepPlan {
  const { k, v } = s;
  if (s.seq !== 1 || s.shadowed || (s.mask.kind !== 'none' && s.mask.kind !== 'causal')) return { kind: 'composed' };
  if (k.kind === 'full' && v.kind === 'full') return { kind: 'full-one', k, v, merge: kernelPolicy(gpu).decodeMerge };
  if (k.kind === 'quant' && v.kind === 'quant') return { kind: 'quant-one', k, v };
  if (k.kind !== 'turbo' && v.kind !== 'turbo') return { kind: 'composed' };
  if (k.kind !== 'turbo' || v.kind !== 'turbo') {
    return { kind: 'composed', reason: 'a TurboQuant side beside a full or quantized one: decoded, then sdpa' };
  }
  if (kernelPolicy(gpu).turboDecode === 'general') {
    return { kind: 'composed', reason: "DeviceOptions.kernels.turboDecode is 'general'" };
  }
  if (!turboOneFits(k.headDim)) {
    return { kind: 'composed', reason: `turbo_one takes head dims up to 256 (${k.headDim})` };
  }
  return { kind: 'turbo-one', k, v };
}

/**
 * The kernel that attends over a slot's sides: two quantized sides, the quantized kernel (mlx-lm's quantized
 * SDPA); otherwise the full-precision one, a quantized or TurboQuant side read decoded (asymmetric configs MLX cannot
 * express, and TurboQuant).
 */
export function planAttend(k: CacheSide, v: CacheSide):
  { kernel: 'qsdpa'; k: QuantKV; v: QuantKV } | { kernel: 'sdpa' } {
  return k.kind === 'quant' && v.kind === 'quant' ? { kernel: 'qsdpa', k, v } : { kernel: 'sdpa' };
}

/** Attention's fast paths on `gpu`: on, or off and why (a feature, a CPU driver, a self-check, an option). */
export function attentionPaths(gpu: Gpu): Record<string, OnOff> {
  const p = kernelPolicy(gpu);
  const tensorCores = batchedSgmatUnavailable(gpu) ?? (gpu.cpu ? CPU_DRIVER : attentionTensorCoresUnavailable(gpu))
    ?? (p.attentionTensorCores ? null : 'DeviceOptions.kernels.attentionTensorCores is false');
  const merged = p.decodeMerge === 'fold' ? null : "DeviceOptions.kernels.decodeMerge is 'separate'";
  const turbo = p.turboDecode === 'fused' ? null : "DeviceOptions.kernels.turboDecode is 'general'";
  return onOff({
    'prefill attention on tensor cores (bf16)': tensorCores,
    'decode attention merged in its split (one dispatch)': merged,
    'decode attention over TurboQuant caches read from the codes': turbo,
  });
}
