// The matrix-vector kernels' shapes (gemv_upl with every load up front, gemv_wide, the workgroup shapes) against the
// float64 reference.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { runs, sweep } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { InputError } from '../../../src/errors.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { uplFit, type GemvKernel } from '../../../src/kernels/matmul/gemv.ts';
import { rmsNorm } from '../../../src/kernels/rmsnorm/rmsnorm.ts';
import { add, siluMul } from '../../../src/kernels/ops/ops.ts';
import { EPS, FUSED_CASES, asDtype, expectFusedRef, uploadFused } from '../../helpers/matmul-cases.ts';

// Each workgroup shape and K is a pipeline of its own: on lavapipe with a cold Mesa shader cache (a fresh machine)
// LLVM compiles each for seconds, so the CPU driver takes a share of them by turns (HRM_EXHAUSTIVE=1: all).
describe('gemv_upl (every load up front) against the float64 reference', async () => {
  const gpu = await getGpu();
  // M = 1..4 (one block of MB rows) at the model's K and a short row (64: fewer units than lanes, the tail masked);
  // N odd, or for swiglu even with I = N / 2 odd. Shapes cycle through 8 rows, exact and masked units per lane, and
  // 16 lanes x 8 rows, which serve 2 x rows per block (M = 4: two blocks along z).
  const SIZES = [[1, 1536], [2, 64], [3, 4096], [4, 1536], [4, 64], [1, 4096]] as const;
  const SHAPES = [{ wg: 64, rows: 8 }, { wg: 128, rows: 4 }, { wg: 256, rows: 2 }, { wg: 32, rows: 2 },
    { wg: 16, rows: 8 }];
  // gemv_upl_sg where the adapter has subgroups (lavapipe does).
  const kernels: GemvKernel[] = gpu.subgroups ? ['upl', 'upl-sg'] : ['upl'];
  let t = 0;
  for (const [ci, c] of [{ name: 'plain', norm: false, swiglu: false, acc: false }, ...FUSED_CASES].entries()) {
    for (const [d, [dtype, round]] of ([['f32', 'none'], ['bf16', 'bf16']] as const).entries()) {
      for (const [k, kernel] of kernels.entries()) {
        // Each case on each kernel, in one dtype by turns, one size a test by turns (HRM_EXHAUSTIVE=1: every
        // dtype and size): a pipeline a size.
        const quick = k === (ci + d) % kernels.length;
        if (!runs(quick)) continue;
        const sizes = [...SIZES.entries()].filter(([j]) => runs(j === t % SIZES.length));
        if (quick) t++;
        it(`${kernel} ${c.name} ${dtype}: within the gemv_vec4 tolerance, whole and in row chunks`, async () => {
          const tally = { total: 0, same: 0 };
          for (const [j, [M, K]] of sizes) {
            const N = c.swiglu ? 38 : 37;
            const gemv = { kernel,
              ...[...SHAPES.slice(j % SHAPES.length), ...SHAPES].find((g) => uplFit(K, dtype, g.wg, g.rows).fits)! };
            // Weights of a model's scale (1 / sqrt(K)): sums of O(1), so sigmoid stays out of f32's subnormals (the GPU
            // flushes them; the reference does not).
            const u = await uploadFused(gpu, M, N, K, dtype, round, 300 + M * K + N, 1 / Math.sqrt(K));
            await expectFusedRef(gpu, c, u.w, u, [M, N, K], round, { path: 'gemv', gemv }, tally);
            // Row chunks write their columns from col0 on (swiglu over chunks is matmul, then siluMul).
            const chunks = [[0, 16],
              [16, N]].map(([a, b], i) => Tensor.from(gpu, u.wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
            await expectFusedRef(gpu, c, chunks, u, [M, N, K], round, { path: 'gemv', gemv }, tally);
          }
          if (round !== 'none') expect(tally.same / tally.total,
            `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
        });
      }
    }
  }
});

describe('gemv_wide (row groups sharing one x read) against the float64 reference', async () => {
  const gpu = await getGpu();
  // One x row (decode) at the model's K and a short row; N odd (the last block's slots past N repeat the last row
  // and are not written), or for swiglu even with I = N / 2 odd. Shapes: 1..4 rows a group, 2..8 groups, 16..64
  // lanes, each K taking the next shape that splits it evenly (the model's K 1536 the default gate_up shape first).
  const SHAPES = [{ wg: 64, groups: 4, rows: 16 }, { wg: 32, groups: 8, rows: 16 }, { wg: 16, groups: 4, rows: 8 },
    { wg: 64, groups: 4, rows: 4 }, { wg: 32, groups: 2, rows: 2 }];
  const KS = [1536, 256, 4096];
  let t = 0;
  for (const c of [{ name: 'plain', norm: false, swiglu: false, acc: false }, ...FUSED_CASES]) {
    for (const [dtype, round] of [['f32', 'none'], ['bf16', 'bf16']] as const) {
      // One K a test by turns (HRM_EXHAUSTIVE=1: all three): a pipeline a K.
      const ks = [...KS.entries()].filter(([j]) => runs(j === t % 3));
      t++;
      it(`${c.name} ${dtype}: within the gemv_vec4 tolerance, whole and in row chunks`, async () => {
        const tally = { total: 0, same: 0 };
        for (const [j, K] of ks) {
          const N = c.swiglu ? 38 : 37;
          const fit = (g: (typeof SHAPES)[number]) => { const f = uplFit(K, dtype, g.wg,
            g.rows / g.groups); return f.exact && f.fits; };
          const gemv = { kernel: 'wide' as const, ...[...SHAPES.slice(j % SHAPES.length), ...SHAPES].find(fit)! };
          const u = await uploadFused(gpu, 1, N, K, dtype, round, 900 + K + N, 1 / Math.sqrt(K));
          await expectFusedRef(gpu, c, u.w, u, [1, N, K], round, { path: 'gemv', gemv }, tally);
          const chunks = [[0, 16],
            [16, N]].map(([a, b], i) => Tensor.from(gpu, u.wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
          await expectFusedRef(gpu, c, chunks, u, [1, N, K], round, { path: 'gemv', gemv }, tally);
        }
        if (round !== 'none') expect(tally.same / tally.total,
          `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
      });
    }
  }

  it('is what one x row takes by default where it fits, and refuses what it cannot take', async () => {
    const K = 256, N = 37;
    const u = await uploadFused(gpu, 1, N, K, 'bf16', 'bf16', 77, 1 / Math.sqrt(K));
    const byDefault = await matmul(u.x, u.w, { round: 'bf16', path: 'gemv' }).read();
    const wide = await matmul(u.x, u.w,
      { round: 'bf16', path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 8, rows: 8 } }).read();
    expect(byDefault).toEqual(wide);
    const x2 = Tensor.empty(gpu, [2, K], 'f32', 'x2');
    expect(() => matmul(x2, u.w,
      { path: 'gemv',
      gemv: { kernel: 'wide', wg: 32, groups: 8,
      rows: 8 } })).toThrow(/'wide' cannot take it \(it takes one x row, not 2\)/);
    expect(() => matmul(u.x, u.w,
      { path: 'gemv',
      gemv: { kernel: 'wide', wg: 64, groups: 2, rows: 4 } })).toThrow(/32 units a row do not split over 64 lanes/);
    expect(() => matmul(u.x, u.w,
      { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 16, rows: 16 } })).toThrow(/wg x groups <= 256/);
    expect(() => matmul(u.x, u.w,
      { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 4, rows: 6 } })).toThrow(/even multiple of groups/);
    // 32 KB of partial sums: past WebGPU's default 16 KB of workgroup memory (a device may grant more).
    const big = () => matmul(u.x, u.w,
      { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 8, rows: 256 } }).dispose();
    if (gpu.device.limits.maxComputeWorkgroupStorageSize < 4 * 32 * 256) {
      expect(big).toThrow(/32 x 256 partial sums exceed the \d+ bytes of workgroup memory/);
    } else expect(big).not.toThrow();
    expect(() => matmul(u.x, u.w,
      { path: 'gemv', gemv: { kernel: 'wide', wg: 32, rows: 8 } })).toThrow(/groups a power of two/);
    // A thread adds and stores each row: 32 rows over 16 threads would leave half unwritten.
    expect(() => matmul(u.x, u.w,
      { path: 'gemv', gemv: { kernel: 'wide', wg: 16, groups: 1, rows: 32 } })).toThrow(/at most wg a group/);
    expect(() => matmul(u.x, u.w,
      { path: 'gemv',
      gemv: { kernel: 'vec4', wg: 32, rows: 2, groups: 2 } })).toThrow(/groups is for kernel 'wide' only/);
  });
});


describe('matmul fusions as HRM uses them', async () => {
  const gpu = await getGpu();
  it('one MLP block in place on [1, S, H] (auto path): x += down(swiglu(gate_up(rmsNorm(x)))), bf16', async () => {
    const [S, H, I] = [3, 96, 70];
    const xv = asDtype('bf16', randn(11, S * H, 3));
    const gu = Tensor.from(gpu, asDtype('bf16', randn(12, 2 * I * H)), [2 * I, H], 'bf16', 'gate_up');
    const down = Tensor.from(gpu, asDtype('bf16', randn(13, H * I)), [H, I], 'bf16', 'down');
    const round = 'bf16';
    const x = Tensor.from(gpu, xv, [1, S, H], 'f32', 'x');
    const a = matmul(x, gu, { round, norm: { eps: EPS }, swiglu: true });
    expect(a.shape).toEqual([1, S, I]);
    expect(matmul(a, down, { round, accumulate: x })).toBe(x);
    const x0 = Tensor.from(gpu, xv, [1, S, H], 'f32', 'x0');
    const want = add(x0,
      matmul(siluMul(matmul(rmsNorm(x0, { eps: EPS, round }), gu, { round }), { round }), down, { round }), { round });
    // As the norm test: only the sum of squares' order differs, which rarely flips an xn rounding.
    expect(ulpStats(round, await x.read(), await want.read()).exact).toBeGreaterThanOrEqual(0.999);
  });
});

describe('matmul matrix-vector workgroup shapes (the gemv option)', async () => {
  const gpu = await getGpu();
  it('every lane count and row count gives the bits of the default shape, fused or not', async () => {
    const K = 200, N = 38;
    const x = Tensor.from(gpu, randn(401, 3 * K), [3, K], 'f32', 'x');
    const w = Tensor.from(gpu, randn(402, N * K), [N, K], 'bf16', 'w');
    const fusions = [{}, { norm: { eps: 1e-5 } }, { norm: { eps: 1e-5 }, swiglu: true }];
    const shapes = [32, 64, 128, 256].flatMap((wg) => [2, 4].map((rows) => ({ wg, rows })));
    for (const [f, fused] of fusions.entries()) {
      const want = await matmul(x, w, { ...fused, round: 'bf16', path: 'gemv' }).read();
      // Each lane count once and each row count (32x2, 64x4, 128x2, 256x4) over the three fusions by turns
      // (HRM_EXHAUSTIVE=1: every shape with each): a pipeline a shape.
      for (const { wg, rows } of sweep(shapes, (_, i) => [0, 3, 4, 7].indexOf(i) % 3 === f)) {
        // Lanes split K differently, so f32 sums may differ in the last bit: compare after the bf16 rounding,
        // which a last-bit difference flips only at a rounding boundary.
        const got = await matmul(x, w, { ...fused, round: 'bf16', path: 'gemv', gemv: { wg, rows } }).read();
        const same = got.filter((v, i) => v === want[i]).length;
        expect(same / got.length, `${JSON.stringify(fused)} ${wg}x${rows}`).toBeGreaterThanOrEqual(0.97);
      }
    }
  });

  it('rejects a shape the kernel cannot take', () => {
    const x = Tensor.empty(gpu, [1, 64], 'f32', 'x');
    const w = Tensor.empty(gpu, [8, 64], 'bf16', 'w');
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 48, rows: 2 } })).toThrow(InputError);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 64, rows: 3 } })).toThrow(/rows 2 or 4/);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 8, rows: 2 } })).toThrow(/from 16 to 256/);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 64, rows: 8 } })).toThrow(/8 with the upl kernels/);
    expect(() => matmul(x, w,
      { path: 'gemv',
      gemv: { wg: 64, rows: 2, kernel: 'upl2' as GemvKernel } })).toThrow(/kernel must be 'vec4' or 'upl' or 'upl-sg'/);
    // gemv_upl reads whole 16-byte units and holds at most 32 of them per lane.
    const odd = Tensor.empty(gpu, [8, 63], 'bf16', 'w.odd');
    expect(() => matmul(Tensor.empty(gpu, [1, 63], 'f32', 'x.odd'), odd,
      { path: 'gemv', gemv: { wg: 64, rows: 2, kernel: 'upl' } })).toThrow(/'w.odd' .*not 16-byte/);
    const long = Tensor.empty(gpu, [8, 4096], 'f32', 'w.long');
    expect(() => matmul(Tensor.empty(gpu, [1, 4096], 'f32', 'x.long'), long,
      { path: 'gemv', gemv: { wg: 16, rows: 2, kernel: 'upl' } })).toThrow(/64 units per lane x 2 rows exceed 32/);
  });
});
