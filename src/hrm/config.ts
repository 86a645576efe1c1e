// HRM-Text configuration, named as in config.json. Accepts every published variant: legacy
// (`num_hidden_layers` = layers per stack) and transformers-style (`num_hidden_layers` = layers * H * (L+1) with
// `num_layers_per_stack`); `rope_theta` or `rope_parameters.rope_theta`; `embedding_scale` or 1/initializer_range.
import { FormatError } from '../tensor/errors.ts';

export interface HrmConfig {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_layers_per_stack: number;
  num_attention_heads: number;
  head_dim: number;
  max_position_embeddings: number;
  rms_norm_eps: number;
  rope_theta: number;
  H_cycles: number;
  L_cycles: number;
  embedding_scale: number;
  prefix_lm: boolean;
  tie_word_embeddings: boolean;
  bos_token_id: number | null;
  eos_token_id: number | null;
  pad_token_id: number | null;
}

type Json = Record<string, unknown>;

function num(c: Json, key: string, where: string, dflt?: number): number {
  const v = c[key];
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new FormatError('config', `${where}: '${key}' must be a number (got ${JSON.stringify(v)})`);
  return v;
}

function posInt(c: Json, key: string, where: string, dflt?: number): number {
  const v = num(c, key, where, dflt);
  if (!Number.isInteger(v) || v <= 0) throw new FormatError('config', `${where}: '${key}' must be a positive integer (got ${v})`);
  return v;
}

function optId(c: Json, key: string): number | null {
  const v = c[key];
  if (Array.isArray(v)) return typeof v[0] === 'number' ? v[0] : null;
  return typeof v === 'number' ? v : null;
}

/** Parse and validate a config.json object. `where` names the file in errors. */
export function parseConfig(raw: unknown, where = 'config.json'): HrmConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError('config', `${where}: not a JSON object`);
  const c = raw as Json;
  if (c.model_type !== undefined && c.model_type !== 'hrm_text') {
    throw new FormatError('config', `${where}: model_type is '${String(c.model_type)}', expected 'hrm_text'`);
  }
  const H = posInt(c, 'H_cycles', where);
  const L = posInt(c, 'L_cycles', where);
  const hidden = posInt(c, 'hidden_size', where);
  const heads = posInt(c, 'num_attention_heads', where);
  const headDim = posInt(c, 'head_dim', where, Math.floor(hidden / heads));
  const kvHeads = c.num_key_value_heads === undefined ? heads : posInt(c, 'num_key_value_heads', where);
  if (kvHeads !== heads) throw new FormatError('config', `${where}: num_key_value_heads ${kvHeads} != num_attention_heads ${heads}; HRM-Text has no grouped-query attention`);

  const total = posInt(c, 'num_hidden_layers', where);
  let perStack: number;
  if (c.num_layers_per_stack !== undefined) {
    perStack = posInt(c, 'num_layers_per_stack', where);
    if (total !== perStack && total !== perStack * H * (L + 1)) {
      throw new FormatError('config', `${where}: num_hidden_layers ${total} is neither num_layers_per_stack ${perStack} nor ` +
        `num_layers_per_stack * H_cycles * (L_cycles + 1) = ${perStack * H * (L + 1)}`);
    }
  } else {
    perStack = total;
  }

  const rp = c.rope_parameters as Json | undefined;
  let ropeTheta: number;
  if (c.rope_theta !== undefined) ropeTheta = num(c, 'rope_theta', where);
  else if (rp && typeof rp === 'object' && rp.rope_theta !== undefined) ropeTheta = num(rp, 'rope_theta', `${where} rope_parameters`);
  else throw new FormatError('config', `${where}: neither 'rope_theta' nor 'rope_parameters.rope_theta' is set`);
  if (rp && typeof rp === 'object' && rp.rope_type !== undefined && rp.rope_type !== 'default') {
    throw new FormatError('config', `${where}: rope_parameters.rope_type '${String(rp.rope_type)}' is not supported (only 'default')`);
  }

  let embeddingScale: number;
  if (c.embedding_scale !== undefined) embeddingScale = num(c, 'embedding_scale', where);
  else if (c.initializer_range !== undefined) embeddingScale = 1 / num(c, 'initializer_range', where);
  else throw new FormatError('config', `${where}: neither 'embedding_scale' nor 'initializer_range' is set`);

  return {
    vocab_size: posInt(c, 'vocab_size', where),
    hidden_size: hidden,
    intermediate_size: posInt(c, 'intermediate_size', where),
    num_layers_per_stack: perStack,
    num_attention_heads: heads,
    head_dim: headDim,
    max_position_embeddings: posInt(c, 'max_position_embeddings', where, 4096),
    rms_norm_eps: num(c, 'rms_norm_eps', where, 1e-6),
    rope_theta: ropeTheta,
    H_cycles: H,
    L_cycles: L,
    embedding_scale: embeddingScale,
    prefix_lm: c.prefix_lm === undefined ? true : Boolean(c.prefix_lm),
    tie_word_embeddings: Boolean(c.tie_word_embeddings),
    bos_token_id: optId(c, 'bos_token_id'),
    eos_token_id: optId(c, 'eos_token_id'),
    pad_token_id: optId(c, 'pad_token_id'),
  };
}

/** Stack invocations per token: H * (L + 1). */
export function stackCalls(c: HrmConfig): number {
  return c.H_cycles * (c.L_cycles + 1);
}

/** KV-cache slots: one per (stack invocation, layer). */
export function cacheSlots(c: HrmConfig): number {
  return stackCalls(c) * c.num_layers_per_stack;
}

/** Parameter count of the checkpoint (embeddings, both stacks, lm_head unless tied, z_L_init). */
export function parameterCount(c: HrmConfig): number {
  const h = c.hidden_size, a = c.num_attention_heads * c.head_dim, i = c.intermediate_size;
  const layer = 4 * a * h + h * a + 2 * i * h + h * i;
  return c.vocab_size * h * (c.tie_word_embeddings ? 1 : 2) + 2 * c.num_layers_per_stack * layer + h;
}

/** Cache bytes per token for full-precision K and V of `bytesPerValue` each. */
export function kvBytesPerToken(c: HrmConfig, bytesPerValue: number): number {
  return cacheSlots(c) * 2 * c.num_attention_heads * c.head_dim * bytesPerValue;
}

/** The sapientinc/HRM-Text-1B configuration (for sizing and benchmarks with random weights). */
export const HRM_TEXT_1B: HrmConfig = parseConfig({
  model_type: 'hrm_text', vocab_size: 65536, hidden_size: 1536, intermediate_size: 4096, num_hidden_layers: 16,
  num_attention_heads: 12, head_dim: 128, H_cycles: 2, L_cycles: 3, rope_theta: 10000, rms_norm_eps: 1e-6,
  max_position_embeddings: 4096, embedding_scale: Math.sqrt(1536), bos_token_id: 6, eos_token_id: 11, pad_token_id: 5,
}, 'HRM-Text-1B');

/** Group-wise affine quantization of one module: MLX's bits and group size. */
export interface QuantSpec { bits: number; groupSize: number }

/**
 * config.json's `quantization` block (what mlx-lm's convert and `hrm convert` write): the default
 * {group_size, bits}, plus per-module entries keyed by module path ("model.L_module.layers.0.mlp.down_proj"),
 * each {group_size, bits} or false (left unquantized). Null when the config has none. Values MLX does not offer
 * are errors naming the key.
 */
export interface QuantConfig { default: QuantSpec; modules: Map<string, QuantSpec | false> }

export const Q_BITS: readonly number[] = [2, 3, 4, 5, 6, 8];
export const Q_GROUP_SIZES: readonly number[] = [32, 64, 128];

/** Checks bits and group size against what mx.quantize offers; `what` names the key or option in the error. */
export function quantSpec(bits: unknown, groupSize: unknown, what: string): QuantSpec {
  if (typeof bits !== 'number' || !Q_BITS.includes(bits)) throw new FormatError('config', `${what}: bits ${JSON.stringify(bits)} is not one MLX offers (${Q_BITS.join(', ')})`);
  if (typeof groupSize !== 'number' || !Q_GROUP_SIZES.includes(groupSize)) {
    throw new FormatError('config', `${what}: group_size ${JSON.stringify(groupSize)} is not one MLX offers (${Q_GROUP_SIZES.join(', ')})`);
  }
  return { bits, groupSize };
}

export function parseQuantization(raw: unknown, where = 'config.json'): QuantConfig | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const block = (raw as Json).quantization ?? (raw as Json).quantization_config;
  if (block === undefined || block === null) return null;
  const key = (raw as Json).quantization !== undefined ? 'quantization' : 'quantization_config';
  if (typeof block !== 'object' || Array.isArray(block)) throw new FormatError('config', `${where}: '${key}' must be an object {group_size, bits}`);
  const b = block as Json;
  const modules = new Map<string, QuantSpec | false>();
  for (const [k, v] of Object.entries(b)) {
    if (k === 'group_size' || k === 'bits' || k === 'mode') continue;
    if (v === false) modules.set(k, false);
    else if (typeof v === 'object' && v !== null) modules.set(k, quantSpec((v as Json).bits, (v as Json).group_size ?? b.group_size, `${where} ${key}.${k}`));
    else throw new FormatError('config', `${where}: '${key}.${k}' must be {group_size, bits} or false (got ${JSON.stringify(v)})`);
  }
  if (b.mode !== undefined && b.mode !== 'affine') throw new FormatError('config', `${where}: '${key}.mode' ${JSON.stringify(b.mode)} is not supported (only 'affine')`);
  return { default: quantSpec(b.bits, b.group_size ?? 64, `${where} ${key}`), modules };
}
