// `hrm-webgpu/advanced`: what apps rarely need, beside the public entry (src/index.ts). The kernels' choices and
// tuning knobs, the model's parts (HrmModel, HrmTokenizer, file sets with network settings), the KV syntax's
// tables, REFRACT's pieces (backends, corpora, scores, report renderers) and the types these refer to.
// Re-exports only; the reviewed list of names is in tests/package/api.test.ts.

/**
 * What apps rarely need: kernel choices and tuning knobs, `HrmModel` and `HrmTokenizer`, file sets with network
 * settings, the KV syntax's tables, REFRACT's backends, corpora, scores and report renderers.
 * @module hrm-webgpu/advanced
 */

// ---- GPU, runtime and kernel choices ----------------------------------------------------------------------
export { requestDevice, type DeviceWatch, type FastFeature, type OnOff } from './gpu/device.ts';
/** The errors of programming mistakes and internal fallbacks, and the CLIs' usage error. */
export { BindingSizeError, DTypeError, FeatureError, NotReplayableError, ShapeError, UsageError } from './errors.ts';
/**
 * Which kernels a `Gpu` runs where it has a choice, set per Gpu at `Gpu.create({ kernels })` (`KernelOptions`): the
 * tensor cores' schedule for bf16 prefill matmuls (the staged or direct kernel, operand prefetch, split-K: the same
 * numbers, another speed); whether bf16 prefill attention's products take the tensor cores (the default where they
 * pass their self-check) or stay in f32 (within a bf16 ulp of each other); whether full-precision decode attention
 * merges its chunks inside its split dispatch ('fold', the default) or in one of its own; whether a decode layer's
 * MLP on dense weights runs as two products ('separate', the default) or in one dispatch ('fold').
 */
export type { KernelOptions } from './kernels/policy.ts';
export { prefillMatmulPath } from './kernels/policy_matmul.ts';
/** The fast paths on a Gpu and why each is off (also in `gpu.summary.fastPaths`, with `fastFeatures` beside it). */
export { fastPaths } from './kernels/paths.ts';
export type { SgmatKernel, SgmatSchedule } from './kernels/matmul/sgmat_schedule.ts';
export { attentionTensorCoresUnavailable } from './kernels/attention/sdpa_mm.ts';
export type { DecodeMerge } from './kernels/attention/sdpa_one.ts';
export type { DecodeMlp } from './kernels/policy.ts';

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
export { kvSpec, KV_TYPES, KV_GROUP_SIZE, DEFAULT_REFERENCE_KV } from './hrm/kv-spec.ts';

// ---- REFRACT's pieces -------------------------------------------------------------------------------------
export type { ProgressFn, Stage } from './refract/runner.ts';
export type { HrmBackendOptions } from './refract/hrm-backend.ts';
export { BackendCapabilityError, type Backend } from './refract/backend.ts';
export { band, compositeScore } from './refract/score.ts';
export { PROMPTS_V01, type Prompt } from './refract/prompts.ts';
export {
  brownCorpus, defaultCorpus, defaultHaystack, BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS,
} from './refract/corpus.ts';
export { parseReport, REPORT_SCHEMA } from './refract/report/json.ts';
export type { TextOptions } from './refract/report/text.ts';
export type { HtmlOptions } from './refract/report/html.ts';
export { renderCompareTable, renderRepeatability, type CompareRow } from './refract/report/compare.ts';
/** The percentile keys of `kld_percentiles` and of `delta_p.percentiles` (llama.cpp's --kl-divergence report). */
export { DELTA_P_PERCENTILES, KLD_PERCENTILES } from './refract/axes/kld.ts';

// ---- types the exports refer to, so apps can name them ----------------------------------------------------
export type { Tensor } from './gpu/tensor.ts';
export type { DType } from './gpu/dtype.ts';
export type { BufferView, Dispatch, DispatchTiming, PassSpan, Recorder, Upload } from './gpu/gpu.ts';
export type { Capture } from './gpu/capture.ts';
export type { DeviceState, StateKey } from './gpu/registry.ts';
export type { ByteSource, Progress } from './io/sources.ts';
export type { NetOptions } from './io/http.ts';
export type { CacheOptions, HrmCache } from './hrm/cache.ts';
export type { CachePass, CacheSlot, SlotGeometry } from './hrm/slot.ts';
export type { HrmWeights, LayerWeights } from './hrm/weights.ts';
export type { Weight } from './hrm/layout.ts';
export type { Round } from './kernels/common/codes.ts';
export type { AttnMask, FullKV } from './kernels/attention/types.ts';
export type {
  CompletionOptions, CompletionResult, DecodeTokensOptions, KLDResult, KldOptions, Metadata, ModelMetadataOptions,
  TokenizeOptions, TrajectoryOptions, TrajectoryResult,
} from './refract/backend.ts';
export type { KldAccumulator, KldProgress, KldStatistics, PositionStats } from './refract/axes/kld.ts';
export type { PladAxisResult, PladOptions, PladRecord } from './refract/axes/plad.ts';
export type { RniahAxisResult, RniahCell, RniahOptions } from './refract/axes/rniah.ts';
export type { TrajectoryAxisResult, TrajectoryPromptRecord } from './refract/axes/trajectory.ts';
export type { BrownOptions } from './refract/corpus.ts';
export type { AxisScores, Band, CompositeScore, ReportScores } from './refract/score.ts';
export type { GtmBlock, KldBlock, PladBlock, RniahBlock } from './refract/report/json.ts';
