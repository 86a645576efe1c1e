// The recurrent KV cache: one slot per (stack invocation, layer), H*(L+1)*layers slots, all advancing together.
// Each side (K, V) of a slot is full precision (f32, or packed bf16 in bf16 mode), group-64 affine quantized
// with its own bits or TurboQuant-coded (turbo2/3/4, kernels/turbo/); the slots write and attend themselves (slot.ts).
// A forward is `begin` (the mask and the
// state every slot shares), the layers' `slot.append` / `slot.attend`, then `end`. Two quantization modes, as the
// spec names them:
//  - 'before-pass': every attention, the prefill's included, reads quantized K/V (REFRACT's KLD candidate);
//  - 'after-prefill': mlx-lm generation: the first forward attends to full-precision K/V, the cache then holds
//    only quantized K/V (quantizing at append time equals mlx-lm's conversion: groups are per position).
import { InputError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import { storageBytes } from '../tensor/dtype.ts';
import type { Round } from '../kernels/common/codes.ts';
import type { AttnMask, CacheSide, FullKV } from '../kernels/attention/types.ts';
import { quantKV } from '../kernels/attention/kvquant.ts';
import { turboKV } from '../kernels/turbo/turbo.ts';
import { checkTurboHeadDim, turboHeadBytes, type TurboType } from '../kernels/turbo/format.ts';
import { GROUP, QUANT_BITS } from '../kernels/quant/quant.ts';
import { cacheSlots, type HrmConfig } from './config.ts';
import { CacheSlot, type CachePass } from './slot.ts';

/**
 * What each side of the cache stores: quantization bits or a TurboQuant type, null for full precision. The cache
 * takes this; `kvStorage()` makes it from a KV string (`KvConfig`, the parsed string) or passes it through.
 */
export interface KvStorage { k: number | TurboType | null; v: number | TurboType | null }
export type QuantMode = 'before-pass' | 'after-prefill';
export type ActDtype = 'f32' | 'bf16';

export const FULL_KV: KvStorage = { k: null, v: null };

/** How kernels round activations of this dtype (bf16 mode rounds every op's output as MLX does). */
export function roundFor(dtype: ActDtype): Round {
  return dtype === 'bf16' ? 'bf16' : 'none';
}

export interface CacheOptions {
  /** Positions the cache can hold (prompt + generated tokens). */
  capacity: number;
  dtype: ActDtype;
  kv?: KvStorage;
  mode?: QuantMode;
}

export class HrmCache {
  /** Number of cached positions (the RoPE and mask offset of the next forward). */
  offset = 0;
  readonly slots: CacheSlot[] = [];
  /** Token type (1 = prefix block) of every cached position. */
  readonly tokenTypes: number[] = [];
  readonly kv: KvStorage;
  readonly mode: QuantMode;
  /** Storage dtype of full-precision sides. */
  readonly fullDtype: ActDtype;
  private prefillDone = false;
  /** The attention reach `at` fixes for the forwards it runs (a captured decode step); undefined: from kvLen. */
  private reach: number | undefined;

  constructor(readonly gpu: Gpu, readonly config: HrmConfig, readonly opts: CacheOptions) {
    this.kv = opts.kv ?? FULL_KV;
    this.mode = opts.mode ?? 'before-pass';
    for (const [side, bits] of [['K', this.kv.k], ['V', this.kv.v]] as const) {
      if (typeof bits === 'string') checkTurboHeadDim('cache', config.head_dim);
      else if (bits !== null && !QUANT_BITS.includes(bits)) throw new InputError('cache',
        `${side} bits ${bits} not supported (use ${QUANT_BITS.join(', ')} or full precision)`);
    }
    if (config.head_dim % GROUP !== 0 && (typeof this.kv.k === 'number' || typeof this.kv.v === 'number')) {
      throw new InputError('cache', `head_dim ${config.head_dim} is not a multiple of the quantization group ${GROUP}`);
    }
    if (!Number.isInteger(opts.capacity) || opts.capacity < 1) throw new InputError('cache',
      `capacity must be a positive integer (got ${opts.capacity})`);
    if (opts.capacity > config.max_position_embeddings) {
      throw new InputError('cache',
        `capacity ${opts.capacity} exceeds max_position_embeddings ${config.max_position_embeddings}`);
    }
    // With one side quantized and the other not, attention reads the quantized side dequantized to f32: keep the
    // full side in f32 too (its values still rounded to the activation dtype), so both sides share a dtype.
    const mixed = (this.kv.k === null) !== (this.kv.v === null);
    this.fullDtype = mixed ? 'f32' : opts.dtype;
    const geo = { heads: config.num_attention_heads, headDim: config.head_dim, ropeBase: config.rope_theta,
      round: roundFor(opts.dtype) };
    for (let s = 0; s < cacheSlots(config); s++) {
      this.slots.push(new CacheSlot(this.side(this.kv.k, `slot${s}.k`), this.side(this.kv.v, `slot${s}.v`), geo));
    }
  }

  get capacity(): number { return this.opts.capacity; }

  /** Whether the coming forward attends to full precision for a quantized side ('after-prefill', first pass). */
  get fullPrecisionPass(): boolean {
    return this.mode === 'after-prefill' && !this.prefillDone;
  }

  /**
   * Start a forward of `tokenTypes.length` new positions (token type 1 = the prompt's bidirectional block): checks
   * room, builds the attention mask and the state every slot shares. `end` must follow.
   */
  begin(tokenTypes: number[]): CachePass {
    const S = tokenTypes.length;
    this.reserve(S);
    const pass: CachePass = { S, offset: this.offset, tokenTypes, mask: this.maskFor(tokenTypes),
      shadow: this.fullPrecisionPass ? new Map() : null, temps: [], reach: this.reach };
    if (pass.mask.kind === 'prefix') pass.temps.push(pass.mask.tokenTypes);
    return pass;
  }

  /** Finish a forward begun with `begin`: frees its temporaries and records its positions. */
  end(pass: CachePass): void {
    for (const t of pass.temps) t.dispose();
    this.advance(pass.tokenTypes);
  }

  /** Record S new positions after a forward. */
  advance(tokenTypes: number[]): void {
    this.offset += tokenTypes.length;
    this.tokenTypes.push(...tokenTypes);
    this.prefillDone = true;
  }

  /**
   * Run `fn` as if `pos` positions were cached (a decode step is captured at several positions without running
   * it), its attention over `reach` keys when given (the same at each: kernels/plan/reach.ts), then restore
   * the offset and token types.
   */
  at<T>(pos: number, fn: () => T, reach?: number): T {
    const offset = this.offset, types = this.tokenTypes.length;
    this.offset = pos;
    this.reach = reach;
    try {
      return fn();
    } finally {
      this.offset = offset;
      this.tokenTypes.length = types;
      this.reach = undefined;
    }
  }

  /**
   * Forget the positions from `pos` on, back to a decode step that is redone (a persistent step whose barrier ran
   * out: stepper.ts). Their keys and values stay in the slots until the redone steps write those positions again;
   * no attention reads them before (a forward attends to the keys below its own offset and its new ones).
   */
  rewind(pos: number): void {
    if (!Number.isInteger(pos) || pos < 1 || pos > this.offset) {
      throw new InputError('cache',
        `cannot rewind to position ${pos}: it must be a whole number in [1, ${this.offset}]`);
    }
    this.offset = pos;
    this.tokenTypes.length = pos;
  }

  /** Check room for S more positions. */
  reserve(S: number): void {
    if (this.offset + S > this.capacity) {
      throw new InputError('cache',
        `${this.offset} cached + ${S} new positions exceed the cache capacity ${this.capacity}; ` +
        `create the cache with a larger 'capacity' option`);
    }
  }

  /** GPU bytes held by the cache. */
  get bytes(): number {
    return this.slots.reduce((n, s) => n + s.bytes, 0);
  }

  dispose(): void {
    for (const s of this.slots) s.dispose();
    this.slots.length = 0;
  }

  /** The attention mask of the coming positions, in kernel terms. */
  private maskFor(newTypes: number[]): AttnMask {
    const S = newTypes.length;
    if (S === 1 && newTypes[0] === 0) return { kind: 'none' }; // one causal query sees every cached key
    if (newTypes.every((t) => t === 1) && this.offset === 0) return { kind: 'none' }; // the prompt as one block
    if (newTypes.every((t) => t === 0)) return { kind: 'causal' };
    const types = [...this.tokenTypes, ...newTypes];
    return { kind: 'prefix', tokenTypes: Tensor.from(this.gpu, types, [types.length], 'u32', 'token_types') };
  }

  private side(bits: number | TurboType | null, label: string): CacheSide {
    const { num_attention_heads: heads, head_dim: headDim } = this.config;
    const capacity = this.capacity;
    if (bits === null) return { kind: 'full',
      data: Tensor.empty(this.gpu, [heads, capacity, headDim], this.fullDtype, label) } satisfies FullKV;
    if (typeof bits === 'string') return turboKV(this.gpu, { heads, capacity, headDim, type: bits, label });
    return quantKV(this.gpu, { heads, capacity, headDim, bits, label });
  }
}

/** Cache bytes for `capacity` positions without allocating (for "will it fit" checks). */
export function cacheBytes(c: HrmConfig, capacity: number, dtype: ActDtype, kv: KvStorage = FULL_KV): number {
  const full = (kv.k === null) !== (kv.v === null) ? 'f32' : dtype;
  const per = (bits: number | TurboType | null) => bits === null
    ? storageBytes(full, c.num_attention_heads * capacity * c.head_dim)
    : typeof bits === 'string' ? c.num_attention_heads * capacity * turboHeadBytes(bits, c.head_dim)
      : c.num_attention_heads * capacity * ((c.head_dim * bits) / 8 + (2 * 4 * c.head_dim) / GROUP);
  return cacheSlots(c) * (per(kv.k) + per(kv.v));
}
