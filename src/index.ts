// hrm-webgpu's public API, the one entry file of the package (`import ... from 'hrm-webgpu'`). It runs in
// browsers, Deno and Node. Shaped after transformers.js and WebLLM: a factory loads a model with byte progress,
// generation streams (or returns text at once), errors are typed. Everything here re-exports or wraps modules
// under src/; the wrappers only fill in what an app should not have to know (the model's tokenizer and chat
// template, KV strings, which Gpu to use).
/// <reference types="@webgpu/types" preserve="true" />
import { Gpu } from './gpu/gpu.ts';
import { InputError } from './errors.ts';
import { dirFiles, fileListFiles, urlFiles, type ModelFiles } from './hrm/files.ts';
import { loadModel as loadFiles, type LoadStage, type LoadedModel } from './hrm/load.ts';
import { generate as generateStream, type GenerateEvent, type GenerateOptions, type GenerateStats } from './hrm/generate.ts';
import { kvSpecOf } from './hrm/kv-string.ts';
import type { ActDtype, KvSpec } from './hrm/cache.ts';
import type { QuantSpec } from './hrm/config.ts';
import type { DeviceOptions } from './gpu/device.ts';
import { runtimeName } from './gpu/device.ts';

// ---- GPU and runtime --------------------------------------------------------------------------------------
/** The GPU context (device, buffer pool, kernels' command encoder). `await Gpu.create()` opens one. */
export { Gpu } from './gpu/gpu.ts';
/** The adapter a `Gpu` runs on, the runtime, and whether it is a CPU implementation of WebGPU. */
export {
  isSoftwareAdapter, runtimeName, requestDevice, type AdapterSummary, type DeviceOptions, type FastFeature, type OnOff,
  type Runtime,
} from './gpu/device.ts';
/**
 * Which kernels a `Gpu` runs where it has a choice: the path of bf16 prefill matmuls (tensor cores or not, and why)
 * and the tensor cores' schedule (the staged or direct kernel, operand prefetch, split-K: the same numbers, another speed);
 * whether bf16 prefill attention's products take the tensor cores (the default where they pass their self-check) or
 * stay in f32 (within a bf16 ulp of each other); whether full-precision decode attention merges its chunks inside
 * its split dispatch ('fold', the default) or in one of its own (quantized caches always merge in their values
 * pass's last chunk).
 */
export { prefillMatmulPath } from './kernels/policy_matmul.ts';
/** The fast paths on a Gpu and why each is off (also in `gpu.summary.fastPaths`, with `fastFeatures` beside it). */
export { fastPaths } from './kernels/paths.ts';
export { type SgmatKernel, type SgmatSchedule } from './kernels/matmul/sgmat_schedule.ts';
export { attentionTensorCoresUnavailable } from './kernels/attention/sdpa_mm.ts';
export { type DecodeMerge } from './kernels/attention/sdpa_one.ts';
/** Every error thrown on purpose is an `HrmError`; the subclass says what went wrong. */
export * from './errors.ts';

// ---- models -----------------------------------------------------------------------------------------------
/** Model file sets: a local folder (Node, Deno), a base URL, or browser `File`s (directory picker, drop). */
export { dirFiles, fileListFiles, urlFiles, type ModelFiles } from './hrm/files.ts';
/** Config only (no weights): for "will it fit" checks before a download. `loadConfigs` adds config.json's
 *  `quantization` block (MLX-quantized checkpoints; null for dense ones). */
export { loadConfig, loadConfigs, type LoadedModel, type LoadStage } from './hrm/load.ts';
export { parseConfig, parameterCount, cacheSlots, type HrmConfig, type QuantConfig, type QuantSpec } from './hrm/config.ts';
/** GPU bytes of a config's weight matrices, dense or quantized with a `QuantSpec` (for "will it fit" checks). */
export { checkpointBytes } from './hrm/quantized.ts';
export { cacheBytes, type ActDtype, type KvSpec, type QuantMode } from './hrm/cache.ts';
export { HrmModel, type ForwardOptions, type MaskSpec } from './hrm/model.ts';
export { HrmTokenizer } from './hrm/tokenizer.ts';
/** HRM's prompt envelope and condition tags (direct, cot, synth, noisy), or a checkpoint's own chat template. */
export { formatPrompt, parseConditions, CONDITION_TOKENS, DEFAULT_CONDITION, HRM_PROMPT_TEMPLATE, type Condition, type FormatPromptOptions } from './hrm/prompt.ts';
export type { GenerateEvent, GenerateStats } from './hrm/generate.ts';

/** The model embedded in the package: hrm-text-brown-6m (6.5 M parameters, trained on the Brown corpus). */
export const EMBEDDED_MODEL = 'hrm-text-brown-6m';
// A variable, not a literal: bundlers rewrite `new URL('literal', import.meta.url)` into an asset, and this is a folder.
const EMBEDDED_PATH = `../models/${EMBEDDED_MODEL}/`;

/**
 * Where the embedded model's files are: next to `dist/` in the installed package (a `file:` URL under Node and
 * Deno). In a browser this is only reachable when the package's files are served as they are (a dev server, a
 * CDN such as jsDelivr); a bundled app copies the folder and passes its URL to `loadModel` instead.
 */
export function embeddedModelUrl(): URL {
  return new URL(EMBEDDED_PATH, import.meta.url);
}

/** What `loadModel` accepts: a folder path, an http(s) base URL, browser `File`s, or a `ModelFiles` set. */
export type ModelSource = string | URL | ModelFiles | Iterable<File>;

/** The file set of a model source; no source means the embedded model. */
export function modelFiles(source?: ModelSource): ModelFiles {
  if (source === undefined) source = embeddedModelUrl();
  if (source instanceof URL) {
    if (source.protocol !== 'file:') return urlFiles(source.href);
    return runtimeName() === 'browser' ? urlFiles(source.href) : dirFiles(decodeURIComponent(source.pathname));
  }
  if (typeof source === 'string') return /^https?:\/\//.test(source) ? urlFiles(source) : dirFiles(source);
  if (typeof (source as ModelFiles).text === 'function' && typeof (source as ModelFiles).bytes === 'function') return source as ModelFiles;
  if (typeof (source as Iterable<File>)[Symbol.iterator] === 'function') return fileListFiles(source as Iterable<File>);
  throw new InputError('loadModel', 'model source must be a folder path, a URL, browser Files or a ModelFiles set');
}

/** One progress report of `loadModel` (transformers.js's `progress_callback` reports the same fields). */
export interface ProgressInfo {
  /** What is being read: config.json, the tokenizer, or the weights (byte counts). */
  stage: LoadStage;
  /** Done so far (bytes for the weights). */
  loaded: number;
  /** All of this stage (bytes for the weights). */
  total: number;
  /** loaded / total in percent. */
  progress: number;
}

/** Options of `loadModel`. */
export interface LoadModelOptions {
  /** The GPU to load onto; default: `Gpu.create(device)`. The model's `model.gpu.destroy()` frees it. */
  gpu?: Gpu;
  /** Adapter options when no `gpu` is given. */
  device?: DeviceOptions;
  /** 'f32' (the precise reference, default) or 'bf16' (rounds each op's output where MLX does). */
  dtype?: ActDtype;
  /**
   * Quantize the dense weights on the GPU while loading, bit for bit `mx.quantize` (e.g. `{ bits: 8, groupSize: 64 }`;
   * bits 2, 3, 4, 5, 6 or 8, group 32, 64 or 128). Checkpoints stored quantized (MLX's layout) load as stored anyway.
   */
  quantize?: QuantSpec;
  /** Called as the config, tokenizer and weights load; weights report bytes. */
  progressCallback?: (p: ProgressInfo) => void;
}

/**
 * Load a model (config, tokenizer, chat template, weights) onto a GPU. No source: the embedded model.
 * @example const lm = await loadModel(); // or loadModel('https://huggingface.co/sapientinc/HRM-Text-1B/resolve/main')
 */
export async function loadModel(source?: ModelSource, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  const files = modelFiles(source);
  const gpu = opts.gpu ?? (await Gpu.create(opts.device));
  const cb = opts.progressCallback;
  try {
    return await loadFiles(gpu, files, {
      dtype: opts.dtype,
      quantize: opts.quantize,
      onProgress: cb && ((stage, loaded, total) => cb({ stage, loaded, total, progress: total ? (100 * loaded) / total : 0 })),
    });
  } catch (e) {
    if (!opts.gpu) gpu.destroy(); // the device this call opened goes with the failed load
    throw e;
  }
}

// ---- generation and logits --------------------------------------------------------------------------------
/** A llama.cpp KV string (`ctk=q8_0,ctv=q4_0`) as bits per cache side; absent: full precision. An empty string is
 *  an `InputError` (it names no cache type). */
export function kvSpec(kv?: string): KvSpec {
  return kv === undefined ? { k: null, v: null } : kvSpecOf(kv, 'kv');
}

/** Options of `generate`: the sampling, stop and KV settings of the `hrm generate` command, and an abort signal. */
export interface GenerationOptions extends Omit<GenerateOptions, 'kv' | 'chatTemplate'> {
  /** The KV cache: a llama.cpp string (`ctk=q8_0,ctv=q4_0`) or bits per side. Default: full precision. */
  kv?: string | KvSpec;
}

/**
 * Stream a completion: `{ type: 'text' }` events as whole characters arrive, then one `{ type: 'done' }` with the
 * text and timing. Greedy by default (`temperature: 0`); `signal` stops it between tokens (stopReason 'aborted').
 */
export function generate(lm: LoadedModel, prompt: string, opts: GenerationOptions = {}): AsyncGenerator<GenerateEvent> {
  const kv = typeof opts.kv === 'string' || opts.kv === undefined ? kvSpec(opts.kv) : opts.kv;
  return generateStream(lm.model, lm.tokenizer, prompt, { ...opts, kv, chatTemplate: lm.chatTemplate });
}

/** What `generateText` returns. */
export interface GenerationResult {
  /** The completion (without the prompt; cut before a stop string). */
  text: string;
  /** Token ids, timing, stop reason, cache size, decode path. */
  stats: GenerateStats;
}

/** Generate at once: the completion's text and stats. `onText` sees each piece as it arrives. */
export async function generateText(lm: LoadedModel, prompt: string, opts: GenerationOptions & { onText?: (text: string) => void } = {}): Promise<GenerationResult> {
  for await (const ev of generate(lm, prompt, opts)) {
    if (ev.type === 'text') opts.onText?.(ev.text);
    else return { text: ev.text, stats: ev.stats };
  }
  throw new InputError('generate', 'generation ended without a result');
}

/** Options of `logits`. */
export interface LogitsOptions {
  /** 'prefix' (HRM's bidirectional prompt block, default) or 'causal'. */
  mask?: 'prefix' | 'causal';
  /** KV cache, quantized before the pass (every attention reads quantized K/V). Default: full precision. */
  kv?: string;
}

/** f32 logits of `ids` with a fresh cache: `ids.length * vocab_size` values, row-major. */
export function logits(lm: LoadedModel, ids: number[], opts: LogitsOptions = {}): Promise<Float32Array> {
  return lm.model.logits(ids, { mask: opts.mask ?? 'prefix', kv: kvSpec(opts.kv) });
}

// ---- KV strings and REFRACT -------------------------------------------------------------------------------
/** Parse a KV-cache string as REFRACT writes it (`ctk=q8_0,ctv=q4_0`; a missing side is f16) into both sides' types and bits. */
export { parseKvConfig, KV_TYPES, KV_GROUP_SIZE, DEFAULT_REFERENCE_KV, type KvConfig, type KvSide } from './hrm/kv-string.ts';
/** REFRACT: `runRefract({ backend: new HrmBackend(lm), model, candidate })` scores a KV config against the reference. */
export { runRefract, type RunRefractOptions, type ProgressFn, type Stage } from './refract/runner.ts';
/** REFRACT's KLD axis alone (KLD@D of a candidate KV cache against the reference over a corpus). */
export { runKld, type KldAxisOptions } from './refract/axes/kld.ts';
export { HrmBackend, type HrmBackendOptions } from './refract/hrm-backend.ts';
export { BackendCapabilityError, RefractError, type Backend } from './refract/backend.ts';
export { band, compositeScore } from './refract/score.ts';
export { PROMPTS_V01, type Prompt } from './refract/prompts.ts';
export { brownCorpus, defaultCorpus, defaultHaystack, BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS } from './refract/corpus.ts';
/** REFRACT reports: the JSON object and its text, HTML and comparison renderings. */
export { parseReport, toJsonString, REPORT_SCHEMA, type RefractReport } from './refract/report/json.ts';
export { renderTextReport, type TextOptions } from './refract/report/text.ts';
export { renderHtmlReport, type HtmlOptions } from './refract/report/html.ts';
export { renderCompareTable, renderRepeatability, type CompareRow } from './refract/report/compare.ts';

// ---- types the exports above refer to, so apps can name them ----------------------------------------------
export type { Tensor } from './gpu/tensor.ts';
export type { DType } from './gpu/dtype.ts';
export type { BufferView, Dispatch, DispatchTiming, PassSpan, Recorder, Upload } from './gpu/gpu.ts';
export type { Capture } from './gpu/capture.ts';
export type { DeviceWatch } from './gpu/device.ts';
export type { ByteSource, Progress } from './io/sources.ts';
export type { CacheOptions, HrmCache } from './hrm/cache.ts';
export type { CachePass, CacheSlot, SlotGeometry } from './hrm/slot.ts';
export type { HrmWeights, LayerWeights, Weight } from './hrm/weights.ts';
export type { Round } from './kernels/common/codes.ts';
export type { HrmTokenizerOptions, SpecialTokenIds, TokenizerConfigJson } from './hrm/tokenizer.ts';
export type { CompletionOptions, CompletionResult, DecodeTokensOptions, KLDResult, KldOptions, Metadata, ModelMetadataOptions, TokenizeOptions, TrajectoryOptions, TrajectoryResult } from './refract/backend.ts';
export type { KldAccumulator, KldAxisResult, KldProgress, KldStatistics, PositionStats } from './refract/axes/kld.ts';
/** The percentile keys of `kld_percentiles` and of `delta_p.percentiles` (llama.cpp's --kl-divergence report). */
export { DELTA_P_PERCENTILES, KLD_PERCENTILES } from './refract/axes/kld.ts';
export type { AttnMask, FullKV } from './kernels/attention/types.ts';
export type { Warn } from './hrm/config.ts';
export type { NetOptions } from './io/http.ts';
export type { PladAxisResult, PladOptions, PladRecord } from './refract/axes/plad.ts';
export type { RniahAxisResult, RniahCell, RniahOptions } from './refract/axes/rniah.ts';
export type { TrajectoryAxisResult, TrajectoryPromptRecord } from './refract/axes/trajectory.ts';
export type { BrownOptions } from './refract/corpus.ts';
export type { AxisScores, Band, CompositeScore, ReportScores } from './refract/score.ts';
export type { GtmBlock, KldBlock, PladBlock, RniahBlock } from './refract/report/json.ts';
