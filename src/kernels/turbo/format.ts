// TurboQuant's KV blocks as the llama.cpp fork codes them (github.com/TheTom/llama-cpp-turboquant, pinned at
// 69d8e4be4, tag feature-turboquant-kv-cache-b9079-69d8e4b; ggml-common.h, ggml-turbo-quant.c, ggml-cuda/
// turbo-quant.cuh, ggml-metal.metal). A head vector, zero-padded to a multiple of 128 as the fork's cache pads it,
// is coded in groups of 128: the group's L2 norm kept apart, the normalized group rotated by a Walsh-Hadamard
// transform between two fixed sign patterns, each rotated value coded by a Lloyd-Max codebook for N(0, 1/128).
// The stored norm is the group norm over the norm of the chosen centroids (so a decoded group has the input's
// norm), as f16. Bytes of one 128-value block (little-endian):
//   turbo2_0: norm f16 | 32 bytes of 2-bit indices (4 a byte, low bits first)                       = 34 bytes
//   turbo3_0: norm f16 | 32 bytes of the indices' low 2 bits | 16 bytes of their high bit (8 a byte) = 50 bytes
//   turbo4_0: norm f16 | rnorm f16 (0, reserved) | 64 bytes of 4-bit indices (2 a byte, low first)   = 68 bytes
// On the GPU a block takes whole 32-bit words: the fork's bytes, then 2 zero bytes for turbo2/3 (9, 13, 17 words).
import { InputError } from '../../errors.ts';

export type TurboType = 'turbo2' | 'turbo3' | 'turbo4';
export const TURBO_TYPES: readonly TurboType[] = ['turbo2', 'turbo3', 'turbo4'];

/** Values a block codes: the WHT group (the fork's QK_TURBO* and TURBO_D). */
export const TURBO_GROUP = 128;

/** Index bits of each type. */
export const TURBO_BITS: Readonly<Record<TurboType, number>> = { turbo2: 2, turbo3: 3, turbo4: 4 };

/** The fork's block bytes (sizeof block_turbo*_0). */
export const TURBO_BLOCK_BYTES: Readonly<Record<TurboType, number>> = { turbo2: 34, turbo3: 50, turbo4: 68 };

/** 32-bit words a block takes on the GPU. */
export function turboBlockWords(t: TurboType): number {
  return Math.ceil(TURBO_BLOCK_BYTES[t] / 4);
}

/** Centroids (CENTROIDS_*BIT, identical on CPU, CUDA and Metal), as f32 constants. */
export const TURBO_CENTROIDS: Readonly<Record<TurboType, readonly number[]>> = {
  turbo2: [-0.133462, -0.039994, 0.039994, 0.133462],
  turbo3: [-0.190685, -0.117832, -0.065717, -0.021460, 0.021460, 0.065717, 0.117832, 0.190685],
  turbo4: [
    -0.173926, -0.117195, -0.089527, -0.068756, -0.051262, -0.035597, -0.020989, -0.006938,
    0.006938, 0.020989, 0.035597, 0.051262, 0.068756, 0.089527, 0.117195, 0.173926,
  ],
};

/**
 * Decision boundaries: index i is the first with value < bound[i] (the last index otherwise). The CPU's and
 * Metal's (nearest_centroid_*bit, turbo_mid_*bit); CUDA's 4-bit table differs in the last digit at +-0.145561 and
 * +-0.013964.
 */
export const TURBO_BOUNDS: Readonly<Record<TurboType, readonly number[]>> = {
  turbo2: [-0.086728, 0, 0.086728],
  turbo3: [-0.154259, -0.091775, -0.043589, 0, 0.043589, 0.091775, 0.154259],
  turbo4: [
    -0.145560, -0.103361, -0.079142, -0.060009, -0.043430, -0.028293, -0.013963, 0,
    0.013963, 0.028293, 0.043430, 0.060009, 0.079142, 0.103361, 0.145560,
  ],
};

/** The WHT's sign patterns (turbo_cpu_s1/s2, TURBO_WHT_SIGNS1/2, seed 42): bit i of the words set = -1. */
export const TURBO_SIGNS1 = [0xe46a0359, 0x42f85949, 0xa4c63bbb, 0x49f250a9] as const;
export const TURBO_SIGNS2 = [0x16acee90, 0x3f628fdc, 0xb7a5357a, 0xbea56562] as const;

/** The sign (+1 or -1) of element i of a pattern. */
export function turboSign(words: readonly number[], i: number): number {
  return (words[i >>> 5] >>> (i & 31)) & 1 ? -1 : 1;
}

/** 1/sqrt(128) as the fork writes it (0.08838834764831845f). */
export const TURBO_INV_SQRT_GROUP = Math.fround(0.08838834764831845);

/** Head dims a turbo side takes: multiples of 64 (the fork pads each head to a multiple of 128). */
export function checkTurboHeadDim(op: string, headDim: number): void {
  if (!(Number.isInteger(headDim) && headDim > 0 && headDim % 64 === 0)) {
    throw new InputError(op, `head_dim ${headDim} is not a multiple of 64; TurboQuant caches take head dims 64, 128, `
      + '192, ...');
  }
}

/** A head's padded width: headDim rounded up to whole 128-value groups. */
export function turboPadded(headDim: number): number {
  return Math.ceil(headDim / TURBO_GROUP) * TURBO_GROUP;
}

/** GPU bytes one head of one position takes. */
export function turboHeadBytes(t: TurboType, headDim: number): number {
  return (turboPadded(headDim) / TURBO_GROUP) * turboBlockWords(t) * 4;
}
