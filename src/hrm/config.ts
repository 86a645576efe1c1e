// HRM-Text configuration, named as in config.json. Accepts every published variant: legacy
// (`num_hidden_layers` = layers per stack) and transformers-style (`num_hidden_layers` = layers * H * (L+1) with
// `num_layers_per_stack`); `rope_theta` or `rope_parameters.rope_theta`; `embedding_scale` or 1/initializer_range.
import { FormatError } from '../errors.ts';
import { GROUP_SIZES, QUANT_BITS } from '../kernels/quant/rules.ts';

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
  /** The first of `eos_token_ids`, or null. */
  eos_token_id: number | null;
  /** Every eos id (config.json may list several); generation stops at any of them. */
  eos_token_ids: number[];
  pad_token_id: number | null;
}

/** Where config warnings go (a setting that is tolerated but looks wrong); the CLIs print them on stderr. */
export type Warn = (message: string) => void;

type Json = Record<string, unknown>;

const fail = (where: string, key: string, what: string, v: unknown) =>
  new FormatError('config', `${where}: '${key}' must be ${what} (got ${JSON.stringify(v)})`);

/** A number key; `ok` is the range it must be in, described by `what`. */
function num(c: Json, key: string, where: string, dflt?: number, ok: (n: number) => boolean = () => true,
  what = 'a number'): number {
  const v = c[key];
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw fail(where, key, what, v);
  return v;
}

const positive = (c: Json, key: string, where: string) => num(c, key, where, undefined, (n) => n > 0, 'a number > 0');

function posInt(c: Json, key: string, where: string, dflt?: number): number {
  return num(c, key, where, dflt, (n) => Number.isInteger(n) && n > 0, 'a positive integer');
}

function bool(c: Json, key: string, where: string, dflt: boolean): boolean {
  const v = c[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw fail(where, key, 'true or false', v);
  return v;
}

/** A token id key: absent/null, an id, or a list of ids (transformers allows lists for every *_token_id). */
function ids(c: Json, key: string, where: string, vocab: number): number[] {
  const v = c[key];
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  if (!list.every((id) => Number.isInteger(id) && id >= 0)) throw fail(where, key,
    'a token id or a list of token ids', v);
  const out = list as number[];
  const big = out.find((id) => id >= vocab);
  if (big !== undefined) throw new FormatError('config',
    `${where}: '${key}' ${big} is outside the vocabulary [0, ${vocab}) of vocab_size`);
  return out;
}

/** Parse and validate a config.json object. `where` names the file in errors. */
export function parseConfig(raw: unknown, where = 'config.json', warn: Warn = () => {}): HrmConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError('config',
    `${where}: not a JSON object`);
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
  if (kvHeads !== heads) throw new FormatError('config',
    `${where}: num_key_value_heads ${kvHeads} != num_attention_heads ${heads}; `
    + 'HRM-Text has no grouped-query attention');

  const total = posInt(c, 'num_hidden_layers', where);
  let perStack: number;
  if (c.num_layers_per_stack !== undefined) {
    perStack = posInt(c, 'num_layers_per_stack', where);
    // As transformers: num_layers_per_stack wins over a stale num_hidden_layers (the loader refuses tensors
    // that disagree with it).
    if (total !== perStack && total !== perStack * H * (L + 1)) {
      warn(`${where}: num_hidden_layers ${total} is neither num_layers_per_stack ${perStack} nor ` +
        `num_layers_per_stack * H_cycles * (L_cycles + 1) = ${perStack * H * (L + 1)}; ` +
        `using num_layers_per_stack ${perStack}`);
    }
  } else {
    perStack = total;
  }

  const rp = c.rope_parameters as Json | undefined | null;
  if (rp !== undefined && rp !== null && (typeof rp !== 'object' || Array.isArray(rp))) throw fail(where,
    'rope_parameters', 'an object', rp);
  let ropeTheta: number;
  if (c.rope_theta !== undefined) ropeTheta = positive(c, 'rope_theta', where);
  else if (rp && rp.rope_theta !== undefined) ropeTheta = positive(rp, 'rope_theta', `${where} rope_parameters`);
  else throw new FormatError('config', `${where}: neither 'rope_theta' nor 'rope_parameters.rope_theta' is set`);
  if (rp && rp.rope_type !== undefined && rp.rope_type !== 'default') {
    throw new FormatError('config',
      `${where}: rope_parameters.rope_type '${String(rp.rope_type)}' is not supported (only 'default')`);
  }

  let embeddingScale: number;
  if (c.embedding_scale !== undefined) embeddingScale = positive(c, 'embedding_scale', where);
  else if (c.initializer_range !== undefined) embeddingScale = 1 / positive(c, 'initializer_range', where);
  else throw new FormatError('config', `${where}: neither 'embedding_scale' nor 'initializer_range' is set`);

  const vocab = posInt(c, 'vocab_size', where);
  const eos = ids(c, 'eos_token_id', where, vocab);
  return {
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: posInt(c, 'intermediate_size', where),
    num_layers_per_stack: perStack,
    num_attention_heads: heads,
    head_dim: headDim,
    max_position_embeddings: posInt(c, 'max_position_embeddings', where, 4096),
    rms_norm_eps: num(c, 'rms_norm_eps', where, 1e-6, (n) => n >= 0 && n < 1, 'a number in [0, 1)'),
    rope_theta: ropeTheta,
    H_cycles: H,
    L_cycles: L,
    embedding_scale: embeddingScale,
    prefix_lm: bool(c, 'prefix_lm', where, true),
    tie_word_embeddings: bool(c, 'tie_word_embeddings', where, false),
    bos_token_id: ids(c, 'bos_token_id', where, vocab)[0] ?? null,
    eos_token_id: eos[0] ?? null,
    eos_token_ids: eos,
    pad_token_id: ids(c, 'pad_token_id', where, vocab)[0] ?? null,
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

/** Checks bits and group size against what mx.quantize offers; `what` names the key or option in the error. */
export function quantSpec(bits: unknown, groupSize: unknown, what: string): QuantSpec {
  if (typeof bits !== 'number' || !QUANT_BITS.includes(bits)) throw new FormatError('config',
    `${what}: bits ${JSON.stringify(bits)} is not one MLX offers (${QUANT_BITS.join(', ')})`);
  if (typeof groupSize !== 'number' || !GROUP_SIZES.includes(groupSize)) {
    throw new FormatError('config',
      `${what}: group_size ${JSON.stringify(groupSize)} is not one MLX offers (${GROUP_SIZES.join(', ')})`);
  }
  return { bits, groupSize };
}

export function parseQuantization(raw: unknown, where = 'config.json'): QuantConfig | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const block = (raw as Json).quantization ?? (raw as Json).quantization_config;
  if (block === undefined || block === null) return null;
  const key = (raw as Json).quantization !== undefined ? 'quantization' : 'quantization_config';
  if (typeof block !== 'object' || Array.isArray(block)) throw new FormatError('config',
    `${where}: '${key}' must be an object {group_size, bits}`);
  const b = block as Json;
  const modules = new Map<string, QuantSpec | false>();
  for (const [k, v] of Object.entries(b)) {
    if (k === 'group_size' || k === 'bits' || k === 'mode') continue;
    if (v === false) modules.set(k, false);
    else if (typeof v === 'object' && v !== null) modules.set(k,
      quantSpec((v as Json).bits, (v as Json).group_size ?? b.group_size, `${where} ${key}.${k}`));
    else throw new FormatError('config',
      `${where}: '${key}.${k}' must be {group_size, bits} or false (got ${JSON.stringify(v)})`);
  }
  if (b.mode !== undefined && b.mode !== 'affine') throw new FormatError('config',
    `${where}: '${key}.mode' ${JSON.stringify(b.mode)} is not supported (only 'affine')`);
  return { default: quantSpec(b.bits, b.group_size ?? 64, `${where} ${key}`), modules };
}
