import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectUlp, expectWithin, ropeBound } from '../../helpers/attn-parity.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../../src/errors.ts';
import { roundBf16, roundF16 } from '../../../src/tensor/dtype.ts';
import { rope } from '../../../src/kernels/rope/rope.ts';
import { ropeRef } from '../../../src/kernels/rope/rope.ref.ts';

// The fixture cases: d64 base 1e4 offset 0; d128 base 1e4 offset 13; d128 base 5e5 offset 1000. x is [1, 3, 7, D].
const CASES = [
  { key: 'd64.o0', dim: 64, base: 1e4, offset: 0 },
  { key: 'd128.o13', dim: 128, base: 1e4, offset: 13 },
  { key: 'd128.o1000', dim: 128, base: 5e5, offset: 1000 },
];

describe('rope', () => {
  for (const c of CASES) {
    it(`matches MLX f32 rope.f32.${c.key}`, async () => {
      const gpu = await getGpu();
      const ops = await fixture('ops.safetensors');
      const name = `rope.f32.${c.key}`;
      const x = await ops.array(`${name}.x`);
      const y = await rope(Tensor.from(gpu, x, ops.entry(`${name}.x`).shape, 'f32', 'x'), c).read();
      // MLX's own angle is up to ~6 ulp32(theta) from the exactly rounded f32 angle (measured), ours up to ~2.
      expectWithin(y, await ops.array(`${name}.out`), ropeBound(x, 7, c.dim, c, 10), name);
    });
    for (const dt of ['bf16', 'f16'] as const) {
      it(`matches MLX ${dt} rope.${dt}.${c.key} within one ulp`, async () => {
        const gpu = await getGpu();
        const ops = await fixture('ops.safetensors');
        const name = `rope.${dt}.${c.key}`;
        const x = await ops.array(`${name}.x`);
        const y = await rope(Tensor.from(gpu, x, ops.entry(`${name}.x`).shape, 'f32', 'x'), { ...c, round: dt }).read();
        // At offset 1000 MLX's angle noise (above) exceeds an f16 ulp of outputs near zero: 0.45 % of f16 elements
        // land 2-17 ulp away on either formulation of the exact f32 angle; allow that noise there, nowhere else.
        const slack = c.offset >= 1000 ? ropeBound(x, 7, c.dim, c, 10) : undefined;
        expectUlp(y, await ops.array(`${name}.out`), dt, name, { slack });
      });
    }
  }

  it('matches the f64 reference at large offsets, odd sizes and a scale', async () => {
    const gpu = await getGpu();
    const cases = [
      { shape: [1, 1, 1, 2], base: 1e4, offset: 0, scale: 1 },
      { shape: [2, 3, 31, 64], base: 1e4, offset: 4000, scale: 1 },
      { shape: [1, 2, 33, 128], base: 5e5, offset: 4063, scale: 1 },
      { shape: [1, 3, 5, 6], base: 1e4, offset: 17, scale: 0.5 },
      { shape: [1, 1, 3, 64], base: 1e4, offset: 100_000, scale: 1 },
    ];
    for (const [n, c] of cases.entries()) {
      const size = c.shape.reduce((a, b) => a * b);
      const x = randn(100 + n, size, 2);
      const y = await rope(Tensor.from(gpu, x, c.shape, 'f32', 'x'), c).read();
      // Measured <= 1.9 ulp32(theta) from the exactly rounded f32 angle (exp2 in inv_freq); 3 leaves margin.
      expectWithin(y, ropeRef(x, c.shape[2], c.shape[3], c), ropeBound(x, c.shape[2], c.shape[3], c, 3),
        `rope ${JSON.stringify(c)}`);
    }
  });

  it('rounds its output once in bf16 and f16 modes', async () => {
    const gpu = await getGpu();
    const x = randn(5, 2 * 9 * 64, 1).map(roundBf16);
    const xt = Tensor.from(gpu, x, [1, 2, 9, 64], 'f32', 'x');
    const exact = await rope(xt, { base: 1e4, offset: 300 }).read();
    for (const [dt, r] of [['bf16', roundBf16], ['f16', roundF16]] as const) {
      const got = await rope(xt, { base: 1e4, offset: 300, round: dt }).read();
      // Same f32 math then one rounding: identical to rounding the f32 result on the host.
      expect([...got]).toEqual([...exact].map(r));
    }
  });

  it('rejects odd head dims, non-f32 input and bad offsets', async () => {
    const gpu = await getGpu();
    expect(() => rope(Tensor.empty(gpu, [1, 1, 2, 5], 'f32', 'x'), { base: 1e4, offset: 0 })).toThrow(ShapeError);
    expect(() => rope(Tensor.empty(gpu, [1, 1, 2, 4], 'bf16', 'x'), { base: 1e4, offset: 0 })).toThrow(DTypeError);
    expect(() => rope(Tensor.empty(gpu, [1, 1, 2, 4], 'f32', 'x'), { base: 1e4, offset: -1 })).toThrow(/offset -1/);
  });
});
