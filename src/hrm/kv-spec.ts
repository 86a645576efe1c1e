// KV-cache configurations written llama.cpp style (`ctk=q8_0,ctv=q4_0`), mapped to MLX-style group-64 affine
// quantization, or to the TurboQuant fork's turbo2/3/4 (`ctk=q8_0,ctv=turbo3`; kernels/turbo/format.ts). Unlike
// REFRACT's MLX backend this port owns its cache, so K and V may differ. The one parser of the library (generate's
// `cache.kv`, logits' `kv`), the hrm CLI (--kv), REFRACT (--reference/--candidate, sweeps) and the demo. It lives
// in hrm/ because it maps onto the cache's KvStorage (cache.ts) and the quantization group (kernels/quant/rules.ts),
// and REFRACT, which sits above hrm/, imports it from there.
import { InputError } from '../errors.ts';
import type { KvStorage } from './cache.ts';
import { GROUP } from '../kernels/quant/rules.ts';
import type { TurboType } from '../kernels/turbo/format.ts';

/** Group size of the affine KV quantization (MLX `kv_group_size`). */
export const KV_GROUP_SIZE = GROUP;

/** REFRACT's default reference: full-precision K and V. */
export const DEFAULT_REFERENCE_KV = 'ctk=f16,ctv=f16';

/** Accepted cache types: canonical name -> bits (null = full precision) or TurboQuant type. Case-insensitive. */
export const KV_TYPES: Readonly<Record<string, number | TurboType | null>> = {
  f16: null, fp16: null, f32: null, bf16: null,
  q8_0: 8, q8: 8,
  q6_K: 6, q6: 6,
  q5_0: 5, q5_1: 5, q5_K: 5, q5: 5,
  q4_0: 4, q4_1: 4, q4_K: 4, q4: 4,
  q3_K: 3, q3: 3,
  q2_K: 2, q2: 2,
  turbo4: 'turbo4', turbo3: 'turbo3', turbo2: 'turbo2',
};

const KEYS = ['ctk', 'ctv'] as const;
const byLower = new Map(Object.keys(KV_TYPES).map((name) => [name.toLowerCase(), name]));

/** One side (K or V) of a cache config. */
export interface KvSide {
  /** Quantization bits, a TurboQuant type, or null for full precision. */
  bits: number | TurboType | null;
  /** Canonical type name, e.g. `q4_K`. */
  name: string;
}

/**
 * A parsed KV string (llama.cpp's `ctk=..,ctv=..`): each side's type name and storage, the group size. `label` is
 * the canonical string (REFRACT's `KVConfig.label()`). The cache takes its storage alone (`KvStorage`).
 */
export interface KvConfig {
  k: KvSide;
  v: KvSide;
  groupSize: number;
  label: string;
}

function accepted(): string {
  return `accepted types: ${Object.keys(KV_TYPES).join(', ')}; keys: ${KEYS.join(', ')}; form: "ctk=q8_0,ctv=q4_0"`;
}

function side(key: string, value: string, spec: string, option: string): KvSide {
  const name = byLower.get(value.toLowerCase());
  if (name === undefined) {
    throw new InputError('kvconfig', `unknown cache type ${key}=${value} in ${option} "${spec}"; ${accepted()}`);
  }
  return { bits: KV_TYPES[name], name };
}

/**
 * Parse `ctk=X,ctv=Y`; a missing key defaults to f16 (as llama.cpp does). Empty fragments (`ctk=q8_0,,ctv=q4_0`)
 * are skipped as in REFRACT's KVConfig.parse; a string with no fragment at all is an error naming `option` (the
 * flag or setting the string came from). Throws InputError on anything else.
 */
export function parseKvConfig(spec: string, option = 'KV config'): KvConfig {
  const parts = typeof spec === 'string' ? spec.split(',').map((p) => p.trim()).filter((p) => p !== '') : [];
  if (parts.length === 0) {
    throw new InputError('kvconfig', `${option} is empty (got ${JSON.stringify(spec)}); ${accepted()}`);
  }
  const seen = new Map<string, string>();
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq <= 0 || eq === part.length - 1) {
      throw new InputError('kvconfig',
        `malformed part "${part}" in ${option} "${spec}" (need key=value); ${accepted()}`);
    }
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (!(KEYS as readonly string[]).includes(key)) {
      throw new InputError('kvconfig', `unknown key "${key}" in ${option} "${spec}"; ${accepted()}`);
    }
    if (seen.has(key)) throw new InputError('kvconfig', `key "${key}" given twice in ${option} "${spec}"`);
    seen.set(key, value);
  }
  const k = side('ctk', seen.get('ctk') ?? 'f16', spec, option);
  const v = side('ctv', seen.get('ctv') ?? 'f16', spec, option);
  return { k, v, groupSize: KV_GROUP_SIZE, label: `ctk=${k.name},ctv=${v.name}` };
}

/** True when neither K nor V is quantized. */
export function isFullPrecision(cfg: KvConfig): boolean {
  return cfg.k.bits === null && cfg.v.bits === null;
}

/**
 * Any KV setting as the cache's `KvStorage`: quantization bits or TurboQuant type per side (null = full precision).
 * A string is parsed by parseKvConfig (errors name `option`); a KvStorage passes through; absent means full precision.
 */
export function kvStorage(kv: string | KvStorage | undefined, option?: string): KvStorage {
  if (kv === undefined) return { k: null, v: null };
  if (typeof kv !== 'string') return kv;
  const c = parseKvConfig(kv, option);
  return { k: c.k.bits, v: c.v.bits };
}
