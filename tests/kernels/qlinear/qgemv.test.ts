// qlinear's matrix-vector kernels at every shape the planner or a benchmark can choose (kernels/plan/gemv.ts):
// qgemv4's 2 to 16 rows a workgroup with x read by every lane or staged, and qgemv_wide's row groups, against the
// float64 reference and each other (split from qlinear.test.ts).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { checkQGemvWide } from '../../../testkit/kernels/qgemv-wide.check.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { qlinear, type QuantMatrix } from '../../../src/kernels/qlinear/qlinear.ts';
import type { GemvShape } from '../../../src/kernels/matmul/gemv.ts';
import { roundTo } from '../../../src/kernels/quant/quant.ref.ts';
import { EPS, makeWeight } from './make-weight.ts';

describe('qgemv4 shapes: 2 to 16 rows a workgroup, x staged in workgroup memory', async () => {
  const gpu = await getGpu();
  const [M, N, K] = [3, 72, 256];   // 3 x rows (2 a workgroup at 8 rows, 1 at 16); a last block past N at 16 rows
  // A row's sum depends on the lanes only: every shape at 32 lanes equals 2 rows (3 x rows a workgroup) bit for bit.
  // Each shape is a compile on a CPU driver: the fused norm + SwiGLU at 16 rows both ways, the residual at 8 and 4.
  const fused: GemvShape[] = [{ wg: 32, rows: 16 }, { wg: 32, rows: 16, kernel: 'xs' }];
  const residual: GemvShape[] = [{ wg: 32, rows: 8 }, { wg: 32, rows: 4, kernel: 'xs' }];
  for (const bits of [4, 8]) {
    it(`${bits} bits, bf16: norm + swiglu and the residual, each shape the bits of 2 rows`, async () => {
      const { one } = makeWeight(gpu, N, K, bits, 64, 'bf16', bits + 90);
      const x = Tensor.from(gpu, randn(bits + 91, M * K, 3).map((v) => roundTo('bf16', v)), [M, K], 'f32', 'x');
      const accv = randn(bits + 92, M * N, 2).map((v) => roundTo('bf16', v));
      const sw = (gemv: GemvShape) => qlinear(x, one,
        { round: 'bf16', path: 'gemv', gemv, norm: { eps: EPS }, swiglu: true }).read();
      const acc = (gemv: GemvShape) => qlinear(x, one,
        { round: 'bf16', path: 'gemv', gemv, accumulate: Tensor.from(gpu, accv, [M, N], 'f32', 'acc') }).read();
      const base = { wg: 32, rows: 2 };
      // 8 bits: the staged x at 16 rows only (the rest is the same code as at 4 bits).
      for (const gemv of bits === 4 ? fused : fused.slice(1)) expectBitExact(await sw(gemv), await sw(base),
        `norm + swiglu ${JSON.stringify(gemv)}`);
      if (bits === 4) for (const gemv of residual) expectBitExact(await acc(gemv), await acc(base),
        `residual ${JSON.stringify(gemv)}`);
    });
  }

  it('refuses the shapes its kernels cannot take, naming the rule', () => {
    const { one } = makeWeight(gpu, 8, 64, 4, 64, 'bf16', 3);
    const three = makeWeight(gpu, 8, 64, 3, 64, 'bf16', 4).one;
    const x = Tensor.from(gpu, new Float32Array(64), [1, 64], 'f32', 'x');
    const q = (w: QuantMatrix, gemv: GemvShape) => () => qlinear(x, w, { path: 'gemv', gemv });
    expect(q(one, { wg: 32, rows: 6 })).toThrow(/rows 2, 4, 8 or 16/);
    expect(q(one, { wg: 32, rows: 2, kernel: 'upl' })).toThrow(/kernel must be 'vec4', 'xs', 'wide' or 'wide-xs'/);
    expect(q(three, { wg: 32, rows: 8 })).toThrow(/take qgemv .* kernel 'vec4', rows 2 or 4/);
    expect(q(three, { wg: 32, rows: 2, kernel: 'xs' })).toThrow(/take qgemv/);
    const big = gpu.device.limits.maxComputeWorkgroupStorageSize;   // K values of f32 that cannot fit beside the sums
    const wide = makeWeight(gpu, 16, big / 2, 4, 64, 'bf16', 6).one;
    const xw = Tensor.from(gpu, new Float32Array(big / 2), [1, big / 2], 'f32', 'xw');
    expect(() => qlinear(xw, wide,
      { path: 'gemv', gemv: { wg: 32, rows: 2, kernel: 'xs' } })).toThrow(/kernel 'xs' stages x's \d+ values/);
  });
});

describe('qgemv_wide: row groups sharing one x read and one norm, one x row', async () => {
  const gpu = await getGpu();
  // Every sum is qgemv4's at the same lanes, so each shape must give qgemv4's bits: units split over 16 lanes, 3 a
  // lane at 4 bits and K = 1536 (HRM-Text-1B's rows), 2 at 8 bits and K = 512; 70 rows leave the last block short.
  const cases: Array<[number, number, GemvShape[]]> = [
    [4, 1536, [{ kernel: 'wide', wg: 16, groups: 4, rows: 8 }, { kernel: 'wide-xs', wg: 16, groups: 8, rows: 8 }]],
    [8, 512, [{ kernel: 'wide', wg: 16, groups: 2, rows: 4 }, { kernel: 'wide-xs', wg: 16, groups: 2, rows: 4 }]],
  ];
  const N = 70;
  for (const [bits, K, shapes] of cases) {
    it(`${bits} bits, K ${K}, bf16: norm + swiglu and the residual, each shape the bits of qgemv4 at 16 lanes`,
      async () => {
      const { one } = makeWeight(gpu, N, K, bits, 64, 'bf16', bits + 95);
      const x = Tensor.from(gpu, randn(bits + 96, K, 3).map((v) => roundTo('bf16', v)), [1, K], 'f32', 'x');
      const accv = randn(bits + 97, N, 2).map((v) => roundTo('bf16', v));
      const sw = (gemv: GemvShape) => qlinear(x, one,
        { round: 'bf16', path: 'gemv', gemv, norm: { eps: EPS }, swiglu: true }).read();
      const acc = (gemv: GemvShape) => qlinear(x, one,
        { round: 'bf16', path: 'gemv', gemv, accumulate: Tensor.from(gpu, accv, [1, N], 'f32', 'acc') }).read();
      const base = { wg: 16, rows: 2 };
      const [want, wantAcc] = [await sw(base), await acc(base)];
      for (const gemv of shapes) {
        expectBitExact(await sw(gemv), want, `norm + swiglu ${JSON.stringify(gemv)}`);
        expectBitExact(await acc(gemv), wantAcc, `residual ${JSON.stringify(gemv)}`);
      }
    });
  }

  it("the GPU machine's check (every sweep shape against qgemv4) passes on a small projection, naming its shapes",
    async () => {
    // One small projection (the sweep's 6 shapes of 16 lanes at 4 bits and K 512): each shape a compile here.
    const cases = await checkQGemvWide(gpu,
      [{ name: 'residual', N: 40, K: 512, bits: 4, norm: false, swiglu: false, acc: true }]);
    for (const c of cases) expect(c.ok, `${c.name}: ${c.value}`).toBe(true);
    expect(cases.map((c) => c.name)).toEqual([
      'qgemv_wide vs qgemv4 at its lanes: outputs differing, residual 40x512 4-bit (6 shapes)',
    ]);
  });

  it('refuses the shapes it cannot take, naming the rule', () => {
    const { one } = makeWeight(gpu, 8, 512, 4, 64, 'bf16', 7);
    const x1 = Tensor.from(gpu, new Float32Array(512), [1, 512], 'f32', 'x1');
    const x2 = Tensor.from(gpu, new Float32Array(1024), [2, 512], 'f32', 'x2');
    const q = (x: Tensor, gemv: GemvShape, swiglu = false) => () => qlinear(x, one, { path: 'gemv', gemv, swiglu });
    const wide = (o: Partial<GemvShape>): GemvShape => ({ kernel: 'wide', wg: 16, groups: 2, rows: 4, ...o });
    expect(q(x2, wide({}))).toThrow(/kernel 'wide' takes one x row, not 2/);
    expect(q(x1, wide({ groups: 3, rows: 6 }))).toThrow(/groups a power of two/);
    expect(q(x1, wide({ groups: 32 }))).toThrow(/wg x groups <= 256/);
    expect(q(x1, wide({ rows: 3, groups: 1 }), true)).toThrow(/rows a multiple of groups, and even with swiglu/);
    expect(q(x1, wide({ wg: 32 }))).toThrow(/a row's 16 units must split exactly over 32 lanes/);
    expect(q(x1, wide({ groups: 1, rows: 32 }))).toThrow(/at most 16 units a lane/);
    const big = gpu.device.limits.maxComputeWorkgroupStorageSize;   // K values of f32 that cannot fit beside the sums
    const long = makeWeight(gpu, 8, big / 4, 4, 64, 'bf16', 9).one;
    const xl = Tensor.from(gpu, new Float32Array(big / 4), [1, big / 4], 'f32', 'xl');
    expect(() => qlinear(xl, long, { path: 'gemv', gemv: wide({ kernel: 'wide-xs', wg: 16, groups: 16, rows: 16 }) }))
      .toThrow(/partial sums and x's \d+ values exceed the \d+ bytes of workgroup memory/);
    const three = makeWeight(gpu, 8, 512, 3, 64, 'bf16', 8).one;
    expect(() => qlinear(x1, three,
      { path: 'gemv', gemv: wide({}) })).toThrow(/kernel 'wide' takes 4- or 8-bit weights/);
  });
});
