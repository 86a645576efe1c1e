// A random quantized weight for the qlinear tests (qlinear.test.ts, qgemv.test.ts): quantized on the CPU by Metal's
// rules, uploaded in two row chunks and in one, with its float64 reference; and the bound its products keep.
import { randn } from '../../../testkit/helpers/seeded.ts';
import { uploadQuant } from '../../../testkit/helpers/quant-weight.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import type { QuantMatrixRef } from '../../../src/kernels/qlinear/qlinear.ref.ts';
import { quantizeRef, roundTo } from '../../../src/kernels/quant/quant.ref.ts';

export const U = 2 ** -24;
export const PATHS = ['gemv', 'tiled', 'rows'] as const;
export const EPS = 1e-6;

/**
 * A random [N, K] weight quantized on the CPU (Metal rules), scales/biases as stored in `round`'s dtype; `edit`
 * changes the values first.
 */
export function makeWeight(gpu: Gpu, N: number, K: number, bits: number, groupSize: number, round: Round, seed: number,
  edit?: (w: Float32Array) => void) {
  // Scales and biases in the dtype a model of `round` stores them in (f32 for f32 models).
  const sdt = round === 'none' ? 'f32' : round;
  const raw = randn(seed, N * K, 0.1);
  edit?.(raw);
  const wv = raw.map((v) => roundTo(round, v));
  const r = quantizeRef(wv, N, K, { bits, groupSize, round });
  const ref: QuantMatrixRef = { ...r, N, K, bits, groupSize };
  // Two row chunks (the second smaller) exercise the chunked path every time.
  const chunked = uploadQuant(gpu, r, K, bits, groupSize, sdt, [0, Math.ceil(N / 2 / 8) * 8, N]);
  return { ref, chunked, one: uploadQuant(gpu, r, K, bits, groupSize, sdt, [0, N]) };
}

export function expectWithin(got: ArrayLike<number>, want: ArrayLike<number>, abs: ArrayLike<number>, K: number,
  what: string): void {
  for (let i = 0; i < want.length; i++) {
    const bound = 2 * (K + 2) * U * abs[i] + 1e-30;
    if (!(Math.abs(got[i] - want[i]) <= bound)) {
      throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]} (bound ${bound})`);
    }
  }
}
