// `hrm-webgpu/advanced`: what apps rarely need, beside the public entry (src/index.ts). The kernels' choices and
// tuning knobs, the model's parts (HrmModel, HrmTokenizer, file sets with network settings), the KV syntax's
// tables and the types these refer to; REFRACT's pieces are `hrm-webgpu/refract` (src/refract/index.ts). No
// plumbing (dispatches, recorders, uploads, buffer views, per-device state) and no kernel probes. Re-exports only;
// the reviewed list of names, with the reason for each, is in tests/package/api.test.ts.

/**
 * What apps rarely need: kernel choices and tuning knobs, `HrmModel` and `HrmTokenizer`, file sets with network
 * settings, the KV syntax's tables. REFRACT's backends, corpora, scores and renderers are `hrm-webgpu/refract`.
 * @module hrm-webgpu/advanced
 */

// ---- GPU, runtime and kernel choices ----------------------------------------------------------------------
export type { OnOff } from './gpu/device.ts';
export type { FastFeature } from './gpu/features.ts';
/** The errors of programming mistakes and internal fallbacks, and the CLIs' usage error. */
export { BindingSizeError, DTypeError, FeatureError, NotReplayableError, ShapeError, UsageError } from './errors.ts';
/**
 * Which kernels a `Gpu` runs where it has a choice, set per Gpu at `Gpu.create({ kernels })` (`KernelOptions`): the
 * tensor cores' schedule for bf16 prefill matmuls (the staged or direct kernel, operand prefetch, split-K: the same
 * numbers, another speed); whether bf16 prefill attention's products take the tensor cores (the default where they
 * pass their self-check) or stay in f32 (within a bf16 ulp of each other); whether full-precision decode attention
 * merges its chunks inside its split dispatch ('fold', the default) or in one of its own; whether a decode layer's
 * MLP on dense weights runs as two products ('separate', the default) or in one dispatch ('fold'). Which paths a
 * Gpu takes, and why any is off, is `gpu.summary.fastPaths`.
 */
export type { DecodeMerge, DecodeMlp, DecodeStep, KernelOptions, TurboDecode } from './kernels/plan/options.ts';
export type { SgmatKernel, SgmatSchedule } from './kernels/matmul/sgmat-schedule.ts';

// ---- the model's parts ------------------------------------------------------------------------------------
/** Model file sets by kind: a local folder (Node, Deno), a base URL (with network settings), browser `File`s. */
export { dirFiles, fileListFiles, urlFiles } from './hrm/files.ts';
/**
 * A URL's whole body as a stream, with the downloads' retries, idle timeouts and Range resumption, for files too
 * large to hold in memory (the demo streams checkpoints into Cache Storage with it).
 */
export { streamDownload, type StreamedDownload } from './io/http.ts';
export { parseConfig, cacheSlots, type Warn } from './hrm/config.ts';
export { HrmModel, type ForwardOptions, type MaskSpec } from './hrm/model.ts';
export {
  HrmTokenizer, type HrmTokenizerOptions, type SpecialTokenIds, type TokenizerConfigJson,
} from './hrm/tokenizer.ts';
export {
  parseConditions, CONDITION_TOKENS, DEFAULT_CONDITION, HRM_PROMPT_TEMPLATE, type FormatPromptOptions,
} from './hrm/prompt.ts';
/** The KV syntax's tables, and a KV setting as bits per side (what the cache takes). */
export { kvStorage, KV_TYPES, KV_GROUP_SIZE, DEFAULT_REFERENCE_KV } from './hrm/kv-spec.ts';

// ---- types the exports refer to, so apps can name them ----------------------------------------------------
export type { Tensor } from './tensor/tensor.ts';
export type { DType } from './tensor/dtype.ts';
export type { DispatchTiming, PassSpan } from './gpu/gpu.ts';
export type { ByteSource, Progress } from './io/sources.ts';
export type { NetOptions } from './io/request.ts';
export type { CacheOptions, HrmCache } from './hrm/cache.ts';
export type { CachePass, CacheSlot, SlotGeometry } from './hrm/slot.ts';
export type { HrmWeights, LayerWeights } from './hrm/weights.ts';
export type { Weight } from './hrm/layout.ts';
export type { Round } from './kernels/common/codes.ts';
export type { AttnMask, CacheSide, FullKV, TurboKV } from './kernels/attention/types.ts';
export type { TurboType } from './kernels/turbo/format.ts';
