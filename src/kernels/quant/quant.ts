// Group-wise affine quantization as mx.quantize / mx.dequantize (Metal rules; groups of 32, 64 or 128, 64 by
// default as in MLX). The quantized KV cache's side (allocation, checks, append; group 64) is attention/kvquant.ts,
// built on `quantizeInto`.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { roundCode, type Round } from '../common/codes.ts';
import { GROUP, GROUP_SIZES, QUANT_BITS, type QuantRules } from './rules.ts';

export { GROUP, GROUP_SIZES, QUANT_BITS, type QuantRules };

const QUANTIZE = new Kernel('quant/quant.wgsl', 'quantize');
const DEQUANTIZE = new Kernel('quant/dequant.wgsl', 'dequantize');
const RULES_CODE: Record<QuantRules, number> = { metal: 0, cpu: 1 };
const WG = 64;

export interface QuantizeOptions {
  bits: number;
  /** Values per group: 32, 64 (default, MLX's and the KV cache's) or 128. */
  groupSize?: number;
  /** Dtype the scales/biases are stored in (rounded, kept as f32). */
  round?: Round;
  /** 'metal' (default): MLX's GPU kernel; 'cpu': MLX's CPU backend (true max, halves to even). */
  rules?: QuantRules;
}

/** Packed levels u32 [..., cols*bits/32] with scales and biases f32 [..., cols/groupSize]. */
export interface Quantized { q: Tensor; scales: Tensor; biases: Tensor }

/** Bits per level: one of QUANT_BITS. */
export function checkBits(op: string, bits: number): void {
  if (!QUANT_BITS.includes(bits)) throw new InputError(op, `bits ${bits} is not one of ${QUANT_BITS.join(', ')}`);
}

/** Group size: one of GROUP_SIZES (what mx.quantize offers). */
export function checkGroupSize(op: string, groupSize: number): void {
  if (!GROUP_SIZES.includes(groupSize)) throw new InputError(op,
    `group size ${groupSize} is not one of ${GROUP_SIZES.join(', ')}`);
}

/** Validates bits and group size; `cols` (values per row) must be a multiple of the group size. */
export function checkQuant(op: string, bits: number, cols: number, groupSize = GROUP): void {
  checkGroupSize(op, groupSize);
  checkBits(op, bits);
  if (!(cols > 0 && cols % groupSize === 0)) throw new ShapeError(op,
    `${cols} values per row is not a positive multiple of the group size ${groupSize}`);
}

export function requireDtype(op: string, t: Tensor, dtype: 'f32' | 'u32'): void {
  if (t.dtype !== dtype) throw new DTypeError(op, `'${t.label}' is ${t.dtype}; expected ${dtype}`);
}

/** Values per row of a packed tensor (its last axis holds cols*bits/32 words), checked against scales/biases. */
export function checkPacked(op: string, q: Tensor, scales: Tensor, biases: Tensor, bits: number,
  groupSize = GROUP): number {
  requireDtype(op, q, 'u32');
  requireDtype(op, scales, 'f32');
  requireDtype(op, biases, 'f32');
  checkBits(op, bits);
  checkGroupSize(op, groupSize);
  const words = q.shape[q.rank - 1];
  const cols = (words * 32) / bits;
  const lead = q.shape.slice(0, -1);
  const want = [...lead, cols / groupSize];
  if (!Number.isInteger(cols) || cols % groupSize !== 0) {
    throw new ShapeError(op,
      `packed '${q.label}' [${q.shape.join(', ')}] holds ${words} words per row, not a whole number of ` +
      `${bits}-bit groups of ${groupSize}`);
  }
  for (const t of [scales, biases]) {
    if (t.rank !== want.length || t.shape.some((d, i) => d !== want[i])) {
      throw new ShapeError(op,
        `'${t.label}' is [${t.shape.join(', ')}]; packed [${q.shape.join(', ')}] at ${bits} bits ` +
        `needs [${want.join(', ')}]`);
    }
  }
  return cols;
}

/** mx.quantize(w, groupSize, bits): per group along the last axis, level = round((w - bias) / scale) (Metal rules). */
export function quantize(w: Tensor,
  { bits, groupSize = GROUP, round = 'none', rules = 'metal' }: QuantizeOptions): Quantized {
  const op = 'quantize';
  requireDtype(op, w, 'f32');
  if (w.rank < 1) throw new ShapeError(op, `w '${w.label}' is a scalar; expected [..., cols]`);
  const cols = w.shape[w.rank - 1];
  checkQuant(op, bits, cols, groupSize);
  const rows = w.size / cols;
  const lead = w.shape.slice(0, -1);
  const gpu = w.gpu;
  const out: Quantized = {
    q: Tensor.empty(gpu, [...lead, (cols * bits) / 32], 'u32', 'quantize.q'),
    scales: Tensor.empty(gpu, [...lead, cols / groupSize], 'f32', 'quantize.scales'),
    biases: Tensor.empty(gpu, [...lead, cols / groupSize], 'f32', 'quantize.biases'),
  };
  quantizeInto(w, out,
    { rows, cols, srcRows: Math.max(rows, 1), dstRows: Math.max(rows, 1), dstRow0: 0, bits, groupSize, round, rules });
  return out;
}

export interface DequantizeOptions {
  bits: number; groupSize?: number; round?: Round;
  /**
   * Rows decoded: the first `used` of every block of `block` rows (q's second-to-last axis, a cache's capacity);
   * the other rows of the output are left unwritten. Default: every row.
   */
  rows?: { used: number };
}

/** mx.dequantize: w' = level * scale + bias with the stored scale/bias, each op rounded to the dtype. */
export function dequantize(q: Tensor, scales: Tensor, biases: Tensor,
  { bits, groupSize = GROUP, round = 'none', rows }: DequantizeOptions): Tensor {
  const op = 'dequantize';
  const cols = checkPacked(op, q, scales, biases, bits, groupSize);
  const shape = [...q.shape.slice(0, -1), cols];
  const block = q.rank > 1 ? q.shape[q.rank - 2] : 1;
  const used = rows?.used ?? block;
  if (!(Number.isInteger(used) && used >= 0 && used <= block)) {
    throw new ShapeError(op, `rows.used ${used} is not within the ${block} rows of a block of '${q.label}'`);
  }
  const out = Tensor.empty(q.gpu, shape, 'f32', 'dequantize.out');
  const n = (out.size / (block * cols)) * used * cols;
  if (n === 0) return out;
  DEQUANTIZE.dispatch(q.gpu, {
    bindings: { q, scales, biases, out },
    uniforms: { n, cols, zero: 0, block, used },
    overrides: { BITS: bits, GS: groupSize, ROUND: roundCode('quantize', round), WG },
    workgroups: grid(q.gpu, n, WG),
  });
  return out;
}

/**
 * Where quantizeInto reads and writes: `rows` rows of `cols` values, read as blocks of `srcRows` rows and written
 * to the same blocks of `dstRows` rows starting at row `dstRow0` (a cache [H, capacity] takes [H, S] at an offset).
 */
export interface QuantizeLayout {
  rows: number; cols: number; srcRows: number; dstRows: number; dstRow0: number; bits: number; groupSize: number;
  round: Round; rules: QuantRules;
}

/** quantize's dispatch into existing q / scales / biases (checked by the caller). */
export function quantizeInto(w: Tensor, out: Quantized, l: QuantizeLayout): void {
  const gpu = w.gpu;
  const groups = (l.rows * l.cols) / l.groupSize;
  QUANTIZE.dispatch(gpu, {
    bindings: { w, q: out.q, scales: out.scales, biases: out.biases },
    uniforms: { groups, gpr: l.cols / l.groupSize, src_rows: l.srcRows, dst_rows: l.dstRows, dst_row0: l.dstRow0 },
    overrides: { BITS: l.bits, GS: l.groupSize, ROUND: roundCode('quantize', l.round), RULES: RULES_CODE[l.rules], WG },
    workgroups: grid(gpu, groups, WG),
  });
}
