// The quantized side of a KV cache slot, as mlx-lm's QuantizedKVCache stores K/V: allocation, checks, the
// append of new positions (group-64 affine along headDim, one group per position) and the dequantized view
// attention reads when the other side is full precision.
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { ShapeError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { GROUP, checkPacked, checkQuant, dequantize, quantizeInto, requireDtype,
  type QuantRules } from '../quant/quant.ts';
import type { FullKV, QuantKV } from './types.ts';
import { decodeSpan } from '../plan/reach.ts';

/**
 * An empty quantized cache side: q u32 [heads, capacity, headDim*bits/32], scales/biases f32
 * [heads, capacity, headDim/64].
 */
export function quantKV(gpu: Gpu,
  { heads, capacity, headDim, bits,
  label = 'quantKV' }: { heads: number; capacity: number; headDim: number; bits: number; label?: string }): QuantKV {
  checkQuant('quantKV', bits, headDim);
  return {
    kind: 'quant', bits,
    q: Tensor.empty(gpu, [heads, capacity, (headDim * bits) / 32], 'u32', `${label}.q`),
    scales: Tensor.empty(gpu, [heads, capacity, headDim / GROUP], 'f32', `${label}.scales`),
    biases: Tensor.empty(gpu, [heads, capacity, headDim / GROUP], 'f32', `${label}.biases`),
  };
}

/** Validates a quantized cache side against [heads, *, headDim]; returns its capacity. */
export function checkQuantKV(op: string, side: QuantKV, heads: number, headDim: number): number {
  if (side.kind !== 'quant') throw new ShapeError(op,
    `cache side is '${(side as { kind: string }).kind}'; expected 'quant'`);
  const cols = checkPacked(op, side.q, side.scales, side.biases, side.bits);
  if (side.q.rank !== 3 || side.q.shape[0] !== heads || cols !== headDim) {
    throw new ShapeError(op,
      `cache '${side.q.label}' [${side.q.shape.join(', ')}] at ${side.bits} bits ` +
      `does not hold ${heads} heads of ${headDim} values`);
  }
  return side.q.shape[1];
}

export interface AppendOptions { offset: number; round?: Round; rules?: QuantRules }

/** cache[h, offset + s] = quantize(src[h, s, :]) for src f32 [H, S, D], as mlx-lm's QuantizedKVCache stores K/V. */
export function appendQuantized(src: Tensor, side: QuantKV,
  { offset, round = 'none', rules = 'metal' }: AppendOptions): void {
  const op = 'appendQuantized';
  requireDtype(op, src, 'f32');
  if (src.rank !== 3) throw new ShapeError(op,
    `src '${src.label}' is [${src.shape.join(', ')}]; expected [heads, S, headDim]`);
  const [heads, seq, dim] = src.shape;
  const cap = checkQuantKV(op, side, heads, dim);
  if (!(Number.isInteger(offset) && offset >= 0 && offset + seq <= cap)) {
    throw new ShapeError(op, `positions ${offset}..${offset + seq} do not fit the cache capacity ${cap}`);
  }
  if (seq === 0) return;
  quantizeInto(src, side,
    { rows: heads * seq, cols: dim, srcRows: seq, dstRows: cap, dstRow0: offset, bits: side.bits, groupSize: GROUP,
    round, rules });
}

/**
 * The side dequantized ([heads, capacity, headDim] f32, rounded per `round`) over its first `len` positions, or
 * over a captured step's `reach` (its dispatch replays at every position of the reach, so it cannot follow len);
 * the positions past them are left unwritten. The caller disposes `data`.
 */
export function dequantizeKV(side: QuantKV, { len, round = 'none', reach }: { len: number; round?: Round;
  reach?: number }): FullKV {
  const used = decodeSpan('dequantizeKV', len, side.q.shape[1], reach);
  return { kind: 'full', data: dequantize(side.q, side.scales, side.biases, { bits: side.bits, round,
    rows: { used } }) };
}
