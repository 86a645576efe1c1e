// Codes the kernels share: how an op rounds its output, and which attention mask it applies. WGSL reads them as
// override constants (ROUND, MASK, the dtype codes); the numbers here are the ones the shaders test for.
import { DTypeError } from '../../errors.ts';

/** Output rounding of a kernel: none (f32 mode), or to bf16 / f16 values kept in f32 storage (MLX-dtype modes). */
export type Round = 'none' | 'bf16' | 'f16';

/** ROUND override: 0 keeps f32, 1 rounds to bf16, 2 to f16 (common/round.inc.wgsl). */
export const ROUND_CODE: Record<Round, number> = { none: 0, bf16: 1, f16: 2 };

/** The ROUND code of `op`'s `round` option (absent: none); an unknown value is a DTypeError, never a silent f32. */
export function roundCode(op: string, round: Round | undefined): number {
  const c = ROUND_CODE[round ?? 'none'];
  if (c === undefined) throw new DTypeError(op, `unknown round ${JSON.stringify(round)}; use 'none', 'bf16' or 'f16'`);
  return c;
}

/** Storage dtype of a weight / table / scales binding (WDT, SDT overrides): f32 words or two 16-bit halves a word. */
export const DTYPE_CODE = { f32: 0, bf16: 1, f16: 2 } as const;

/** MASK override of the attention kernels (common/mask.inc.wgsl); the kinds are AttnMask's. */
export const MASK_CODE = { none: 0, causal: 1, prefix: 2, explicit: 3 } as const;
