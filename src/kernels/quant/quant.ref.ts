// CPU references for group-wise affine quantization (quant.ts): the Metal `affine_quantize` rules in exact f32
// arithmetic (every op rounded with Math.fround, which is the correctly rounded f32 result), bit packing, and
// dequantization. Usable by other code on the CPU (e.g. quantizing weights at load time without a GPU).
import { roundBf16, roundF16 } from '../../tensor/dtype.ts';
import type { Round } from '../common/codes.ts';

import { GROUP, GROUP_SIZES, QUANT_BITS, type QuantRules } from './rules.ts';

export { GROUP, GROUP_SIZES, QUANT_BITS, type QuantRules };

/** Rounding of a value to the activation dtype, kept as a number (f32 mode: to f32). */
export function roundTo(round: Round, v: number): number {
  return round === 'bf16' ? roundBf16(v) : round === 'f16' ? roundF16(v) : Math.fround(v);
}

/** Most negative finite value of the activation dtype (what a masked score becomes). */
export function dtypeMin(round: Round): number {
  return round === 'bf16' ? -3.3895313892515355e38 : round === 'f16' ? -65504 : -3.4028234663852886e38;
}

/** Metal `round`: halves away from zero. */
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}

/** u32 words per row of `cols` values at `bits` bits (cols a multiple of the group size >= 32: whole words). */
export function packedCols(cols: number, bits: number): number {
  return (cols * bits) / 32;
}

export interface QuantizedRef { q: Uint32Array; scales: Float32Array; biases: Float32Array }
export interface QuantRefOptions { bits: number; groupSize?: number; round?: Round; rules?: QuantRules }

/** The f32 scale, bias and integer levels of one group, as Metal's affine_quantize computes them. */
export function quantizeGroupRef(w: ArrayLike<number>, bits: number,
  rules: QuantRules = 'metal'): { scale: number; bias: number; levels: number[] } {
  const f = Math.fround;
  const nBins = 2 ** bits - 1;
  const rnd = rules === 'metal' ? roundHalfAway : roundHalfEven;
  // Metal: running max starts at 0 and running min at the dtype's max; CPU: true max and min.
  let wMin = rules === 'metal' ? 3.4028234663852886e38 : Infinity, wMax = rules === 'metal' ? 0 : -Infinity;
  for (let i = 0; i < w.length; i++) { wMin = Math.min(wMin, f(w[i])); wMax = Math.max(wMax, f(w[i])); }
  let scale = Math.max(f(f(wMax - wMin) / nBins), f(1e-7));
  const side = Math.abs(wMin) > Math.abs(wMax);
  if (!side) scale = -scale;
  const edge = side ? wMin : wMax;
  const q0 = rnd(f(edge / scale));
  let bias = 0;
  if (q0 !== 0) { scale = f(edge / q0); bias = edge; }
  // Values use the f32 scale/bias above, not the stored (rounded) ones; max(0, ·) is unreachable but keeps
  // the level a valid unsigned value if it ever were negative.
  const levels = Array.from(w, (v) => Math.max(0, Math.min(rnd(f(f(f(v) - bias) / scale)), nBins)));
  return { scale, bias, levels };
}

/** C `rint` in the default mode: halves to even. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x); // halves up
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Write `bits`-bit level `v` as value `j` of a little-endian bit stream held in `words` from word `base`. */
export function packLevel(words: Uint32Array, base: number, j: number, bits: number, v: number): void {
  const bit = j * bits, w = base + (bit >>> 5), s = bit & 31;
  words[w] = (words[w] | (v << s)) >>> 0;
  if (s + bits > 32) words[w + 1] = (words[w + 1] | (v >>> (32 - s))) >>> 0;
}

/** Level of value `j` of the little-endian bit stream starting at word `base`. */
export function unpackLevel(words: ArrayLike<number>, base: number, j: number, bits: number): number {
  const bit = j * bits, w = base + (bit >>> 5), s = bit & 31, mask = 2 ** bits - 1;
  let v = words[w] >>> s;
  if (s + bits > 32) v |= words[w + 1] << (32 - s);
  return (v & mask) >>> 0;
}

/** mx.quantize(w [rows, cols], groupSize, bits) with Metal's rules; scales/biases rounded to the dtype. */
export function quantizeRef(w: ArrayLike<number>, rows: number, cols: number,
  { bits, groupSize = GROUP, round = 'none', rules = 'metal' }: QuantRefOptions): QuantizedRef {
  checkQuantArgs('quantizeRef', cols, bits, groupSize);
  const gs = groupSize, groups = cols / gs, wpr = packedCols(cols, bits);
  const q = new Uint32Array(rows * wpr);
  const scales = new Float32Array(rows * groups), biases = new Float32Array(rows * groups);
  for (let r = 0; r < rows; r++) {
    for (let g = 0; g < groups; g++) {
      const start = r * cols + g * gs;
      const vals = Array.from({ length: gs }, (_, i) => w[start + i]);
      const { scale, bias, levels } = quantizeGroupRef(vals, bits, rules);
      scales[r * groups + g] = roundTo(round, scale);
      biases[r * groups + g] = roundTo(round, bias);
      for (let i = 0; i < gs; i++) packLevel(q, r * wpr, g * gs + i, bits, levels[i]);
    }
  }
  return { q, scales, biases };
}

/**
 * mx.dequantize: w' = r(r(level * scale) + bias) with the stored scale/bias, each op rounded to the dtype (MLX
 * multiplies and adds in the input dtype; in f32 these are the two f32 roundings).
 */
export function dequantizeRef(q: ArrayLike<number>, scales: ArrayLike<number>, biases: ArrayLike<number>, rows: number,
  cols: number, { bits, groupSize = GROUP, round = 'none' }: QuantRefOptions): Float32Array {
  checkQuantArgs('dequantizeRef', cols, bits, groupSize);
  const groups = cols / groupSize, wpr = packedCols(cols, bits);
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const g = r * groups + Math.floor(c / groupSize);
      const lv = unpackLevel(q, r * wpr, c, bits);
      out[r * cols + c] = roundTo(round, roundTo(round, lv * scales[g]) + biases[g]);
    }
  }
  return out;
}

/** Dequantized values in float64 (no output rounding): the operand the matmul references multiply with. */
export function dequantizeExact(q: ArrayLike<number>, scales: ArrayLike<number>, biases: ArrayLike<number>,
  rows: number, cols: number, bits: number, groupSize = GROUP): Float64Array {
  const groups = cols / groupSize, wpr = packedCols(cols, bits);
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const g = r * groups + Math.floor(c / groupSize);
      out[r * cols + c] = unpackLevel(q, r * wpr, c, bits) * scales[g] + biases[g];
    }
  }
  return out;
}

export function checkQuantArgs(op: string, cols: number, bits: number, groupSize: number): void {
  if (!GROUP_SIZES.includes(groupSize)) {
    throw new Error(`[${op}] group size ${groupSize} is not one of ${GROUP_SIZES.join(', ')}`);
  }
  if (!QUANT_BITS.includes(bits)) throw new Error(`[${op}] bits ${bits} not in ${QUANT_BITS.join(', ')}`);
  if (cols % groupSize !== 0) throw new Error(`[${op}] cols ${cols} is not a multiple of the group size ${groupSize}`);
}
