import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { expectUlp } from '../../helpers/attn-parity.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../../src/errors.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { rmsNorm } from '../../../src/kernels/rmsnorm/rmsnorm.ts';
import { rmsNormRef } from '../../../src/kernels/rmsnorm/rmsnorm.ref.ts';

describe('rmsNorm', () => {
  it('matches MLX f32 (ops.safetensors rms.f32)', async () => {
    const gpu = await getGpu();
    const ops = await fixture('ops.safetensors');
    const x = await ops.array('rms.f32.x');
    const y = await rmsNorm(Tensor.from(gpu, x, ops.entry('rms.f32.x').shape, 'f32', 'x'), { eps: 1e-6 }).read();
    // Two f32 implementations differ by summation order over 512 squares and rsqrt's 2-ulp bound: ~1e-6 relative.
    expectClose(y, await ops.array('rms.f32.out'), 0, 2e-6, 'rms.f32');
  });

  for (const dt of ['bf16', 'f16'] as const) {
    it(`matches MLX ${dt} within one ulp (ops.safetensors rms.${dt})`, async () => {
      const gpu = await getGpu();
      const ops = await fixture('ops.safetensors');
      const x = await ops.array(`rms.${dt}.x`);
      const y = await rmsNorm(Tensor.from(gpu, x, ops.entry(`rms.${dt}.x`).shape, 'f32', 'x'),
        { eps: 1e-6, round: dt }).read();
      expectUlp(y, await ops.array(`rms.${dt}.out`), dt, `rms.${dt}`);
    });
  }

  it('matches the f64 reference on odd sizes', async () => {
    const gpu = await getGpu();
    for (const [rows, dim] of [[1, 1], [1, 320], [31, 320], [33, 4099], [3, 31], [2, 8193]]) {
      const x = randn(rows * 1000 + dim, rows * dim, 3);
      const y = await rmsNorm(Tensor.from(gpu, x, [rows, dim], 'f32', 'x'), { eps: 1e-5 }).read();
      // f32 sum of <= 8193 positive squares in strided partials + tree: relative error < 1e-6; rsqrt adds 2 ulp.
      expectClose(y, rmsNormRef(x, dim, 1e-5), 1e-7, 2e-6, `rms rows=${rows} dim=${dim}`);
    }
  });

  it('rounds once to bf16 in bf16 mode and keeps rank-3 shapes', async () => {
    const gpu = await getGpu();
    const x = randn(7, 2 * 3 * 100, 2);
    const y = rmsNorm(Tensor.from(gpu, x, [2, 3, 100], 'f32', 'x'), { eps: 1e-6, round: 'bf16' });
    expect(y.shape).toEqual([2, 3, 100]);
    const got = await y.read();
    const ref = rmsNormRef(x, 100, 1e-6);
    for (let i = 0; i < got.length; i++) expect(roundBf16(got[i])).toBe(got[i]);
    // Output is the bf16 rounding of an f32 value within 2e-6 relative of the reference: half a bf16 ulp + that.
    expectClose(got, ref, 1e-7, 2 ** -8 + 2e-6, 'rms bf16 vs f64');
  });

  it('rejects a non-f32 input and an empty last axis', async () => {
    const gpu = await getGpu();
    expect(() => rmsNorm(Tensor.from(gpu, [1, 2], [2], 'bf16', 'xb'), { eps: 1e-6 })).toThrow(DTypeError);
    expect(() => rmsNorm(Tensor.empty(gpu, [3, 0], 'f32', 'x0'), { eps: 1e-6 })).toThrow(ShapeError);
  });
});
