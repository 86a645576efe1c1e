import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn, rng } from '../../../testkit/helpers/seeded.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError } from '../../../src/errors.ts';
import { f32ToBf16, packHalf } from '../../../src/tensor/dtype.ts';
import { countNonFinite } from '../../../src/kernels/finite/finite.ts';
import { nonFiniteRef } from '../../../src/kernels/finite/finite.ref.ts';

// Raw bit patterns around the edge of each format: largest finite, smallest subnormal, -0, +-Inf, NaNs.
const EDGE16 = {
  bf16: [0x7f7f, 0xff7f, 0x0001, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffff],
  f16: [0x7bff, 0xfbff, 0x0001, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff],
};

/** `n` random values of a dtype's stored bits with a few edge patterns written in at seeded places. */
function sample(dtype: 'bf16' | 'f16', n: number, seed: number, hits: number): Uint16Array {
  const bits = dtype === 'bf16' ? Uint16Array.from(randn(seed, n, 4), f32ToBf16) : packHalf('f16',
    randn(seed, n, 4)).subarray(0, n);
  const r = rng(seed + 1);
  for (let k = 0; k < hits; k++) bits[Math.floor(r() * n)] = EDGE16[dtype][k % EDGE16[dtype].length];
  return bits;
}

describe('countNonFinite', () => {
  for (const dtype of ['bf16', 'f16'] as const) {
    it(`counts NaN and Inf in ${dtype} (odd lengths, edge patterns) as the CPU does`, async () => {
      const gpu = await getGpu();
      const cases = [sample(dtype, 1001, 1, 0), sample(dtype, 1001, 2, 9), sample(dtype, 77, 3, 30),
        sample(dtype, 3, 4, 0)];
      cases[3].set([0x0000, 0x0000, dtype === 'bf16' ? 0x7f80 : 0x7c00]); // the last value of an odd length
      const ts = cases.map((c, i) => Tensor.from(gpu, c, [c.length], dtype, `${dtype}#${i}`));
      const got = await countNonFinite(ts);
      for (let i = 0; i < ts.length; i++) expect(got[i], ts[i].label).toEqual(nonFiniteRef(await ts[i].read()));
      expect(got[0]).toEqual({ count: 0, first: -1 });
      expect(got[1].count).toBeGreaterThan(0);
      expect(got[3]).toEqual({ count: 1, first: 2 });
      for (const t of ts) t.dispose();
    });
  }

  it('counts NaN and Inf in f32 next to the largest finite values', async () => {
    const gpu = await getGpu();
    const x = randn(5, 5000, 1e3);
    x.set([3.4028234663852886e38, -3.4028234663852886e38, 1e-45, NaN, Infinity, -Infinity], 4000);
    x[17] = NaN;
    const t = Tensor.from(gpu, x, [50, 100], 'f32', 'w');
    const [got] = await countNonFinite([t]);
    expect(got).toEqual(nonFiniteRef(x));
    expect(got).toEqual({ count: 4, first: 17 });
    t.dispose();
  });

  it('refuses integer tensors by name', async () => {
    const gpu = await getGpu();
    const t = Tensor.from(gpu, new Uint32Array(4), [4], 'u32', 'ids');
    await expect(countNonFinite([t])).rejects.toThrow(DTypeError);
    await expect(countNonFinite([t])).rejects.toThrow(/'ids' is u32/);
    t.dispose();
  });
});
