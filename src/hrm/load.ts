// Load a whole model: config, tokenizer (+ chat template), checkpoint (one file, shards, or MLX-native), onto a GPU.
import { checkOptions, FormatError } from '../errors.ts';
import { Gpu } from '../kernels/gpu.ts';
import type { DeviceOptions } from '../gpu/device.ts';
import { Checkpoint, SafetensorsFile } from '../io/safetensors.ts';
import { parseConfig, parseQuantization, type HrmConfig, type QuantConfig, type QuantSpec,
  type Warn } from './config.ts';
import { modelFiles, type ModelFiles, type ModelSource } from './files.ts';
import { HrmModel } from './model.ts';
import { HrmTokenizer } from './tokenizer.ts';
import { loadWeights } from './weights.ts';
import type { ActDtype } from './cache.ts';

export interface LoadedModel {
  config: HrmConfig;
  /** Null when the folder has no tokenizer.json (logits-only checkpoints such as the MLX fixtures). */
  tokenizer: HrmTokenizer | null;
  model: HrmModel;
  /** The checkpoint's chat template (tokenizer_config.json), if any. */
  chatTemplate: string | null;
  /** Which checkpoint file(s) were read. */
  checkpoint: string;
  name: string;
}

export type LoadStage = 'config' | 'tokenizer' | 'weights';

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
  /** Scan the weights for NaN and Inf on the GPU (default true). */
  checkFinite?: boolean;
  /** Tolerated oddities (a stale num_hidden_layers); default console.warn. */
  warn?: Warn;
}

/** loadModel's keys (a Record, so that a new option must be named here to be accepted). */
const LOAD_KEYS: Record<keyof LoadModelOptions, true> = {
  gpu: true, device: true, dtype: true, quantize: true, progressCallback: true, checkFinite: true, warn: true,
};
/** Where keys of other loaders (transformers.js, WebLLM, mlx-lm) or of generation live here. */
const LOAD_MOVED: Record<string, string> = {
  onProgress: 'it is progressCallback', progress_callback: 'it is progressCallback',
  initProgressCallback: 'it is progressCallback', quantization: 'it is quantize: { bits, groupSize }',
  kv: "the KV cache is generate's cache.kv", cache: "the KV cache is generate's cache.kv",
  temperature: "it is generate's sampler.temperature",
};

// The one default sink for warnings, so that a library user who passes nothing still sees them.
const consoleWarn: Warn = (m) => console.warn(m);

function parseJson(text: string, where: string): unknown {
  try { return JSON.parse(text); } catch (e) { throw new FormatError('load',
    `${where}: not valid JSON (${(e as Error).message})`); }
}

async function json(files: ModelFiles, file: string, required: boolean): Promise<unknown> {
  const text = await files.text(file);
  if (text === null) {
    if (required) throw new FormatError('load', `${files.name}: no ${file}`);
    return null;
  }
  return parseJson(text, `${files.name}/${file}`);
}

/** Config and tokenizer only (cheap): for `hrm info` and "will it fit" checks before downloading weights. */
export async function loadConfig(files: ModelFiles, warn: Warn = consoleWarn): Promise<HrmConfig> {
  return (await loadConfigs(files, warn)).config;
}

/** The config and its quantization block (null for dense checkpoints). */
export async function loadConfigs(files: ModelFiles,
  warn: Warn = consoleWarn): Promise<{ config: HrmConfig; quantization: QuantConfig | null }> {
  const raw = await json(files, 'config.json', true);
  const where = `${files.name}/config.json`;
  return { config: parseConfig(raw, where, warn), quantization: parseQuantization(raw, where) };
}

/** Find the checkpoint: sharded index, model.safetensors, or the MLX converter's model_mlx.safetensors. */
export async function openCheckpoint(files: ModelFiles): Promise<{ ck: Checkpoint; name: string }> {
  const index = await files.text('model.safetensors.index.json');
  if (index !== null) {
    const indexName = `${files.name}/model.safetensors.index.json`;
    const map = (parseJson(index, indexName) as { weight_map?: unknown } | null)?.weight_map;
    if (typeof map !== 'object' || map === null || Array.isArray(map) ||
      !Object.values(map).every((f) => typeof f === 'string')) {
      throw new FormatError('load', `${indexName}: 'weight_map' must be an object of tensor name -> file name`);
    }
    const sources = new Map<string, Awaited<ReturnType<ModelFiles['bytes']>>>();
    const names = [...new Set(Object.values(map as Record<string, string>))];
    for (const n of names) {
      const src = await files.bytes(n);
      if (!src) throw new FormatError('load',
        `${files.name}: model.safetensors.index.json lists ${n}, which is missing`);
      sources.set(n, src);
    }
    const ck = await Checkpoint.fromIndex(index, indexName, (f) => {
      const s = sources.get(f);
      if (!s) throw new FormatError('load', `${files.name}: shard ${f} is missing`);
      return s;
    });
    return { ck, name: `${files.name}/model.safetensors.index.json (${names.length} shards)` };
  }
  // model.safetensors (HF, carries model.z_L_init) is preferred over the seed converter's model_mlx.safetensors.
  for (const f of ['model.safetensors', 'model_mlx.safetensors']) {
    const src = await files.bytes(f);
    if (src) return { ck: await Checkpoint.fromFiles([await SafetensorsFile.open(src)]), name: `${files.name}/${f}` };
  }
  throw new FormatError('load',
    `${files.name}: no model.safetensors, model.safetensors.index.json or model_mlx.safetensors`);
}

/**
 * tokenizer.json and tokenizer_config.json, checked against the model. A vocabulary smaller than the model's
 * vocab_size is only warned of: prompts encode, logits are right, but a generated id past it cannot be decoded.
 */
export async function loadTokenizer(files: ModelFiles, config: HrmConfig, warn: Warn = consoleWarn):
  Promise<{ tokenizer: HrmTokenizer | null; chatTemplate: string | null }> {
  const tokJson = await files.text('tokenizer.json');
  if (tokJson === null) return { tokenizer: null, chatTemplate: null };
  const tokConfig = (await json(files, 'tokenizer_config.json', false)) as Record<string, unknown> | null;
  const tokenizer = new HrmTokenizer(tokJson, {
    config: tokConfig, modelConfig: { ...config,
      eos_token_id: config.eos_token_ids.length ? config.eos_token_ids : null }, where: `${files.name}/tokenizer.json`,
  });
  if (tokenizer.vocabSize < config.vocab_size) {
    warn(`${tokenizer.where} has ${tokenizer.vocabSize} ids, fewer than the model's vocab_size ${config.vocab_size} ` +
      `(config.json); generating fails at the first id from ${tokenizer.vocabSize} up (logits are unaffected)`);
  }
  const tpl = tokConfig?.chat_template;
  return { tokenizer, chatTemplate: typeof tpl === 'string' ? tpl : null };
}

/**
 * Load a model (config, tokenizer, chat template, weights) onto a GPU. No source: the embedded model.
 * @example const lm = await loadModel(); // or loadModel('https://huggingface.co/sapientinc/HRM-Text-1B/resolve/main')
 */
export async function loadModel(source?: ModelSource, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  checkOptions('loadModel', 'the options', opts, Object.keys(LOAD_KEYS), LOAD_MOVED);
  const files = modelFiles(source);
  const gpu = opts.gpu ?? (await Gpu.create(opts.device));
  try {
    return await build(gpu, files, opts);
  } catch (e) {
    if (!opts.gpu) gpu.destroy(); // the device this call opened goes with the failed load
    throw e;
  }
}

async function build(gpu: Gpu, files: ModelFiles, opts: LoadModelOptions): Promise<LoadedModel> {
  const cb = opts.progressCallback;
  const report = (stage: LoadStage, loaded: number, total: number) =>
    cb?.({ stage, loaded, total, progress: total ? (100 * loaded) / total : 0 });
  report('config', 0, 1);
  const { config, quantization } = await loadConfigs(files, opts.warn);
  report('tokenizer', 0, 1);
  const { tokenizer, chatTemplate } = await loadTokenizer(files, config, opts.warn);
  const { ck, name } = await openCheckpoint(files);
  const weights = await loadWeights(gpu, ck, config, {
    where: name, checkFinite: opts.checkFinite, quantization, quantize: opts.quantize, onProgress: (l,
      t) => report('weights', l, t),
  });
  return { config, tokenizer, chatTemplate, model: new HrmModel(gpu, config, weights, opts.dtype ?? 'f32'),
    checkpoint: name, name: files.name };
}
