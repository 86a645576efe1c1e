// A decode layer's MLP in one dispatch on MLX's 4- and 8-bit quantized weights (qgemv_mlp.wgsl): matmul/gemv-mlp.ts's
// fold where qlinear takes two products (its reference, and what the caller composes where this returns null).
import { Kernel } from '../kernel.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { DTYPE_CODE, roundCode } from '../common/codes.ts';
import { dispatchFold, rowShape, type MlpOptions } from '../matmul/gemv-mlp.ts';
import { checkQuantMatrix, type QuantMatrix } from './qlinear.ts';

const QMLP = new Kernel('qlinear/qgemv_mlp.wgsl', 'qgemv_mlp');
/** Intermediate units a workgroup (U in the WGSL). */
const U = 8;

/**
 * x [1, K] += down(silu(gate) * up) with gate | up = gateUp(rmsNorm(x)) as qlinear computes them: gateUp [2I, K]
 * and down [K, I] quantized alike (4 or 8 bits, one group size, one scale dtype), in one dispatch; x is updated in
 * place and returned. Null where the kernel cannot take them (not one row, other bits, row chunks, unaligned
 * levels, I not a multiple of 8, x too wide for workgroup memory): the caller then runs the two products.
 * `units` and `prefetch` are the dense kernel's only.
 */
export function qmlpFold(
  x: Tensor, gateUp: QuantMatrix, down: QuantMatrix, o: Omit<MlpOptions, 'units' | 'prefetch'>,
): Tensor | null {
  const op = 'qmlpFold';
  if (x.dtype !== 'f32') throw new DTypeError(op, `x '${x.label}' is ${x.dtype}; activations are f32`);
  const K = x.shape[x.rank - 1];
  const [N2] = checkQuantMatrix(op, gateUp, K);
  const [Kd, I] = checkQuantMatrix(op, down);
  if (N2 % 2 || Kd !== K || I !== N2 / 2) {
    const got = `gate_up [${N2}, ${K}] and down [${Kd}, ${I}]`;
    throw new ShapeError(op, `${got}: want gate_up [2I, K], down [K, I] for x [.., ${K}]`);
  }
  const same = gateUp.bits === down.bits && gateUp.groupSize === down.groupSize
    && gateUp.scales[0].dtype === down.scales[0].dtype;
  if (!same) throw new InputError(op, 'gate_up and down must be quantized alike (bits, group size, scale dtype)');
  if (!(o.eps >= 0 && Number.isFinite(o.eps))) throw new InputError(op, `eps ${o.eps} must be a finite number >= 0`);
  const { bits, groupSize: GS } = gateUp;
  const one = [gateUp, down].every((w) => w.q.length === 1 && w.q[0].offset % 16 === 0);
  const gpu = x.gpu;
  const shared = 4 * K + 4 * 64 * 2 * U + 64;   // x in workgroup memory, the lanes' sums at most, the rest
  const rows = rowShape((K * bits) / 128, U, K);
  const fits = x.size === K && K % 4 === 0 && (K * bits) % 128 === 0 && I % U === 0 && GS % 32 === 0;
  const room = shared <= gpu.device.limits.maxComputeWorkgroupStorageSize;
  if (!(bits === 4 || bits === 8) || !one || !fits || !rows || !room) return null;
  const SDT = DTYPE_CODE[gateUp.scales[0].dtype as keyof typeof DTYPE_CODE];
  const overrides = { BITS: bits, GS, SDT, ROUND: roundCode(op, o.round), ...rows, XSH: 1, XSN: K / 4 };
  const weights = {
    wq4: gateUp.q[0], scales: gateUp.scales[0], biases: gateUp.biases[0],
    dq: down.q[0], dscales: down.scales[0], dbiases: down.biases[0],
  };
  dispatchFold(QMLP, x, weights, { op, label: 'qlinear.qgemv_mlp', K, I, U, group: o.group, eps: o.eps }, overrides);
  return x;
}
