// Load a whole model: config, tokenizer (+ chat template), checkpoint (one file, shards, or MLX-native), onto a GPU.
import { FormatError } from '../tensor/errors.ts';
import type { Gpu } from '../tensor/gpu.ts';
import { Checkpoint, SafetensorsFile } from '../tensor/safetensors.ts';
import { parseConfig, parseQuantization, type HrmConfig, type QuantConfig, type QuantSpec } from './config.ts';
import type { ModelFiles } from './files.ts';
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
export interface ModelLoadOptions {
  dtype?: ActDtype;
  /** Quantize dense weights on the GPU while loading (bits 4 or 8 in the CLI; any bits / group size MLX offers). */
  quantize?: QuantSpec;
  onProgress?: (stage: LoadStage, loaded: number, total: number) => void;
}

async function json(files: ModelFiles, file: string, required: boolean): Promise<unknown> {
  const text = await files.text(file);
  if (text === null) {
    if (required) throw new FormatError('load', `${files.name}: no ${file}`);
    return null;
  }
  try { return JSON.parse(text); } catch (e) { throw new FormatError('load', `${files.name}/${file}: not valid JSON (${(e as Error).message})`); }
}

/** Config and tokenizer only (cheap): for `hrm info` and "will it fit" checks before downloading weights. */
export async function loadConfig(files: ModelFiles): Promise<HrmConfig> {
  return (await loadConfigs(files)).config;
}

/** The config and its quantization block (null for dense checkpoints). */
export async function loadConfigs(files: ModelFiles): Promise<{ config: HrmConfig; quantization: QuantConfig | null }> {
  const raw = await json(files, 'config.json', true);
  const where = `${files.name}/config.json`;
  return { config: parseConfig(raw, where), quantization: parseQuantization(raw, where) };
}

/** Find the checkpoint: sharded index, model.safetensors, or the MLX converter's model_mlx.safetensors. */
export async function openCheckpoint(files: ModelFiles): Promise<{ ck: Checkpoint; name: string }> {
  const index = await files.text('model.safetensors.index.json');
  if (index !== null) {
    const sources = new Map<string, Awaited<ReturnType<ModelFiles['bytes']>>>();
    const names = [...new Set(Object.values((JSON.parse(index) as { weight_map?: Record<string, string> }).weight_map ?? {}))];
    for (const n of names) {
      const src = await files.bytes(n);
      if (!src) throw new FormatError('load', `${files.name}: model.safetensors.index.json lists ${n}, which is missing`);
      sources.set(n, src);
    }
    const ck = await Checkpoint.fromIndex(index, `${files.name}/model.safetensors.index.json`, (f) => {
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
  throw new FormatError('load', `${files.name}: no model.safetensors, model.safetensors.index.json or model_mlx.safetensors`);
}

export async function loadTokenizer(files: ModelFiles, config: HrmConfig): Promise<{ tokenizer: HrmTokenizer | null; chatTemplate: string | null }> {
  const tokJson = await files.text('tokenizer.json');
  if (tokJson === null) return { tokenizer: null, chatTemplate: null };
  const tokConfig = (await json(files, 'tokenizer_config.json', false)) as Record<string, unknown> | null;
  const tokenizer = HrmTokenizer.fromJson(tokJson, tokConfig, config);
  const tpl = tokConfig?.chat_template;
  return { tokenizer, chatTemplate: typeof tpl === 'string' ? tpl : null };
}

/** Load config, tokenizer and weights, then build the model. */
export async function loadModel(gpu: Gpu, files: ModelFiles, opts: ModelLoadOptions = {}): Promise<LoadedModel> {
  opts.onProgress?.('config', 0, 1);
  const { config, quantization } = await loadConfigs(files);
  opts.onProgress?.('tokenizer', 0, 1);
  const { tokenizer, chatTemplate } = await loadTokenizer(files, config);
  const { ck, name } = await openCheckpoint(files);
  const weights = await loadWeights(gpu, ck, config, {
    where: name, quantization, quantize: opts.quantize, onProgress: (l, t) => opts.onProgress?.('weights', l, t),
  });
  return { config, tokenizer, chatTemplate, model: new HrmModel(gpu, config, weights, opts.dtype ?? 'f32'), checkpoint: name, name: files.name };
}
