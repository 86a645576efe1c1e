// The reference for the tensor cores' f16 operand rows (common/f16_scale.inc.wgsl, taken by matmul/sgmat_prep.wgsl's
// to_f16 and attention/sdpa_mm_f16.wgsl's qkv_f16): the power of two a row is scaled by.

/**
 * 14 - floor(log2 max|row|) over the row's finite values (its largest lands in [2^14, 2^15)), at most 127; 0 for a
 * row of zeros.
 */
export function f16RowExponent(row: ArrayLike<number>): number {
  let top = 0;
  for (let i = 0; i < row.length; i++) if (Number.isFinite(row[i])) top = Math.max(top, Math.abs(row[i]));
  return top > 0 ? Math.min(127, 14 - Math.floor(Math.log2(top))) : 0;
}
