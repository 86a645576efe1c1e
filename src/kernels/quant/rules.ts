// The quantization parameters MLX accepts, shared by the kernels, the config loader, the KV-spec parser and the CPU
// references (quant.ref.ts), so product code never imports a reference file.

/** The KV cache's group size, and mx.quantize's default. */
export const GROUP = 64;
export const QUANT_BITS: readonly number[] = [2, 3, 4, 5, 6, 8];
/** Group sizes mx.quantize offers (64 is its default and the KV cache's). */
export const GROUP_SIZES: readonly number[] = [32, 64, 128];
/**
 * Rounding rules: 'metal' is MLX's GPU kernel (running max starts at 0, halves round away from zero); 'cpu' is
 * MLX's CPU backend (true max, halves to even). They differ only on all-negative groups and exact halves.
 */
export type QuantRules = 'metal' | 'cpu';
