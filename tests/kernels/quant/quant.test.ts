import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { runs } from '../../helpers/sweep.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { dequantize, quantize } from '../../../src/kernels/quant/quant.ts';
import { appendQuantized, dequantizeKV, quantKV } from '../../../src/kernels/attention/kvquant.ts';
import {
  QUANT_BITS, dequantizeRef, quantizeGroupRef, quantizeRef, roundTo, unpackLevel, type QuantRules,
} from '../../../src/kernels/quant/quant.ref.ts';

const DTYPES = [['f32', 'none'], ['f16', 'f16'], ['bf16', 'bf16']] as const;

async function readAll(r: { q: Tensor; scales: Tensor; biases: Tensor }) {
  return { q: await r.q.read(), scales: await r.scales.read(), biases: await r.biases.read() };
}

describe('quantize / dequantize vs MLX fixtures (ops.safetensors, x [8, 256], MLX CPU backend)', () => {
  for (const [dt, round] of DTYPES) {
    for (const bits of [4, 8]) {
      it(`${dt} b${bits}: CPU rules reproduce words, scales, biases and dequantized values bit for bit`, async () => {
        const gpu = await getGpu();
        const f = await fixture('ops.safetensors');
        const p = `quantize.${dt}.b${bits}.`;
        const x = await f.array(p + 'x');
        const [wq, scales, biases,
          deq] = await Promise.all(['wq', 'scales', 'biases', 'dequant'].map((n) => f.array(p + n)));
        const got = await readAll(quantize(Tensor.from(gpu, x, [8, 256], 'f32', 'x'), { bits, round, rules: 'cpu' }));
        expectBitExact(got.q, wq, `${p}wq`);
        expectBitExact(got.scales, scales, `${p}scales`);
        expectBitExact(got.biases, biases, `${p}biases`);
        // Dequantize MLX's own packed tensor, so this checks dequantization independently of quantization.
        const t = (a: Float32Array | Int32Array | Uint32Array, shape: number[],
          dtype: 'u32' | 'f32') => Tensor.from(gpu, a, shape, dtype, 'fx');
        const d = await dequantize(t(wq, [8, (256 * bits) / 32], 'u32'), t(scales, [8, 4], 'f32'),
          t(biases, [8, 4], 'f32'), { bits, round }).read();
        expectBitExact(d, deq, `${p}dequant`);
        // The CPU reference agrees too (it is what other code uses without a GPU).
        expectBitExact(quantizeRef(x, 8, 256, { bits, round, rules: 'cpu' }).q, wq, `${p}wq (quantizeRef)`);
        expectBitExact(dequantizeRef(wq, scales, biases, 8, 256, { bits, round }), deq, `${p}dequant (dequantizeRef)`);
      });

      it(`${dt} b${bits}: Metal rules match MLX except on exact halves, where they round away from zero`, async () => {
        const gpu = await getGpu();
        const f = await fixture('ops.safetensors');
        const p = `quantize.${dt}.b${bits}.`;
        const x = await f.array(p + 'x');
        const [wq, scales, biases] = await Promise.all(['wq', 'scales', 'biases'].map((n) => f.array(p + n)));
        const got = await readAll(quantize(Tensor.from(gpu, x, [8, 256], 'f32', 'x'), { bits, round }));
        const ref = quantizeRef(x, 8, 256, { bits, round });
        expectBitExact(got.q, ref.q, `${p}wq vs quantizeRef`);
        expectBitExact(got.scales, scales, `${p}scales`);
        expectBitExact(got.biases, biases, `${p}biases`);
        // Random data has no all-negative group here, so the rules can only differ at exact halves.
        let halves = 0;
        for (let i = 0; i < 8 * 256; i++) {
          const row = Math.floor(i / 256), g0 = i - (i % 64);
          const a = unpackLevel(got.q, (row * 256 * bits) / 32, i % 256, bits);
          const b = unpackLevel(wq, (row * 256 * bits) / 32, i % 256, bits);
          if (a === b) continue;
          const { scale, bias } = quantizeGroupRef(Array.from(x.subarray(g0, g0 + 64)), bits);
          const ratio = Math.fround(Math.fround(x[i] - bias) / scale);
          if (Math.abs(ratio % 1) !== 0.5 || a !== Math.abs(Math.trunc(ratio)) + 1 || b % 2 !== 0) {
            throw new Error(`${p}wq: level ${i} is ${a}, MLX ${b}, ` +
              `and (w - bias) / scale = ${ratio} is not a half they round differently`);
          }
          halves++;
        }
        if (dt !== 'bf16') expect(halves).toBe(0); // f32/f16 random data hit no exact half; bf16 data do (1-4 per case)
      });
    }
  }
});

/** Rows of 192 values (3 groups, a multiple of 64 but not of 256) holding the Metal corner cases. */
function cornerRows(bits: number): { w: Float32Array; rows: number; cols: number } {
  const nBins = 2 ** bits - 1;
  const rows = 5, cols = 192;
  const groups: number[][] = [
    Array.from({ length: 64 }, (_, i) => -0.25 - (i % 13) * 0.125),           // all negative
    Array.from({ length: 64 }, (_, i) => 0.5 + (i % 11) * 0.0625),            // all positive
    Array.from({ length: 64 }, () => 0),                                       // all zero
    Array.from({ length: 64 }, () => 0.7),                                     // constant positive
    Array.from({ length: 64 }, () => -1.3),                                    // constant negative
    // Levels on exact halves: edge 0 / nBins makes scale -1, bias nBins, level = nBins - w.
    Array.from({ length: 64 }, (_, i) => (i === 0 ? 0 : i === 1 ? nBins : (i % nBins) + 0.5)),
    Array.from({ length: 64 }, (_, i) => -(i === 0 ? 0 : i === 1 ? nBins : (i % nBins) + 0.5)),
  ];
  const r = randn(bits * 7 + 1, rows * cols, 2);
  const w = new Float32Array(rows * cols);
  for (let g = 0; g < (rows * cols) / 64; g++) {
    const src = g < groups.length ? groups[g] : Array.from(r.subarray(g * 64, g * 64 + 64));
    w.set(src.map((v) => Math.fround(v)), g * 64);
  }
  return { w, rows, cols };
}

describe('Metal corner cases vs the reference (5 rows x 192 values)', () => {
  for (const [b, bits] of QUANT_BITS.entries()) {
    it(`bits ${bits}: all-negative, all-positive, zero, constant and exact-half groups, every dtype, both rules`,
      async () => {
      const gpu = await getGpu();
      const { w, rows, cols } = cornerRows(bits);
      const wt = Tensor.from(gpu, w, [rows, cols], 'f32', 'w');
      for (const [r, round] of (['none', 'bf16', 'f16'] as Round[]).entries()) {
        const input = round === 'none' ? w : w.map((v) => roundTo(round, v));
        const t = round === 'none' ? wt : Tensor.from(gpu, input, [rows, cols], 'f32', 'w');
        // The rules by turns over the dtypes, a pipeline each (HRM_EXHAUSTIVE=1: both rules in every dtype).
        for (const rules of (['metal', 'cpu'] as QuantRules[]).filter((_, u) => runs((b + r) % 2 === u))) {
          const what = `bits ${bits} ${round} ${rules}`;
          const ref = quantizeRef(input, rows, cols, { bits, round, rules });
          const got = quantize(t, { bits, round, rules });
          const g = await readAll(got);
          expectBitExact(g.q, ref.q, `${what} q`);
          expectBitExact(g.scales, ref.scales, `${what} scales`);
          expectBitExact(g.biases, ref.biases, `${what} biases`);
          const d = await dequantize(got.q, got.scales, got.biases, { bits, round }).read();
          expectBitExact(d, dequantizeRef(ref.q, ref.scales, ref.biases, rows, cols, { bits, round }),
            `${what} dequant`);
        }
      }
      // The cases do exercise the Metal rules: the all-negative group gets a different scale (running max 0)...
      const metal = quantizeRef(w, rows, cols, { bits }), cpu = quantizeRef(w, rows, cols, { bits, rules: 'cpu' });
      expect(metal.scales[0]).not.toBe(cpu.scales[0]);
      expect(metal.scales[1]).toBe(cpu.scales[1]);
      // ...and each exact half rounds away from zero (Metal) or to even (CPU).
      const nBins = 2 ** bits - 1;
      for (let i = 2; i < 64; i++) {
        const half = nBins - ((i % nBins) + 0.5);
        const lm = unpackLevel(metal.q, 0, 5 * 64 + i, bits), lc = unpackLevel(cpu.q, 0, 5 * 64 + i, bits);
        expect(lm, `metal level of ${half}`).toBe(Math.floor(half) + 1);
        expect(lc, `cpu level of ${half}`).toBe(Math.floor(half) % 2 === 0 ? Math.floor(half) : Math.floor(half) + 1);
      }
      // Zero stays exactly representable: the all-zero group dequantizes to 0.
      const z = dequantizeRef(metal.q, metal.scales, metal.biases, rows, cols, { bits });
      for (let i = 128; i < 192; i++) expect(z[i]).toBe(0);
    });
  }
});

describe('quantized KV-cache append', () => {
  it('writes S positions at a nonzero offset of every head and leaves the other positions alone', async () => {
    const gpu = await getGpu();
    const heads = 3, cap = 21, dim = 128, bits = 4, round: Round = 'bf16';
    const side = quantKV(gpu, { heads, capacity: cap, headDim: dim, bits });
    const first = randn(11, heads * cap * dim).map((v) => roundTo(round, v));
    appendQuantized(Tensor.from(gpu, first, [heads, cap, dim], 'f32', 'first'), side, { offset: 0, round });
    const seq = 5, offset = 9;
    const src = randn(12, heads * seq * dim, 3).map((v) => roundTo(round, v));
    appendQuantized(Tensor.from(gpu, src, [heads, seq, dim], 'f32', 'src'), side, { offset, round });
    const deq = await dequantize(side.q, side.scales, side.biases, { bits, round }).read();
    const wantFirst = quantizeRef(first, heads * cap, dim, { bits, round });
    const wantNew = quantizeRef(src, heads * seq, dim, { bits, round });
    const a = dequantizeRef(wantFirst.q, wantFirst.scales, wantFirst.biases, heads * cap, dim, { bits, round });
    const b = dequantizeRef(wantNew.q, wantNew.scales, wantNew.biases, heads * seq, dim, { bits, round });
    const want = new Float32Array(a);
    for (let h = 0; h < heads; h++) want.set(b.subarray(h * seq * dim, (h + 1) * seq * dim), (h * cap + offset) * dim);
    expectBitExact(deq, want, 'cache after append');
    const words = await side.q.read();
    for (let h = 0; h < heads; h++) {
      for (let s = 0; s < seq; s++) {
        const wpr = (dim * bits) / 32;
        expectBitExact(words.subarray(((h * cap) + offset + s) * wpr, ((h * cap) + offset + s + 1) * wpr),
          wantNew.q.subarray((h * seq + s) * wpr, (h * seq + s + 1) * wpr), `head ${h} position ${offset + s} words`);
      }
    }
  });
});

describe('dequantizeKV over the positions in use', () => {
  it('decodes the first len positions of every head, or a reach, with the bits of the whole side', async () => {
    const gpu = await getGpu();
    const heads = 3, cap = 37, dim = 64, round: Round = 'f16';
    for (const bits of [4, 8]) {
      const side = quantKV(gpu, { heads, capacity: cap, headDim: dim, bits });
      const src = randn(21 + bits, heads * cap * dim, 2).map((v) => roundTo(round, v));
      appendQuantized(Tensor.from(gpu, src, [heads, cap, dim], 'f32', 'src'), side, { offset: 0, round });
      const whole = await dequantize(side.q, side.scales, side.biases, { bits, round }).readF32();
      for (const [len, reach, used] of [[1, undefined, 1], [17, undefined, 17], [17, 32, 32], [cap, cap, cap],
        [0, undefined, 0]] as const) {
        // Poison the pool's next buffer so rows past `used` cannot match by chance.
        Tensor.from(gpu, new Float32Array(heads * cap * dim).fill(NaN), [heads, cap, dim], 'f32', 'nan').dispose();
        const d = dequantizeKV(side, { len, round, reach });
        const got = await d.data.readF32();
        expect(d.data.shape).toEqual([heads, cap, dim]);
        for (let h = 0; h < heads; h++) {
          const at = (a: Float32Array) => a.subarray(h * cap * dim, (h * cap + used) * dim);
          expectBitExact(at(got), at(whole), `b${bits} len ${len} reach ${reach} head ${h}`);
        }
        d.data.dispose();
      }
      expect(() => dequantizeKV(side, { len: 17, reach: 16 })).toThrow(/\[dequantizeKV\] reach 16 must be/);
      expect(() => dequantizeKV(side, { len: cap + 1 })).toThrow(/\[dequantizeKV\] len 38 is not within/);
    }
  });
});

describe('argument checks', () => {
  it('names unsupported bits, ragged groups, wrong dtypes and an append past capacity', async () => {
    const gpu = await getGpu();
    const w = Tensor.from(gpu, new Float32Array(2 * 96), [2, 96], 'f32', 'w');
    expect(() => quantize(w, { bits: 4 })).toThrow(ShapeError);
    expect(() => quantize(w, { bits: 4 })).toThrow(/\[quantize\] 96 values per row/);
    const w2 = Tensor.from(gpu, new Float32Array(128), [1, 128], 'f32', 'w2');
    expect(() => quantize(w2, { bits: 7 })).toThrow(/bits 7/);
    expect(() => quantize(w2, { bits: 7 })).toThrow(InputError);
    expect(() => quantize(w2, { bits: 4, groupSize: 48 })).toThrow(/group size 48 is not one of 32, 64, 128/);
    expect(() => quantize(Tensor.from(gpu, new Int32Array(128), [1, 128], 'i32', 'wi'),
      { bits: 4 })).toThrow(DTypeError);
    const r = quantize(w2, { bits: 4 });
    expect(() => dequantize(r.q, r.scales, r.biases, { bits: 8 })).toThrow(/\[dequantize\]/);
    const side = quantKV(gpu, { heads: 1, capacity: 4, headDim: 64, bits: 8 });
    const src = Tensor.from(gpu, new Float32Array(3 * 64), [1, 3, 64], 'f32', 'src');
    expect(() => appendQuantized(src, side, { offset: 2 })).toThrow(/positions 2\.\.5 do not fit the cache capacity 4/);
  });
});
