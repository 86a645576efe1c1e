// Quantized linear layers and embedding (qlinear.ts) against float64 references over the dequantized weights, the
// fusions against the composed ops bit for bit, and quantize's group sizes 32 and 128 (MLX's fixtures in
// ops.safetensors cover group 64 only, tests/kernels/quant/quant.test.ts: these are checked against quantizeRef).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { runs } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { dequantDense, packHalves, qembed, qlinear } from '../../../src/kernels/qlinear/qlinear.ts';
import { Gpu as GpuClass } from '../../../src/kernels/gpu.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { qembedRef, qlinearAbsRef, qlinearRef } from '../../../src/kernels/qlinear/qlinear.ref.ts';
import { dequantize, quantize } from '../../../src/kernels/quant/quant.ts';
import { dequantizeRef, quantizeRef, roundTo } from '../../../src/kernels/quant/quant.ref.ts';
import { rmsNorm } from '../../../src/kernels/rmsnorm/rmsnorm.ts';
import { add, siluMul } from '../../../src/kernels/ops/ops.ts';
import { EPS, expectWithin, makeWeight, PATHS, U } from './make-weight.ts';

describe('qlinear against the float64 product with the dequantized weights', async () => {
  const gpu = await getGpu();
  // Every variant on two layouts; the others on the CPU-driver variant only (each pipeline compiles for seconds there).
  // 4 and 8 bits take qgemv4 on the gemv path; 3 bits its fallback, qgemv.
  const layouts: Array<[number, number, readonly (typeof PATHS[number])[]]> = [[4, 64, PATHS], [8, 128, PATHS],
    [8, 64, ['rows']], [4, 32, ['rows']], [3, 64, ['rows', 'gemv']], [6, 32, ['rows']]];
  for (const [bits, gs, paths] of layouts) {
    for (const path of paths) {
      it(`f32, ${bits} bits, group ${gs} (${path}): within the f32 dot-product bound, one chunk or two alike`,
        async () => {
        const [M, N, K] = [5, 40, 256];
        const { ref, chunked, one } = makeWeight(gpu, N, K, bits, gs, 'none', bits * 100 + gs);
        const xv = randn(bits + gs, M * K);
        const x = Tensor.from(gpu, xv, [M, K], 'f32', 'x');
        const got = await qlinear(x, chunked, { path }).read();
        expectWithin(got, qlinearRef(xv, ref, M), qlinearAbsRef(xv, ref, M), K, `${bits}b g${gs} ${path}`);
        // Row chunks write their own columns of the same sums.
        expectBitExact(got, await qlinear(x, one, { path }).read(), 'chunked vs one chunk');
      });
    }
  }

  // Few lanes so each walks several units (32 at 4 bits, 64 at 8 for K = 1024), and a last block of rows past N.
  for (const [bits, gemv] of [[4, { wg: 16, rows: 4 }], [8, { wg: 16, rows: 2 }]] as const) {
    it(`f32, ${bits} bits (gemv ${gemv.wg} lanes x ${gemv.rows} rows): within the f32 dot-product bound`, async () => {
      const [M, N, K] = [5, 42, 1024];
      const { ref, chunked } = makeWeight(gpu, N, K, bits, 64, 'none', bits + 40);
      const xv = randn(bits + 41, M * K);
      const got = await qlinear(Tensor.from(gpu, xv, [M, K], 'f32', 'x'), chunked, { path: 'gemv', gemv }).read();
      expectWithin(got, qlinearRef(xv, ref, M), qlinearAbsRef(xv, ref, M), K, `${bits}b gemv ${gemv.wg}x${gemv.rows}`);
    });
  }

  // bf16 on every variant; f16 (scales stored as f16) on the CPU-driver one.
  for (const [round, paths] of [['bf16', PATHS], ['f16', ['rows']]] as const) {
    for (const path of paths) {
      it(`${round} (${path}): one rounding of the f32 sum (MLX's qmv / qmm: tiled rounds the dequantized weights)`,
        async () => {
        const [M, N, K] = [9, 48, 192];
        const { ref, one } = makeWeight(gpu, N, K, 4, 64, round, 7);
        const xv = randn(8, M * K).map((v) => roundTo(round, v));
        const got = await qlinear(Tensor.from(gpu, xv, [M, K], 'f32', 'x'), one, { path, round }).read();
        const want = qlinearRef(xv, ref, M, { round, as: path === 'tiled' ? round : 'exact' });
        expect(got.findIndex((v) => roundTo(round, v) !== v)).toBe(-1);
        const s = ulpStats(round, got, want);
        expect(s.within1, JSON.stringify(s)).toBeGreaterThanOrEqual(0.999);
        expect(s.worst, JSON.stringify(s)).toBeLessThanOrEqual(1);
      });
    }
  }
});

describe('qlinear fusions against the composed ops', async () => {
  const gpu = await getGpu();
  const [M, N, K] = [3, 64, 128];
  for (const round of ['none', 'bf16'] as Round[]) {
    for (const path of round === 'none' ? ['rows'] as const : PATHS) {
      it(`${round} (${path}): accumulate and swiglu bit for bit, norm as rmsNorm first`, async () => {
        const { one, chunked } = makeWeight(gpu, N, K, 4, 64, round, 11);
        const xv = randn(12, M * K, 3).map((v) => roundTo(round, v));
        const x = Tensor.from(gpu, xv, [M, K], 'f32', 'x');
        const accv = randn(13, M * N, 2).map((v) => roundTo(round, v));
        for (const w of [one, chunked]) {
          const acc = Tensor.from(gpu, accv, [M, N], 'f32', 'acc');
          const want = await add(Tensor.from(gpu, accv, [M, N], 'f32', 'acc0'), qlinear(x, w, { round, path }),
            { round }).read();
          expect(qlinear(x, w, { round, path, accumulate: acc })).toBe(acc);
          expectBitExact(await acc.read(), want, 'accumulate');
          const sw = await qlinear(x, w, { round, path, swiglu: true }).read();
          expectBitExact(sw, await siluMul(qlinear(x, w, { round, path }), { round }).read(), 'swiglu');
          const normed = qlinear(rmsNorm(x, { eps: EPS, round }), w, { round, path });
          const got = await qlinear(x, w, { round, path, norm: { eps: EPS } }).read();
          const ref = await normed.read();
          if (path !== 'gemv') expectBitExact(got, ref, 'norm');
          else {
            // Fused prologue: the sum of squares in another order may move an inverse RMS by an ulp.
            const d = Array.from(got).reduce((m, v, i) => Math.max(m,
              Math.abs(v - ref[i]) / (Math.abs(ref[i]) + 1e-3)), 0);
            expect(d).toBeLessThan(round === 'none' ? 1e-5 : 2 ** -7);
          }
        }
      });
    }
  }
});

describe('qembed', async () => {
  const gpu = await getGpu();
  for (const round of ['none', 'bf16'] as Round[]) {
    it(`${round}: the dequantized rows times the scale (ids past the vocabulary clamp), across chunks`, async () => {
      const [V, H] = [37, 128];
      const { ref, chunked } = makeWeight(gpu, V, H, 4, 32, round, 21);
      const ids = [0, 36, 5, 20, 19, 99];
      const got = await qembed(Tensor.from(gpu, ids, [ids.length], 'u32', 'ids'), chunked,
        { scale: 11.3, round }).read();
      const want = qembedRef(ids, ref, 11.3, round);
      if (round === 'bf16') expectBitExact(got, Float32Array.from(want), 'qembed bf16');
      else {
        // f32: scale * level + bias (maybe one fma) then the product: a few ulp of |scale| level + |bias|.
        const mag = qembedRef(ids,
          { ...ref, scales: Array.from(ref.scales, Math.abs), biases: Array.from(ref.biases, Math.abs) }, 11.3, round);
        for (let i = 0; i < want.length; i++) {
          expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(4 * U * mag[i] + 1e-30);
        }
      }
    });
  }
});

describe('qlinear on tensor cores: the dense copy of the weight (dequantDense)', async () => {
  const gpu = await getGpu();
  // 37 rows in two chunks; row 0's group 0 one constant, its group 1 all negative (the quantizer's corner groups).
  const cases: Array<[number, number, 'bf16' | 'f16']> = [[4, 64, 'bf16'], [8, 32, 'bf16'], [3, 64, 'f16'],
    [2, 128, 'bf16'], [6, 32, 'f16']];
  for (const [bits, gs, round] of cases) {
    it(`${bits} bits, group ${gs}, ${round}: every value is dequantize's in the dtype, rows in order across chunks`,
      async () => {
      const [N, K] = [37, 256];
      const corners = (w: Float32Array) => { w.fill(-0.3, 0,
        gs); for (let i = 0; i < gs; i++) w[gs + i] = -0.2 - i / (8 * gs); };
      const { ref, chunked } = makeWeight(gpu, N, K, bits, gs, round, bits * 10 + gs, corners);
      const dense = dequantDense(chunked, round);
      expect(dense.map((t) => [t.dtype, ...t.shape])).toEqual(chunked.q.map((q) => [round, q.shape[0], K]));
      const got = new Float32Array(N * K);
      let at = 0;
      for (const t of dense) { const v = await t.readF32(); got.set(v, at); at += v.length; }
      expectBitExact(got, dequantizeRef(ref.q, ref.scales, ref.biases, N, K, { bits, groupSize: gs, round }), 'dense');
    });
  }

  it('the tiled matmul over the dense copy equals qtiled bit for bit (the same staged values and sums), norm and '
    + 'residual fused', async () => {
    const [M, N, K] = [19, 40, 256];
    const { one, chunked } = makeWeight(gpu, N, K, 4, 64, 'bf16', 77);
    const xv = randn(78, M * K).map((v) => roundTo('bf16', v));
    const x = Tensor.from(gpu, xv, [M, K], 'f32', 'x');
    const opts = { round: 'bf16' as const, path: 'tiled' as const, norm: { eps: EPS } };
    const want = await qlinear(x, one, opts).read();
    expectBitExact(await matmul(x, dequantDense(chunked, 'bf16'), opts).read(), want, 'dense tiled vs qtiled');
    const res = () => Tensor.from(gpu, randn(79, M * N).map((v) => roundTo('bf16', v)), [M, N], 'f32', 'res');
    const a = await qlinear(x, one, { round: 'bf16', path: 'tiled', accumulate: res() }).read();
    expectBitExact(await matmul(x, dequantDense(one, 'bf16'),
      { round: 'bf16', path: 'tiled', accumulate: res() }).read(), a, 'residual');
  });

  it('a dense copy larger than one binding is split into row chunks that each fit', async () => {
    const small = await GpuClass.create({ bindingLimit: 4096 });   // 8 bf16 rows of 256 values a chunk
    try {
      const { ref, one } = makeWeight(small, 21, 256, 4, 64, 'bf16', 5);
      const dense = dequantDense(one, 'bf16');
      expect(dense.map((t) => t.shape[0])).toEqual([8, 8, 5]);
      const got = new Float32Array(21 * 256);
      let at = 0;
      for (const t of dense) { const v = await t.readF32(); got.set(v, at); at += v.length; }
      expectBitExact(got,
        dequantizeRef(ref.q, ref.scales, ref.biases, 21, 256, { bits: 4, groupSize: 64, round: 'bf16' }), 'split');
    } finally {
      small.destroy();
    }
  });

  const tensorCores = gpu.device.features.has('chromium-experimental-subgroup-matrix');
  it.skipIf(tensorCores)('forced without tensor cores: the error names what is missing (skipped where the adapter has '
    + 'them)', () => {
    const { one } = makeWeight(gpu, 8, 64, 4, 64, 'bf16', 2);
    const x = Tensor.from(gpu, new Float32Array(32 * 64), [32, 64], 'f32', 'x');
    expect(() => qlinear(x, one, { path: 'sgmat', round: 'bf16' })).toThrow(/subgroup/);
  });
});

describe('packHalves', async () => {
  const gpu = await getGpu();
  for (const dtype of ['bf16', 'f16'] as const) {
    it(`${dtype}: f32 values of the dtype pack exactly (odd count, subnormals, signed zero)`, async () => {
      const v = randn(5, 37, 3).map((x) => roundTo(dtype, x));
      v[0] = -0; v[1] = roundTo(dtype, 1e-6); v[2] = 0;
      const got = await packHalves(Tensor.from(gpu, v, [37], 'f32', 'v'), dtype).read();
      expectBitExact(got, v, dtype);
    });
  }
});

describe('qlinear bad input', async () => {
  const gpu = await getGpu();
  const { one } = makeWeight(gpu, 8, 64, 4, 64, 'none', 1);
  const x = Tensor.from(gpu, new Float32Array(2 * 64), [2, 64], 'f32', 'x');
  it('names the tensor and the rule', () => {
    expect(() => qlinear(Tensor.from(gpu, new Float32Array(2 * 128), [2, 128], 'f32', 'x128'),
      one)).toThrow(ShapeError);
    expect(() => qlinear(x, { ...one, bits: 7 })).toThrow(/bits 7 is not one of/);
    expect(() => qlinear(x, { ...one, groupSize: 16 })).toThrow(/group size 16 is not one of 32, 64, 128/);
    expect(() => qlinear(x,
      { ...one, scales: [Tensor.from(gpu, new Float32Array(8 * 2), [8, 2], 'f32',
      'bad.scales')] })).toThrow(/'bad.scales' is \[8, 2\]/);
    expect(() => qlinear(x,
      { ...one, biases: [Tensor.from(gpu, new Float32Array(8), [8, 1], 'bf16',
      'b16')] })).toThrow(/'b16' is \[8, 1\] bf16; .* needs f32 \[8, 1\]/);
    expect(() => qlinear(x, { ...one, biases: [] })).toThrow(/1 packed chunks, 1 scales and 0 biases/);
    expect(() => qlinear(x, one, { swiglu: true, accumulate: x })).toThrow(InputError);
    expect(() => qlinear(x, one,
      { path: 'gemv', gemv: { wg: 8, rows: 2 } })).toThrow(/wg must be a power of two from 16 to 256/);
    expect(() => qlinear(x, one, { path: 'wide' as 'gemv' })).toThrow(/unknown path "wide"; qlinear takes/);
    expect(() => qlinear(x, one, { path: 'sgmat' })).toThrow(/path 'sgmat' needs round 'bf16' \(got "none"\)/);
    expect(() => qlinear(x, one, { round: 'f8' as 'bf16' })).toThrow(/\[qlinear\] unknown round "f8"/);
    expect(() => qlinear(Tensor.from(gpu, new Uint32Array(128), [2, 64], 'u32', 'xu'), one)).toThrow(DTypeError);
  });
});

describe('quantize with group sizes 32 and 128 (no MLX fixture: against quantizeRef, Metal and CPU rules)',
  async () => {
  const gpu = await getGpu();
  for (const [g, gs] of [32, 128].entries()) {
    for (const [b, bits] of [4, 8].entries()) {
      it(`group ${gs}, ${bits} bits: words, scales, biases and dequantized values bit for bit, corner groups included`,
        async () => {
        const rows = 4, cols = 2 * gs;
        const w = randn(gs + bits, rows * cols);
        // Group 0 constant negative, group 1 all negative, group 2 constant positive, the rest random.
        w.fill(-0.75, 0, gs);
        for (let i = 0; i < gs; i++) w[gs + i] = -1 - i / gs;
        w.fill(0.5, 2 * gs, 3 * gs);
        for (const [r, round] of (['none', 'bf16'] as Round[]).entries()) {
          // Two of the four rounding and rules pairs by turns, each pair twice (HRM_EXHAUSTIVE=1: all four).
          for (const rules of (['metal', 'cpu'] as const).filter((_, u) => runs((g + b + r + u) % 2 === 0))) {
            const input = w.map((v) => roundTo(round, v));
            const ref = quantizeRef(input, rows, cols, { bits, groupSize: gs, round, rules });
            const got = quantize(Tensor.from(gpu, input, [rows, cols], 'f32', 'w'),
              { bits, groupSize: gs, round, rules });
            expectBitExact(await got.q.read(), ref.q, 'q');
            expectBitExact(await got.scales.read(), ref.scales, 'scales');
            expectBitExact(await got.biases.read(), ref.biases, 'biases');
            const d = await dequantize(got.q, got.scales, got.biases, { bits, groupSize: gs, round }).read();
            expectBitExact(d, dequantizeRef(ref.q, ref.scales, ref.biases, rows, cols, { bits, groupSize: gs, round }),
              'dequant');
          }
        }
      });
    }
  }
});
