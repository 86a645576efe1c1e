// "Will it fit": the model's GPU memory at a context, from config.json and the checkpoint's byte size, before any
// weight is downloaded. WebGPU does not say how much memory a device has, so the bound is rough: the adapter's
// per-buffer limits (hard), and the browser's `navigator.deviceMemory` (RAM in GiB, rounded, capped at 8 by Chrome).
// The weights' size depends on the choice made before the download: as stored (dense, or MLX-quantized as
// config.json's `quantization` says), or quantized on load to 8 or 4 bits.
import { cacheBytes, checkpointBytes, FormatError, parameterCount, type ActDtype, type HrmConfig, type KvStorage,
  type ModelFiles, type QuantConfig, type QuantSpec } from '../src/index.ts';
import { cacheSlots } from '../src/advanced.ts';

export const GiB = 2 ** 30;

export function fmtBytes(n: number): string {
  if (n >= GiB) return `${(n / GiB).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

/** The checkpoint files to download and their sizes: shards of an index, or the single safetensors file. */
export interface WeightFiles { names: string[]; sizes: number[]; total: number; exact: boolean }

export async function weightFiles(files: ModelFiles, config: HrmConfig): Promise<WeightFiles> {
  const index = await files.text('model.safetensors.index.json');
  let names: string[];
  if (index !== null) {
    let parsed: { weight_map?: Record<string, string> };
    try { parsed = JSON.parse(index); } catch (e) { throw new FormatError('load',
      `${files.name}/model.safetensors.index.json: not valid JSON (${(e as Error).message})`); }
    names = [...new Set(Object.values(parsed.weight_map ?? {}))];
  } else {
    names = [];
    for (const f of ['model.safetensors', 'model_mlx.safetensors']) {
      if (await files.bytes(f)) { names = [f]; break; }
    }
  }
  const sizes: number[] = [];
  for (const n of names) {
    const src = await files.bytes(n);
    sizes.push(src ? await src.size() : 0);
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  // No file found: the loader will say so; estimate bf16 weights meanwhile.
  return names.length ? { names, sizes, total, exact: true } : { names, sizes, total: parameterCount(config) * 2,
    exact: false };
}

/** The weights choices offered before a download: as stored, or quantized on load (group 64, MLX's default). */
export const WEIGHT_CHOICES = { stored: null, q8: { bits: 8, groupSize: 64 },
  q4: { bits: 4, groupSize: 64 } } as const satisfies Record<string, QuantSpec | null>;
export type WeightChoice = keyof typeof WEIGHT_CHOICES;

/** What sizes a checkpoint before its weights are read: its config, stored quantization and file bytes. */
export interface Sizing {
  config: HrmConfig;
  stored: QuantConfig | null;
  files: WeightFiles;
  /** Once loaded: the choice it was loaded with and the bytes its weights took on the GPU. */
  loaded?: { choice: WeightChoice; bytes: number };
}

/** How the weights of `choice` are held: `spec` null when dense, `onLoad` when quantized while loading. */
export function weightSpec(s: Sizing, choice: WeightChoice): { spec: QuantSpec | null; onLoad: boolean } {
  // A stored-quantized checkpoint loads as stored whatever is chosen (the loader keeps its modules so).
  if (s.stored) return { spec: s.stored.default, onLoad: false };
  const spec = WEIGHT_CHOICES[choice];
  return { spec, onLoad: spec !== null };
}

/** GPU bytes of the weights for `choice` (exact for a stored checkpoint; quantize-on-load from the config). */
export function weightBytes(s: Sizing, choice: WeightChoice): { bytes: number; exact: boolean } {
  const { spec, onLoad } = weightSpec(s, choice);
  if (s.loaded && (s.stored || s.loaded.choice === choice)) return { bytes: s.loaded.bytes, exact: true };
  if (!onLoad || !spec) return { bytes: s.files.total, exact: s.files.exact };
  // Dense values (and the scales quantize writes, in the checkpoint's dtype) take the file's bytes per parameter.
  const per = s.files.exact && s.files.total >= 3 * parameterCount(s.config) ? 4 : 2;
  return { bytes: checkpointBytes(s.config, spec, per, per), exact: false };
}

/** A choice's label: "8-bit (group 64, quantized on load)", "as stored (4-bit, group 64)". */
export function choiceLabel(s: Sizing, choice: WeightChoice): string {
  const { spec, onLoad } = weightSpec(s, choice);
  const q = spec ? `${spec.bits}-bit, group ${spec.groupSize}` : 'dense';
  return onLoad ? `${spec!.bits}-bit (group ${spec!.groupSize}, quantized on load)` : `as stored (${q})`;
}

export interface MemoryPlan {
  weights: number;
  cache: number;
  /** Rough working memory of one forward at `ctx` positions (hidden states, MLP, logits of every position). */
  activations: number;
  total: number;
  verdict: 'ok' | 'warn' | 'no';
  reasons: string[];
}

export interface MemoryLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** navigator.deviceMemory, GiB (undefined when the browser hides it). */
  deviceMemory?: number;
}

/** Weights + KV cache + activations at `ctx`, and whether that plausibly fits this adapter. */
export function memoryPlan(c: HrmConfig, weights: number, ctx: number, dtype: ActDtype, kv: KvStorage,
  lim: MemoryLimits): MemoryPlan {
  const cache = cacheBytes(c, ctx, dtype, kv);
  const logits = ctx * c.vocab_size * 4;
  const activations = ctx * (c.hidden_size * 4 * 12 + c.intermediate_size * 4 * 3) + 2 * logits;
  const total = weights + cache + activations;
  const reasons: string[] = [];
  let verdict: MemoryPlan['verdict'] = 'ok';
  const worse = (v: MemoryPlan['verdict']) => { if (v === 'no' || (v === 'warn' && verdict === 'ok')) verdict = v; };
  const binding = Math.min(lim.maxStorageBufferBindingSize, lim.maxBufferSize);
  const sideTensor = cache / (cacheSlots(c) * 2);
  if (sideTensor > binding) {
    worse('no');
    reasons.push(`one KV-cache tensor at context ${ctx} is ${fmtBytes(sideTensor)}, above this adapter's largest ` +
      `storage binding (${fmtBytes(binding)}); lower the context or quantize the cache`);
  }
  if (logits > binding) {
    worse('warn');
    reasons.push(`REFRACT's KLD at ctx ${ctx} reads logits of ${fmtBytes(logits)}, above the largest storage ` +
      `binding (${fmtBytes(binding)}); use a smaller KLD ctx`);
  }
  const ram = lim.deviceMemory;
  if (ram !== undefined && ram > 0) {
    // Chrome reports at most 8 (meaning "8 GiB or more"): only a smaller value is a real bound.
    if (ram < 8 && total > ram * GiB) {
      worse('no');
      reasons.push(`needs about ${fmtBytes(total)}, but this device reports ${ram} GiB of memory`);
    } else if (total > 0.5 * ram * GiB) {
      worse('warn');
      reasons.push(`needs about ${fmtBytes(total)}; this device reports ${ram >= 8 ? 'at least 8' : ram} GiB of ` +
        'memory, and a browser tab gets only part of it');
    }
  } else if (total > 8 * GiB) {
    worse('warn');
    reasons.push(`needs about ${fmtBytes(total)}; browsers often cap a tab's GPU memory below that`);
  }
  return { weights, cache, activations, total, verdict, reasons };
}

/** The memory check says the model cannot fit (raised before its download). */
export class WontFitError extends Error {
  constructor(readonly reasons: string[]) {
    super(`[memory] ${reasons.join('; ')}`);
    this.name = 'WontFitError';
  }
}
