// Quantized matmul with group-64 affine weights (mx.quantized_matmul).
import { Kernel } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { ShapeError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { checkPacked, requireDtype } from './quant.ts';
import { roundCode } from '../common/codes.ts';

const QMM_T = new Kernel('quant/qmm.wgsl', 'qmm_t');
const QMM_N = new Kernel('quant/qmm.wgsl', 'qmm_n');
const WG = 64;

/** 'f32': MLX's Metal kernels (f32 accumulation, one rounding); 'dtype': MLX's CPU backend (every op rounded). */
export type Accumulate = 'f32' | 'dtype';
export const ACC_CODE: Record<Accumulate, number> = { f32: 0, dtype: 1 };

export interface QmmOptions {
  bits: number;
  /** true: x @ W^T with W [N, K] quantized along K; false: x @ W with W [K, N] quantized along N. */
  transpose: boolean;
  round?: Round;
  accumulate?: Accumulate;
}

/**
 * out[m, n] = sum_k x[m, k] * W[n, k] (transpose) or x[m, k] * W[k, n], W = level * scale + bias per group of 64,
 * computed per group as scale * sum(x q) + bias * sum(x) in f32 and rounded once to the dtype.
 */
export function quantizedMatmul(x: Tensor, q: Tensor, scales: Tensor, biases: Tensor,
  { bits, transpose, round = 'none', accumulate = 'f32' }: QmmOptions): Tensor {
  const op = 'quantizedMatmul';
  requireDtype(op, x, 'f32');
  const cols = checkPacked(op, q, scales, biases, bits);
  if (x.rank !== 2 || q.rank !== 2) throw new ShapeError(op,
    `x [${x.shape.join(', ')}] and packed weights [${q.shape.join(', ')}] must both be 2-D`);
  const [m, k] = x.shape;
  const rows = q.shape[0];
  const [n, wk] = transpose ? [rows, cols] : [cols, rows];
  if (wk !== k) {
    throw new ShapeError(op,
      `x [${m}, ${k}] does not match weights of ${rows} rows x ${cols} values (${bits}-bit, ` +
      `transpose ${transpose}): inner dims ${k} vs ${wk}`);
  }
  const gpu = x.gpu;
  const out = Tensor.empty(gpu, [m, n], 'f32', 'quantizedMatmul.out');
  if (m === 0 || n === 0) return out;
  // Several rows per thread reuse each weight word; one row is the decode (matrix-vector) case.
  const tm = m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
  const tiles = Math.ceil(m / tm);
  if (tiles > gpu.device.limits.maxComputeWorkgroupsPerDimension) throw new ShapeError(op,
    `x has ${m} rows; at most ${tm * gpu.device.limits.maxComputeWorkgroupsPerDimension} per call`);
  const common = { BITS: bits, ROUND: roundCode('quantizedMatmul', round), ACC: ACC_CODE[accumulate], TM: tm };
  const seq = accumulate === 'dtype'; // MLX's CPU order is sequential: no split of the k axis
  const bindings = { x, wq: q, scales, biases, out }, uniforms = { m, n, k, zero: 0 };
  if (transpose) {
    // Threads per weight row: up to 8, never more than the row's packs of 32 values.
    const lanes = seq ? 1 : Math.min(8, 2 ** Math.floor(Math.log2(k / 32)));
    QMM_T.dispatch(gpu,
      { bindings, uniforms, overrides: { ...common, WG, LANES: lanes },
      workgroups: [Math.ceil(n / (WG / lanes)), tiles] });
  } else {
    QMM_N.dispatch(gpu,
      { bindings, uniforms, overrides: { ...common, KS: seq || k < 256 ? 1 : 4 },
      workgroups: [Math.ceil(n / 64), tiles] });
  }
  return out;
}
