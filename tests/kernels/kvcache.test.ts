import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/seeded.ts';
import { expectClose } from '../helpers/close.ts';
import { expectWithin, ropeBound } from '../helpers/attn-parity.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../src/tensor/errors.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { appendKV, ropeK, ropeQ, takeV, writeFull } from '../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../src/kernels/attention/sdpa.ts';
import { headsRef, sdpaRef } from '../../src/kernels/attention/sdpa.ref.ts';
import { rope } from '../../src/kernels/rope/rope.ts';
import type { FullKV } from '../../src/kernels/attention/types.ts';

const SENTINEL = 7.5;   // exactly representable in bf16: untouched cache positions must keep it

/** Positions [from, to) of a [H, cap, D] cache as a [H, to - from, D] array. */
function positions(cache: ArrayLike<number>, H: number, cap: number, D: number, from: number, to: number): Float32Array {
  const out = new Float32Array(H * (to - from) * D);
  for (let h = 0; h < H; h++) for (let p = from; p < to; p++) for (let d = 0; d < D; d++) out[(h * (to - from) + p - from) * D + d] = cache[(h * cap + p) * D + d];
  return out;
}

describe('ropeQ / ropeK / takeV', () => {
  for (const [H, S, D, offset] of [[2, 5, 64, 0], [3, 33, 6, 4000], [1, 1, 128, 1234]]) {
    it(`H=${H} S=${S} D=${D} at offset ${offset} match the f64 reference`, async () => {
      const gpu = await getGpu();
      const o = { heads: H, headDim: D, base: 1e4, offset };
      const g = randn(H * 100 + S, S * 4 * H * D, 2);
      const gt = Tensor.from(gpu, g, [S, 4 * H * D], 'f32', 'gqkv');
      const [q, k, v] = await Promise.all([ropeQ(gt, o).read(), ropeK(gt, o).read(), takeV(gt, o).read()]);
      const ref = (block: number, rope: boolean) => headsRef(g, { ...o, seq: S, block, rope });
      const raw = (block: number) => headsRef(g, { ...o, seq: S, block, rope: false });
      // Same bound as the rope tests: 3 ulp32(theta) of angle error times |x| plus 4e-7 relative.
      expectWithin(q, ref(1, true), ropeBound(raw(1), S, D, o, 3), 'ropeQ');
      expectWithin(k, ref(2, true), ropeBound(raw(2), S, D, o, 3), 'ropeK');
      expect([...v]).toEqual([...ref(3, false)].map(Math.fround));   // a copy: exact
    });
  }

  it('ropeQ is rope() of the gathered q block (fused vs composed) and rounds once in bf16 mode', async () => {
    const gpu = await getGpu();
    const H = 2, S = 9, D = 64, offset = 300;
    const o = { heads: H, headDim: D, base: 5e5, offset };
    const g = randn(3, S * 4 * H * D, 1);
    const gt = Tensor.from(gpu, g, [S, 4 * H * D], 'f32', 'gqkv');
    const qRaw = Float32Array.from(headsRef(g, { ...o, seq: S, block: 1, rope: false }));
    const composed = await rope(Tensor.from(gpu, qRaw, [1, H, S, D], 'f32', 'q'), o).read();
    const fused = await ropeQ(gt, o).read();
    // The two shaders share the angle and sin/cos code; only instruction selection (FMA) may differ: 2 f32 ulp.
    expectClose(fused, composed, 0, 2 ** -22, 'ropeQ vs rope');
    const fusedBf16 = await ropeQ(gt, { ...o, round: 'bf16' }).read();
    expect([...fusedBf16]).toEqual([...fused].map(roundBf16));
  });
});

describe('appendKV / writeFull', () => {
  for (const dtype of ['f32', 'bf16'] as const) {
    it(`writes roped k and raw v at a nonzero offset into a ${dtype} cache, leaving other positions alone`, async () => {
      const gpu = await getGpu();
      // D = 6: pairs (i, i+3) straddle packed words, which hold positions' own values only.
      for (const [H, D, cap, offset, S] of [[2, 64, 20, 11, 5], [3, 6, 9, 3, 5], [1, 128, 4, 3, 1]]) {
        const o = { heads: H, headDim: D, base: 1e4, offset };
        const g = randn(H + D + S, S * 4 * H * D, 2);
        const gt = Tensor.from(gpu, g, [S, 4 * H * D], 'f32', 'gqkv');
        const k: FullKV = { kind: 'full', data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'k') };
        const v: FullKV = { kind: 'full', data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'v') };
        appendKV(gt, k, v, o);
        const [kc, vc, kNew] = await Promise.all([k.data.read(), v.data.read(), ropeK(gt, o).read()]);
        const store = dtype === 'bf16' ? roundBf16 : Math.fround;
        // The cache holds ropeK's values (the same kernel function), rounded to the cache's dtype: exact.
        expect([...positions(kc, H, cap, D, offset, offset + S)]).toEqual([...kNew].map(store));
        expect([...positions(vc, H, cap, D, offset, offset + S)]).toEqual([...headsRef(g, { ...o, seq: S, block: 3, rope: false })].map(store));
        for (const c of [kc, vc]) {
          expect([...positions(c, H, cap, D, 0, offset)].every((x) => x === SENTINEL)).toBe(true);
          expect([...positions(c, H, cap, D, offset + S, cap)].every((x) => x === SENTINEL)).toBe(true);
        }
      }
    });
  }

  it('an f32 cache in bf16 mode stores bf16 values', async () => {
    const gpu = await getGpu();
    const H = 2, D = 8, S = 3;
    const o = { heads: H, headDim: D, base: 1e4, offset: 0, round: 'bf16' as const };
    const gt = Tensor.from(gpu, randn(5, S * 4 * H * D), [S, 4 * H * D], 'f32', 'gqkv');
    const k: FullKV = { kind: 'full', data: Tensor.empty(gpu, [H, S, D], 'f32', 'k') };
    const v: FullKV = { kind: 'full', data: Tensor.empty(gpu, [H, S, D], 'f32', 'v') };
    appendKV(gt, k, v, o);
    const kc = await k.data.read();
    expect([...kc]).toEqual([...await ropeK(gt, { ...o, round: 'none' }).read()].map(roundBf16));
  });

  it('writeFull copies [H, S, D] into a cache at an offset (f32 and packed bf16)', async () => {
    const gpu = await getGpu();
    const H = 2, S = 3, D = 10, cap = 8, offset = 4;
    const src = randn(8, H * S * D);
    for (const dtype of ['f32', 'bf16'] as const) {
      const dst: FullKV = { kind: 'full', data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'dst') };
      writeFull(Tensor.from(gpu, src, [H, S, D], 'f32', 'src'), dst, { offset });
      const c = await dst.data.read();
      expect([...positions(c, H, cap, D, offset, offset + S)]).toEqual([...src].map(dtype === 'bf16' ? roundBf16 : Math.fround));
      expect([...positions(c, H, cap, D, 0, offset)].every((x) => x === SENTINEL)).toBe(true);
      expect([...positions(c, H, cap, D, offset + S, cap)].every((x) => x === SENTINEL)).toBe(true);
    }
  });

  it('prefill then decode steps through appendKV and sdpa match attention over the reference cache', async () => {
    const gpu = await getGpu();
    const H = 2, D = 64, cap = 24, base = 1e4;
    for (const dtype of ['f32', 'bf16'] as const) {
      const k: FullKV = { kind: 'full', data: Tensor.empty(gpu, [H, cap, D], dtype, 'k') };
      const v: FullKV = { kind: 'full', data: Tensor.empty(gpu, [H, cap, D], dtype, 'v') };
      const kRef = new Float64Array(H * cap * D), vRef = new Float64Array(H * cap * D);
      let offset = 0;
      for (const [step, S] of [17, 1, 1, 3].entries()) {
        const o = { heads: H, headDim: D, base, offset };
        const g = randn(900 + step, S * 4 * H * D, 2);
        const gt = Tensor.from(gpu, g, [S, 4 * H * D], 'f32', 'gqkv');
        appendKV(gt, k, v, o);
        const store = dtype === 'bf16' ? roundBf16 : (x: number) => x;
        const kn = headsRef(g, { ...o, seq: S, block: 2, rope: true }), vn = headsRef(g, { ...o, seq: S, block: 3, rope: false });
        for (let h = 0; h < H; h++) for (let s = 0; s < S; s++) for (let d = 0; d < D; d++) {
          kRef[(h * cap + offset + s) * D + d] = store(kn[(h * S + s) * D + d]);
          vRef[(h * cap + offset + s) * D + d] = store(vn[(h * S + s) * D + d]);
        }
        const q = ropeQ(gt, o);
        const kvLen = offset + S;
        const got = await sdpa(q, k, v, { kvLen, offset, mask: { kind: 'causal' }, scale: 1 / Math.sqrt(D) }).read();
        const ref = sdpaRef(headsRef(g, { ...o, seq: S, block: 1, rope: true }), kRef, vRef,
          { heads: H, seq: S, dim: D, cap, kvLen, offset, mask: { kind: 'causal' }, scale: 1 / Math.sqrt(D) });
        // RoPE'd q/k carry ~1e-6 relative error (see the rope bounds); scores of |q||k| ~ 30 move by ~3e-5, and a
        // bf16 key that rounds the other way moves a score by up to 2^-8 |q_d|: 2e-3 (bf16) / 1e-4 (f32) absolute.
        expectClose(got, ref, dtype === 'bf16' ? 2e-3 : 1e-4, 0, `${dtype} step ${step} (S=${S}, offset ${offset})`);
        offset += S;
      }
    }
  });

  it('rejects an overflowing write, a wrong gqkv width and f16 rounding into a bf16 cache', async () => {
    const gpu = await getGpu();
    const o = { heads: 2, headDim: 8, base: 1e4, offset: 6 };
    const gt = Tensor.empty(gpu, [3, 64], 'f32', 'gqkv');
    const cache = (dtype: 'f32' | 'bf16'): FullKV => ({ kind: 'full', data: Tensor.empty(gpu, [2, 8, 8], dtype, 'c') });
    expect(() => appendKV(gt, cache('f32'), cache('f32'), o)).toThrow(/\[appendKV\] writing positions 6\.\.9 overflows/);
    expect(() => ropeQ(Tensor.empty(gpu, [3, 60], 'f32', 'g'), o)).toThrow(ShapeError);
    expect(() => appendKV(gt, cache('bf16'), cache('bf16'), { ...o, offset: 0, round: 'f16' })).toThrow(DTypeError);
    expect(() => writeFull(Tensor.empty(gpu, [2, 3, 8], 'f32', 's'), cache('f32'), { offset: 6 })).toThrow(ShapeError);
  });
});
