// matmul's fusions (norm prologue, swiglu pairs, residual epilogue) against the composed ops and the float64
// reference, on every path, whole and over row-chunks of the weight.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { runs } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { matmulAbsRef, matmulRef } from '../../../src/kernels/matmul/matmul.ref.ts';
import { rmsNorm } from '../../../src/kernels/rmsnorm/rmsnorm.ts';
import { rmsNormRef } from '../../../src/kernels/rmsnorm/rmsnorm.ref.ts';
import { add, siluMul } from '../../../src/kernels/ops/ops.ts';
import { EPS, FUSED_CASES, FUSED_SHAPES, FUSIONS, type Fusion, MODES, PATHS, expectFusedRef, expectRel, quickMode,
  swigluTol, uploadFused } from '../../helpers/matmul-cases.ts';

describe('matmul fusions against the composed ops', async () => {
  const gpu = await getGpu();
  for (const [m, [dtype, round]] of MODES.entries()) {
    for (const [p, path] of PATHS.entries()) {
      const on = (fusion: Fusion) => runs(quickMode(fusion, p) === m);
      if (on('accumulate')) it(`accumulate ${dtype} (${path}): in place, bit for bit add(acc, matmul(x, w))`,
        async () => {
        for (const [M, N, K] of FUSED_SHAPES) {
          const { x, w, accv } = await uploadFused(gpu, M, N, K, dtype, round, M * 31 + K);
          const acc = Tensor.from(gpu, accv, [M, N], 'f32', 'acc');
          const want = await add(Tensor.from(gpu, accv, [M, N], 'f32', 'acc0'), matmul(x, w, { round, path }),
            { round }).read();
          const got = matmul(x, w, { round, path, accumulate: acc });
          expect(got).toBe(acc);
          expectBitExact(await acc.read(), want, `${M}x${N}x${K}`);
        }
      });

      if (on('swiglu')) it(`swiglu ${dtype} (${path}): bit for bit siluMul(matmul(x, w))`, async () => {
        for (const [M, N, K] of FUSED_SHAPES) {
          const { x, w } = await uploadFused(gpu, M, N, K, dtype, round, M * 37 + K);
          const want = await siluMul(matmul(x, w, { round, path }), { round }).read();
          const got = matmul(x, w, { round, path, swiglu: true });
          expect(got.shape).toEqual([M, N / 2]);
          expectBitExact(await got.read(), want, `${M}x${N}x${K}`);
        }
      });

      for (const swiglu of [false, true]) {
        const what = swiglu ? 'norm + swiglu' : 'norm';
        const like = swiglu ? 'siluMul(matmul(rmsNorm(x), w))' : 'matmul(rmsNorm(x), w)';
        if (!on(what)) continue;
        it(`${what} ${dtype} (${path}): ${like} up to the order of the sum of squares`, async () => {
          let total = 0, same = 0;
          for (const [M, N, K] of FUSED_SHAPES) {
            const { x, w, xv, wv } = await uploadFused(gpu, M, N, K, dtype, round, M * 41 + K);
            const composed = matmul(rmsNorm(x, { eps: EPS, round }), w, { round, path });
            const want = await (swiglu ? siluMul(composed, { round }) : composed).read();
            const got = await matmul(x, w, { round, path, norm: { eps: EPS }, swiglu }).read();
            if (round === 'none') {
              // f32: the inverse RMS may differ by a few ulp; 1e-5 of each output's scale (sum |xn w|, through silu).
              const xn = rmsNormRef(xv, K, EPS);
              const abs = matmulAbsRef(xn, wv, M, N, K);
              const y = matmulRef(xn, wv, M, N, K);
              const scale = swiglu ? Float64Array.from({ length: M * N / 2 }, (_, j) => {
                const [m, i] = [Math.floor(j / (N / 2)), j % (N / 2)];
                return swigluTol(y[m * N + i], y[m * N + N / 2 + i], abs[m * N + i], abs[m * N + N / 2 + i]);
              }) : abs;
              expectRel(got, want, scale, 1e-5, `${what} ${M}x${N}x${K}`);
            } else {
              // A different sum order may flip the rounding of an xn value: rare, and then one ulp in the output.
              const s = ulpStats(round, got, want);
              expect(s.worst, `${M}x${N}x${K} ${JSON.stringify(s)}`).toBeLessThanOrEqual(1);
              total += want.length;
              same += Math.round(s.exact * want.length);
            }
          }
          if (round !== 'none') expect(same / total, `${same} of ${total} identical`).toBeGreaterThanOrEqual(0.999);
        });
      }
    }
  }
});

describe('matmul fusions over row-chunks of the weight', async () => {
  const gpu = await getGpu();
  for (const [m, [dtype, round]] of MODES.entries()) {
    for (const [p, path] of PATHS.entries()) {
      // Each fusion in its quickMode on each path (HRM_EXHAUSTIVE=1: all four in every mode).
      const fusions = FUSIONS.filter((f) => runs(quickMode(f, p) === m));
      if (!fusions.length) continue;
      const what = `${dtype} (${path}): ${fusions.join(', ')} over chunks of 40, 33, 27 rows`;
      it(`${what} give the whole weight's results, bit for bit`, async () => {
        const N = 100;
        for (const [M, K] of [[3, 33], [5, 96]] as const) {
          const { x, w, wv, accv } = await uploadFused(gpu, M, N, K, dtype, round, 700 + M + K);
          const chunks = [[0, 40], [40, 73],
            [73, 100]].map(([a, b], i) => Tensor.from(gpu, wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
          if (fusions.includes('accumulate')) {
            // Each chunk adds into its own columns.
            const whole = Tensor.from(gpu, accv, [M, N], 'f32', 'acc.whole');
            const split = Tensor.from(gpu, accv, [M, N], 'f32', 'acc.split');
            matmul(x, w, { round, path, accumulate: whole });
            matmul(x, chunks, { round, path, accumulate: split });
            expectBitExact(await split.read(), await whole.read(), `accumulate M=${M} K=${K}`);
          }
          // swiglu over chunks is matmul then siluMul; every chunk's kernel finds the same inverse RMS.
          const norm = { eps: EPS };
          const options = { swiglu: { swiglu: true }, norm: { norm }, 'norm + swiglu': { norm, swiglu: true } };
          for (const f of fusions) {
            if (f === 'accumulate') continue;
            const o = options[f];
            const got = await matmul(x, chunks, { round, path, ...o }).read();
            expectBitExact(got, await matmul(x, w, { round, path, ...o }).read(), `${f} M=${M} K=${K}`);
          }
        }
      });
    }
  }
});

describe('matmul fusions against the float64 reference', async () => {
  const gpu = await getGpu();
  for (const c of FUSED_CASES) {
    for (const [p, path] of PATHS.entries()) {
      // The fusion's quickMode on this path: f32 on one path, bf16 and f16 on the others (HRM_EXHAUSTIVE=1: all).
      const modes = MODES.filter((_, m) => runs(m === quickMode(c.name, p)));
      const names = modes.map(([dt]) => dt).join(', ');
      it(`${c.name} (${path}): ${names} within the f32 error bound or rounded as the reference rounds`, async () => {
        const tally = { total: 0, same: 0 };
        for (const [M, N, K] of [[3, 70, 257], [5, 38, 264]] as const) {
          for (const [dtype, round] of modes) {
            const u = await uploadFused(gpu, M, N, K, dtype, round, M + N + K);
            await expectFusedRef(gpu, c, u.w, u, [M, N, K], round, { path }, tally);
          }
        }
        if (tally.total) expect(tally.same / tally.total,
          `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
      });
    }
  }
});
