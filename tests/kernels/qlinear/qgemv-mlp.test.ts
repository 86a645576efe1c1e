// qgemv_mlp (the decode MLP in one dispatch on 4- and 8-bit weights) against the float64 composition of its ops over
// the exactly dequantized weights, its counts left at 0, and the weights it refuses or leaves to the two products.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { uploadQuant } from '../../../testkit/helpers/quant-weight.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { InputError } from '../../../src/errors.ts';
import { qmlpFold } from '../../../src/kernels/qlinear/qgemv-mlp.ts';
import { qweightRef } from '../../../src/kernels/qlinear/qlinear.ref.ts';
import { matmulFusedRef, matmulRef } from '../../../src/kernels/matmul/matmul.ref.ts';
import { addRef } from '../../../src/kernels/ops/ops.ref.ts';
import { quantizeRef, roundTo } from '../../../src/kernels/quant/quant.ref.ts';
import { countersLeft } from '../../../testkit/kernels/sdpa-fold.check.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';

const EPS = 1e-6;

/** A random [N, K] weight quantized on the CPU (Metal rules), scales as a `round` model stores them; one chunk. */
function weight(
  gpu: Gpu, N: number, K: number, bits: number, groupSize: number, round: 'bf16' | 'f16', seed: number, scale: number,
) {
  const raw = randn(seed, N * K, scale);
  // The first rows' groups all negative (their bias is their largest magnitude).
  for (let i = 0; i < 2 * K; i++) raw[i] = -Math.abs(raw[i]);
  const r = quantizeRef(raw.map((v) => roundTo(round, v)), N, K, { bits, groupSize, round });
  const exact = qweightRef({ ...r, N, K, bits, groupSize }, 'exact');
  return { exact, q: uploadQuant(gpu, r, K, bits, groupSize, round, [0, N]), r };
}

describe('qgemv_mlp: x += down(silu(gate) * up) in one dispatch on quantized weights', async () => {
  const gpu = await getGpu();
  const cases = [
    { K: 256, I: 768, bits: 4, groupSize: 64, round: 'bf16' as const, why: "the embedded model's shape at 4 bits" },
    { K: 128, I: 96, bits: 8, groupSize: 32, round: 'f16' as const,
      why: '8 bits, groups of 32, f16 scales, 12 blocks' },
  ];
  for (const c of cases) {
    it(`${c.bits} bits, group ${c.groupSize}, ${c.round}: ${c.why}`, async () => {
      const { K, I, bits, groupSize, round } = c;
      const gu = weight(gpu, 2 * I, K, bits, groupSize, round, 11, 1 / Math.sqrt(K));
      const down = weight(gpu, K, I, bits, groupSize, round, 12, 2 / Math.sqrt(I));
      const xv = randn(13, K, 3).map((v) => roundTo(round, v));
      const x = Tensor.from(gpu, xv, [1, K], 'f32', 'x');
      expect(qmlpFold(x, gu.q, down.q, { eps: EPS, round })).toBe(x);
      const got = await x.read() as Float32Array;
      const a = matmulFusedRef(xv, gu.exact, 1, 2 * I, K, { round, norm: EPS, swiglu: true });
      const want = addRef(xv, matmulRef(a, down.exact, 1, K, I, round), round);
      const s = ulpStats(round, got, want);
      expect(s.worst, `${c.why}: ${JSON.stringify(s)}`).toBeLessThanOrEqual(2);
      expect(s.exact, JSON.stringify(s)).toBeGreaterThanOrEqual(0.9);
      expect(await countersLeft(gpu, 64), 'counters left non-zero').toBe(0);
      for (const w of [gu.q, down.q]) for (const t of [...w.q, ...w.scales, ...w.biases]) t.dispose();
      x.dispose();
    });
  }

  it('weights it cannot take give null (the caller composes two products); unlike ones are a named error', () => {
    const K = 64, I = 32;
    const x = Tensor.from(gpu, new Float32Array(K), [1, K], 'f32', 'x');
    const three = [weight(gpu, 2 * I, K, 3, 32, 'bf16', 1, 0.1), weight(gpu, K, I, 3, 32, 'bf16', 2, 0.1)];
    expect(qmlpFold(x, three[0].q, three[1].q, { eps: EPS }), '3 bits').toBeNull();
    const gu = weight(gpu, 2 * I, K, 4, 32, 'bf16', 3, 0.1);
    const chunked = uploadQuant(gpu, gu.r, K, 4, 32, 'bf16', [0, 16, 2 * I]);
    const down = weight(gpu, K, I, 4, 32, 'bf16', 4, 0.1);
    expect(qmlpFold(x, chunked, down.q, { eps: EPS }), 'gate_up in two row chunks').toBeNull();
    const down8 = weight(gpu, K, I, 8, 32, 'bf16', 5, 0.1);
    expect(() => qmlpFold(x, gu.q, down8.q, { eps: EPS })).toThrow(InputError);
    expect(() => qmlpFold(x, gu.q, down.q, { eps: EPS, group: 0 })).toThrow(/group 0/);
  });
});
