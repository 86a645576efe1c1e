// hrm-webgpu's public API, the one entry file of the package (`import ... from 'hrm-webgpu'`). It runs in
// browsers, Deno and Node. Shaped after transformers.js and WebLLM: a factory loads a model with byte progress,
// generation streams (or returns text at once), errors are typed; options are grouped as mlx-lm's (a sampler, a
// cache spec). This file only re-exports, and only what an app needs: the kernels' knobs, the model's parts and
// REFRACT's internals are under `hrm-webgpu/advanced` (src/advanced.ts). tests/package/api.test.ts holds the
// reviewed list of names, so a new public name is a deliberate change.
/// <reference types="@webgpu/types" preserve="true" />

/**
 * HRM-Text and REFRACT on WebGPU (browsers, Deno, Node). Load a model, then generate:
 * ```ts
 * import { generateText, loadModel } from 'hrm-webgpu';
 * const lm = await loadModel(); // the embedded model; or a folder, a URL, browser Files
 * const { text } = await generateText(lm, 'The jury said', { maxTokens: 32, sampler: { temperature: 0.7, seed: 1 } });
 * ```
 * Sampling is `sampler` (`SamplerOptions`), the KV cache `cache` (`CacheSpec`, llama.cpp types such as
 * `ctk=q8_0,ctv=q4_0`). Kernel choices, the model's parts and REFRACT's pieces are in `hrm-webgpu/advanced`.
 * @module hrm-webgpu
 */

// ---- GPU and runtime --------------------------------------------------------------------------------------
/** The GPU context (device, buffer pool, kernels' command encoder). `await Gpu.create()` opens one. */
export { Gpu } from './kernels/gpu.ts';
/** The adapter a `Gpu` runs on, the runtime, and whether it is a CPU implementation of WebGPU. */
export { isSoftwareAdapter, runtimeName, type AdapterSummary, type DeviceOptions, type Runtime } from './gpu/device.ts';
/** Errors thrown on purpose are `HrmError`s; the subclass says what went wrong (more in `hrm-webgpu/advanced`). */
export {
  DeviceLostError, FormatError, GpuOutOfMemoryError, GpuValidationError, HrmError, InputError, NetworkError,
  NoWebGpuError,
} from './errors.ts';

// ---- loading a model --------------------------------------------------------------------------------------
/** Load a model from a folder, a URL, browser `File`s or a `ModelFiles` set (none: the embedded model). */
export {
  loadModel, loadConfig, loadConfigs, type LoadModelOptions, type LoadedModel, type LoadStage, type ProgressInfo,
} from './hrm/load.ts';
export { embeddedModelUrl, modelFiles, EMBEDDED_MODEL, type ModelFiles, type ModelSource } from './hrm/files.ts';
/** "Will it fit" checks before a download: parameters, weight bytes (dense or quantized), cache bytes. */
export { parameterCount, type HrmConfig, type QuantConfig, type QuantSpec } from './hrm/config.ts';
export { checkpointBytes } from './hrm/quantized.ts';
export { cacheBytes, type ActDtype, type KvStorage, type QuantMode } from './hrm/cache.ts';

// ---- generation and logits --------------------------------------------------------------------------------
export {
  generate, generateText, logits, type CacheSpec, type GenerateEvent, type GenerateModel, type GenerateOptions,
  type GenerateStats, type GenerationResult, type LogitsOptions,
} from './hrm/generate.ts';
export type { SamplerOptions } from './hrm/sampling.ts';
/** HRM's prompt envelope and condition tags (direct, cot, synth, noisy), or a checkpoint's own chat template. */
export { formatPrompt, type Condition } from './hrm/prompt.ts';
/** The one KV-cache syntax (llama.cpp's `ctk=q8_0,ctv=q4_0`) of the library, the CLIs and REFRACT. */
export { parseKvConfig, type KvConfig, type KvSide } from './hrm/kv-spec.ts';

// ---- REFRACT ----------------------------------------------------------------------------------------------
/** REFRACT: `runRefract({ backend: new HrmBackend(lm), model, candidate })` scores a KV config against the
 *  reference. */
export { runRefract, type RunRefractOptions } from './refract/runner.ts';
export { HrmBackend } from './refract/hrm-backend.ts';
export { RefractError } from './refract/backend.ts';
/** REFRACT's KLD axis alone (KLD@D of a candidate KV cache against the reference over a corpus). */
export { runKld, type KldAxisOptions, type KldAxisResult } from './refract/axes/kld.ts';
/** REFRACT reports: the JSON object and its text and HTML renderings. */
export { toJsonString, type RefractReport } from './refract/report/json.ts';
export { renderTextReport } from './refract/report/text.ts';
export { renderHtmlReport } from './refract/report/html.ts';
