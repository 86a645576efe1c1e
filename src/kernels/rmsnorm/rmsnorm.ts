// RMSNorm over the last axis (parameterless, as HRM uses it).
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../errors.ts';
import { roundCode, type Round } from '../common/codes.ts';

const RMS_NORM = new Kernel('rmsnorm/rmsnorm.wgsl', 'rms_norm');

export interface RmsNormOptions { eps: number; round?: Round }

/** y = x * rsqrt(mean(x^2, last axis) + eps), f32 accumulation, output rounded once per `round`. */
export function rmsNorm(x: Tensor, { eps, round = 'none' }: RmsNormOptions): Tensor {
  if (x.dtype !== 'f32') throw new DTypeError('rmsNorm', `x '${x.label}' is ${x.dtype}; expected f32`);
  if (x.rank < 1 || x.shape[x.rank - 1] === 0) throw new ShapeError('rmsNorm',
    `x [${x.shape.join(', ')}] needs a non-empty last axis`);
  if (!(eps >= 0)) throw new ShapeError('rmsNorm', `eps ${eps} must be >= 0`);
  const dim = x.shape[x.rank - 1];
  const rows = x.size / dim;
  const out = Tensor.empty(x.gpu, x.shape, 'f32', 'rmsNorm.out');
  // Narrow rows do not need 256 threads; keep the group a power of two for the tree reduction.
  const wg = dim >= 1024 ? 256 : dim >= 256 ? 128 : 64;
  RMS_NORM.dispatch(x.gpu, {
    bindings: { x, out },
    uniforms: { rows, dim, eps },
    overrides: { WG: wg, ROUND: roundCode('rmsNorm', round) },
    workgroups: grid(x.gpu, rows, 1),
  });
  return out;
}
