import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectBitExact, expectUlps, ulpOf } from '../../helpers/quant-check.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { ShapeError } from '../../../src/errors.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { quantize } from '../../../src/kernels/quant/quant.ts';
import { quantizedMatmul, type Accumulate } from '../../../src/kernels/quant/qmm.ts';
import { QUANT_BITS, quantizeRef, roundTo, unpackLevel } from '../../../src/kernels/quant/quant.ref.ts';
import { qmmCpuRef, qmmRef } from '../../../src/kernels/quant/qmm.ref.ts';

const DTYPES = [['f32', 'none'], ['f16', 'f16'], ['bf16', 'bf16']] as const;

interface Case {
  m: number; k: number; n: number; bits: number; transpose: boolean; round: Round; accumulate: Accumulate; seed: number;
}
const BASE: Case = { m: 5, k: 256, n: 96, bits: 4, transpose: true, round: 'none', accumulate: 'f32', seed: 1 };
/** The same default in the other orientation (W [96, 256] quantized along its 256 columns, as the fixture's x_n). */
const BASE_N: Case = { ...BASE, k: 96, n: 256, transpose: false };
const base = (transpose: boolean): Case => (transpose ? BASE : BASE_N);

/**
 * f32 accumulation bound for element [i, j]: the kernel sums x * level per group, then scale * dot + bias * sum(x),
 * each a recursive f32 sum of <= K terms, so the error is within (K + 2) * 2^-24 * sum_k |x| (|scale| level + |bias|),
 * plus half an ulp for the f32 result.
 */
function f32Bound(x: ArrayLike<number>, q: ArrayLike<number>, scales: ArrayLike<number>, biases: ArrayLike<number>,
  c: Case, i: number, j: number): number {
  const cols = c.transpose ? c.k : c.n;
  let s = 0;
  for (let t = 0; t < c.k; t++) {
    const [r, col] = c.transpose ? [j, t] : [t, j];
    const g = r * (cols / 64) + Math.floor(col / 64);
    s += Math.abs(x[i * c.k + t]) * (Math.abs(scales[g]) * unpackLevel(q, (r * cols * c.bits) / 32, col, c.bits) +
      Math.abs(biases[g]));
  }
  return (c.k + 2) * 2 ** -24 * s;
}

/**
 * f32: within the accumulation bound of the exact value. bf16/f16: within one ulp of the rounded exact value on
 * >= 99.9 % of the elements (the f32 error is far below a half ulp unless the value is next to a rounding boundary),
 * and every element within one ulp plus the accumulation bound (outputs near 0 after cancellation).
 */
function expectQmm(got: ArrayLike<number>, exact: Float64Array, x: ArrayLike<number>,
  ref: { q: Uint32Array; scales: Float32Array; biases: Float32Array }, c: Case, what: string): void {
  const want = Array.from(exact, (v) => roundTo(c.round, v));
  if (c.round !== 'none') expectUlps(c.round, got, want, 0.999, Infinity, what);
  for (let i = 0; i < c.m; i++) {
    for (let j = 0; j < c.n; j++) {
      const at = i * c.n + j;
      const tol = f32Bound(x, ref.q, ref.scales, ref.biases, c, i, j) +
        (c.round === 'none' ? 2 ** -24 * Math.abs(exact[at]) : ulpOf(c.round, want[at]));
      if (!(Math.abs(got[at] - (c.round === 'none' ? exact[at] : want[at])) <= tol)) {
        throw new Error(`${what}: first mismatch at [${i}, ${j}]: got ${got[at]}, want ${exact[at]} (tol ${tol})`);
      }
    }
  }
}

async function runCase(c: Case): Promise<void> {
  const gpu = await getGpu();
  const [wRows, wCols] = c.transpose ? [c.n, c.k] : [c.k, c.n];
  const w = randn(c.seed, wRows * wCols).map((v) => roundTo(c.round, v));
  const x = randn(c.seed + 100, c.m * c.k, 2).map((v) => roundTo(c.round, v));
  const qz = quantize(Tensor.from(gpu, w, [wRows, wCols], 'f32', 'w'), { bits: c.bits, round: c.round });
  const ref = quantizeRef(w, wRows, wCols, { bits: c.bits, round: c.round });
  const what = JSON.stringify(c);
  expectBitExact(await qz.q.read(), ref.q, `${what} packed`);
  const got = await quantizedMatmul(Tensor.from(gpu, x, [c.m, c.k], 'f32', 'x'), qz.q, qz.scales, qz.biases, c).read();
  const o = { bits: c.bits, transpose: c.transpose, m: c.m, k: c.k, n: c.n };
  if (c.accumulate === 'dtype') {
    // The CPU-backend emulation is sequential with every op rounded: it must match its model bit for bit.
    expectBitExact(got, qmmCpuRef(x, ref.q, ref.scales, ref.biases, { ...o, round: c.round }), what);
    return;
  }
  expectQmm(got, qmmRef(x, ref.q, ref.scales, ref.biases, o), x, ref, c, what);
}

describe('quantizedMatmul vs MLX fixtures (qmm.{dt}.b{bits}: w [96, 256], x_t [5, 256], x_n [5, 96])', () => {
  for (const [dt, round] of DTYPES) {
    for (const bits of [4, 8]) {
      it(`${dt} b${bits}: MLX CPU backend arithmetic reproduces out_t and out_n bit for bit; Metal arithmetic meets `
        + `the f64 reference`, async () => {
        const gpu = await getGpu();
        const f = await fixture('ops.safetensors');
        const p = `qmm.${dt}.b${bits}.`;
        const [w, xt, outT, xn,
          outN] = await Promise.all(['w', 'x_t', 'out_t', 'x_n', 'out_n'].map((n) => f.array(p + n)));
        const wt = Tensor.from(gpu, w, [96, 256], 'f32', 'w');
        const xT = Tensor.from(gpu, xt, [5, 256], 'f32', 'x_t'), xN = Tensor.from(gpu, xn, [5, 96], 'f32', 'x_n');

        // MLX's CPU backend made the fixture: quantize with its rules, accumulate as it does (every op in the dtype).
        const cpu = quantize(wt, { bits, round, rules: 'cpu' });
        const cpuRef = quantizeRef(w, 96, 256, { bits, round, rules: 'cpu' });
        expectBitExact(await cpu.q.read(), cpuRef.q, `${p}w packed (cpu rules)`);
        expectBitExact(await cpu.scales.read(), cpuRef.scales, `${p}w scales (cpu rules)`);
        const cpuOpts = { bits, round, accumulate: 'dtype' as const };
        expectBitExact(await quantizedMatmul(xT, cpu.q, cpu.scales, cpu.biases,
          { ...cpuOpts, transpose: true }).read(), outT, `${p}out_t (accumulate dtype)`);
        expectBitExact(await quantizedMatmul(xN, cpu.q, cpu.scales, cpu.biases,
          { ...cpuOpts, transpose: false }).read(), outN, `${p}out_n (accumulate dtype)`);

        // Metal rules and arithmetic (the default): f32 accumulation, one rounding. Against the exact product of
        // the same quantized weights: f32 within the f32 accumulation bound; half dtypes within one ulp of the
        // rounded exact value on >= 99.9 % of the elements. (MLX's CPU accumulates in the dtype, so these
        // Metal-style half results sit many ulps from the fixture: only the f32 ones are compared with it.)
        const metal = quantize(wt, { bits, round });
        const ref = quantizeRef(w, 96, 256, { bits, round });
        expectBitExact(await metal.q.read(), ref.q, `${p}w packed (metal rules)`);
        const gotT = await quantizedMatmul(xT, metal.q, metal.scales, metal.biases,
          { bits, round, transpose: true }).read();
        const gotN = await quantizedMatmul(xN, metal.q, metal.scales, metal.biases,
          { bits, round, transpose: false }).read();
        const exT = qmmRef(xt, ref.q, ref.scales, ref.biases, { bits, transpose: true, m: 5, k: 256, n: 96 });
        const exN = qmmRef(xn, ref.q, ref.scales, ref.biases, { bits, transpose: false, m: 5, k: 96, n: 256 });
        const cases = [[gotT, exT, 'out_t', outT, { m: 5, k: 256, n: 96, transpose: true }],
          [gotN, exN, 'out_n', outN, { m: 5, k: 96, n: 256, transpose: false }]] as const;
        for (const [got, ex, name, fx, shape] of cases) {
          expectQmm(got, ex, shape.transpose ? xt : xn, ref, { ...BASE, ...shape, bits, round }, `${p}${name} (metal)`);
          if (round === 'none') {
            // Both are f32 sums of the same terms in different orders, each within ~4e-5 of the exact value.
            for (let i = 0; i < fx.length; i++) {
              if (!(Math.abs(got[i] - fx[i]) <= 1e-4)) {
                throw new Error(`${p}${name}: index ${i} is ${got[i]}, MLX ${fx[i]}`);
              }
            }
          }
        }
      });
    }
  }
});

describe('quantizedMatmul vs the reference, one setting varied at a time from ' + JSON.stringify(BASE), () => {
  it('every bit width, both orientations', async () => {
    for (const bits of QUANT_BITS) for (const transpose of [true, false]) await runCase({ ...base(transpose), bits,
      seed: bits });
  });
  it('rows 1, 2, 3, 8, 9, 17 (decode row, row tiles and their tails)', async () => {
    for (const m of [1, 2, 3, 8, 9, 17]) for (const transpose of [true, false]) await runCase({ ...base(transpose), m,
      seed: m });
  });
  it('inner and outer sizes 64 and 192 (multiples of 64, not of 256), odd row counts', async () => {
    await runCase({ ...BASE, k: 192, n: 33 });
    await runCase({ ...BASE, k: 64, n: 1 });
    await runCase({ ...BASE_N, k: 31, n: 192 });
    await runCase({ ...BASE_N, k: 1, n: 64, bits: 3 });
  });
  it('bf16 and f16 output rounding', async () => {
    for (const round of ['bf16', 'f16'] as Round[]) for (const transpose of [true,
      false]) await runCase({ ...base(transpose), round, bits: 6 });
  });
  it("accumulate 'dtype' (MLX CPU backend) is bit-exact to its model in every dtype", async () => {
    for (const round of ['none', 'bf16', 'f16'] as Round[]) {
      for (const transpose of [true, false]) await runCase({ ...base(transpose), m: 3, round, accumulate: 'dtype',
        bits: transpose ? 5 : 8 });
    }
  });
  it('names mismatched shapes', async () => {
    const gpu = await getGpu();
    const r = quantize(Tensor.from(gpu, randn(1, 4 * 128), [4, 128], 'f32', 'w'), { bits: 4 });
    const x = Tensor.from(gpu, randn(2, 3 * 64), [3, 64], 'f32', 'x');
    expect(() => quantizedMatmul(x, r.q, r.scales, r.biases, { bits: 4, transpose: true })).toThrow(ShapeError);
    expect(() => quantizedMatmul(x, r.q, r.scales, r.biases,
      { bits: 4, transpose: true })).toThrow(/\[quantizedMatmul\] x \[3, 64\]/);
  });
});
