// A CPU-quantized weight (quantizeRef's output) uploaded as the QuantMatrix qlinear takes, split into row chunks.
// No vitest here: the sgmat check (bundled into the bench) uses it too.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { QuantMatrix } from '../../src/kernels/qlinear/qlinear.ts';

/**
 * `r` ([N, K] quantized at `bits` / `groupSize`) as row chunks from `bounds` (0, ..., N), scales and biases uploaded
 * as `sdt` (the model dtype that stores them; their values must be that dtype's).
 */
export function uploadQuant(
  gpu: Gpu, r: { q: Uint32Array; scales: Float32Array; biases: Float32Array }, K: number, bits: number,
  groupSize: number, sdt: 'f32' | 'bf16' | 'f16', bounds: readonly number[],
): QuantMatrix {
  const gpr = K / groupSize, wpr = (K * bits) / 32;
  const part = (a: Uint32Array | Float32Array, per: number, what: string) => bounds.slice(1).map((b, i) =>
    Tensor.from(gpu, a.subarray(bounds[i] * per, b * per), [b - bounds[i], per], a instanceof Uint32Array ? 'u32' : sdt,
      `${what}${i}`));
  return { bits, groupSize, q: part(r.q, wpr, 'wq'), scales: part(r.scales, gpr, 'scales'),
    biases: part(r.biases, gpr, 'biases') };
}
