// Codes the kernels share: how an op rounds its output, and which attention mask it applies. WGSL reads them as
// override constants (ROUND, MASK); the numbers here are the ones the shaders test for.

/** Output rounding of a kernel: none (f32 mode), or to bf16 / f16 values kept in f32 storage (MLX-dtype modes). */
export type Round = 'none' | 'bf16' | 'f16';

/** ROUND override: 0 keeps f32, 1 rounds to bf16, 2 to f16 (common/round.inc.wgsl). */
export const ROUND_CODE: Record<Round, number> = { none: 0, bf16: 1, f16: 2 };

/** MASK override of the attention kernels (common/mask.inc.wgsl); the kinds are AttnMask's. */
export const MASK_CODE = { none: 0, causal: 1, prefix: 2, explicit: 3 } as const;
export type MaskKind = keyof typeof MASK_CODE;
