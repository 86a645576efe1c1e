// Shapes shared by the attention kernels (full-precision and quantized) and the model's KV cache.
import type { Tensor } from '../../tensor/tensor.ts';
import type { TurboType } from '../turbo/format.ts';

/**
 * Which keys a query may attend to. Queries are the S new positions at cache offset `off`; keys are the
 * `kvLen = off + S` cached positions. Query i (absolute position off + i) may attend key j when:
 *  - none:     always
 *  - causal:   j <= off + i
 *  - prefix:   j <= off + i, or tokenTypes[off + i] == 1 and tokenTypes[j] == 1 (prefix-LM block)
 *  - explicit: mask[i * kvLen + j] != 0
 */
export type AttnMask =
  | { kind: 'none' }
  | { kind: 'causal' }
  | { kind: 'prefix'; tokenTypes: Tensor /* u32 [kvLen] */ }
  | { kind: 'explicit'; mask: Tensor /* u32 [S, kvLen] */ };

/** One side (K or V) of a full-precision cache slot: [heads, capacity, headDim], f32 or packed bf16. */
export interface FullKV { kind: 'full'; data: Tensor }

/**
 * One side of a quantized cache slot (group 64 along headDim, MLX affine, packed as mx.quantize packs):
 * q u32 [heads, capacity, headDim * bits / 32]; scales, biases f32 [heads, capacity, headDim / 64] holding values
 * already rounded to the activation dtype (MLX stores them in the input dtype).
 */
export interface QuantKV { kind: 'quant'; bits: number; q: Tensor; scales: Tensor; biases: Tensor }

/**
 * One side of a TurboQuant cache slot (kernels/turbo/format.ts): codes u32 [heads, capacity, words], each head
 * zero-padded to whole 128-value groups, a block of the fork's bytes a group.
 */
export interface TurboKV { kind: 'turbo'; type: TurboType; headDim: number; codes: Tensor }

export type KVSide = FullKV | QuantKV;

/** What a cache slot holds a side in: a side the attention kernels read, or a TurboQuant side. */
export type CacheSide = KVSide | TurboKV;

/**
 * A decode step's query as the attention kernels that append it read it (appendAttendOne, qsdpaOneAppend): the
 * gqkv row [1, 4*H*D], its H * D width and log2 of the RoPE base.
 */
export interface AppendedRow { src: Tensor; width: number; log2Base: number }
