// RoPE (non-traditional, rotate-half) on [B, H, S, D] activations.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../errors.ts';
import { roundCode, type Round } from '../common/codes.ts';

const ROPE = new Kernel('rope/rope.wgsl', 'rope');

export interface RopeOptions { base: number; scale?: number; offset: number; round?: Round }

/** out = x rotated pairwise (i, i + D/2) by theta = (offset + s) * scale * base^(-i/(D/2)); f32 math, one rounding. */
export function rope(x: Tensor, { base, scale = 1, offset, round = 'none' }: RopeOptions): Tensor {
  if (x.dtype !== 'f32') throw new DTypeError('rope', `x '${x.label}' is ${x.dtype}; expected f32`);
  if (x.rank < 2) throw new ShapeError('rope', `x [${x.shape.join(', ')}] must be [..., S, D]`);
  const dim = x.shape[x.rank - 1], seq = x.shape[x.rank - 2];
  if (dim % 2 !== 0 || dim === 0) throw new ShapeError('rope',
    `head dim ${dim} of x [${x.shape.join(', ')}] must be even and > 0`);
  checkRopeArgs('rope', base, scale, offset, offset + seq);
  const out = Tensor.empty(x.gpu, x.shape, 'f32', 'rope.out');
  const nPairs = x.size / 2;
  ROPE.dispatch(x.gpu, {
    bindings: { x, out },
    uniforms: { n_pairs: nPairs, seq, half: dim / 2, offset, scale, log2_base: Math.log2(base) },
    overrides: { ROUND: roundCode('rope', round) },
    workgroups: grid(x.gpu, nPairs, 64),
  });
  return out;
}

/** Shared argument checks of every RoPE entry point. */
export function checkRopeArgs(op: string, base: number, scale: number, offset: number, end: number): void {
  if (!(base > 1) || !Number.isFinite(base)) throw new ShapeError(op, `base ${base} must be a finite number > 1`);
  if (!Number.isFinite(scale)) throw new ShapeError(op, `scale ${scale} must be finite`);
  // Positions are exact in f32 up to 2^24; the angle reduction is exact well past any context length.
  if (!Number.isInteger(offset) || offset < 0 || end > 2 ** 24) throw new ShapeError(op,
    `offset ${offset} must be an integer in [0, 2^24 - S]`);
}
