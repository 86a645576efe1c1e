import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { expectWithin, ropeBound } from '../../helpers/attn-parity.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { expectSameStructure, recordDispatches } from '../../helpers/dispatches.ts';
import { runs } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { appendKV, ropeAppend, ropeK, ropeQ, takeV, writeFull,
  type KVSlot } from '../../../src/kernels/attention/kvcache.ts';
import { appendQuantized, quantKV } from '../../../src/kernels/attention/kvquant.ts';
import { sdpa } from '../../../src/kernels/attention/sdpa.ts';
import { headsRef, sdpaRef } from '../../../src/kernels/attention/sdpa.ref.ts';
import { rope } from '../../../src/kernels/rope/rope.ts';
import type { FullKV, KVSide } from '../../../src/kernels/attention/types.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';

const SENTINEL = 7.5;   // exactly representable in bf16: untouched cache positions must keep it

/** Positions [from, to) of a [H, cap, D] cache as a [H, to - from, D] array. */
function positions(cache: ArrayLike<number>, H: number, cap: number, D: number, from: number,
  to: number): Float32Array {
  const out = new Float32Array(H * (to - from) * D);
  for (let h = 0; h < H; h++) for (let p = from; p < to; p++) for (let d = 0; d < D; d++) out[(h * (to - from) +
    p - from) * D + d] = cache[(h * cap + p) * D + d];
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
    it(`writes roped k and raw v at a nonzero offset into a ${dtype} cache, leaving other positions alone`,
      async () => {
      const gpu = await getGpu();
      // D = 6: pairs (i, i+3) straddle packed words, which hold positions' own values only.
      for (const [H, D, cap, offset, S] of [[2, 64, 20, 11, 5], [3, 6, 9, 3, 5], [1, 128, 4, 3, 1]]) {
        const o = { heads: H, headDim: D, base: 1e4, offset };
        const g = randn(H + D + S, S * 4 * H * D, 2);
        const gt = Tensor.from(gpu, g, [S, 4 * H * D], 'f32', 'gqkv');
        const k: FullKV = { kind: 'full',
          data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'k') };
        const v: FullKV = { kind: 'full',
          data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'v') };
        appendKV(gt, k, v, o);
        const [kc, vc, kNew] = await Promise.all([k.data.read(), v.data.read(), ropeK(gt, o).read()]);
        const store = dtype === 'bf16' ? roundBf16 : Math.fround;
        // The cache holds ropeK's values (the same kernel function), rounded to the cache's dtype: exact.
        expect([...positions(kc, H, cap, D, offset, offset + S)]).toEqual([...kNew].map(store));
        expect([...positions(vc, H, cap, D, offset, offset + S)]).toEqual([...headsRef(g,
          { ...o, seq: S, block: 3, rope: false })].map(store));
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
      const dst: FullKV = { kind: 'full',
        data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], dtype, 'dst') };
      writeFull(Tensor.from(gpu, src, [H, S, D], 'f32', 'src'), dst, { offset });
      const c = await dst.data.read();
      expect([...positions(c, H, cap, D, offset, offset + S)]).toEqual([...src].map(dtype === 'bf16' ?
        roundBf16 : Math.fround));
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
        const kn = headsRef(g, { ...o, seq: S, block: 2, rope: true }), vn = headsRef(g,
          { ...o, seq: S, block: 3, rope: false });
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
    expect(() => appendKV(gt, cache('f32'), cache('f32'),
      o)).toThrow(/\[appendKV\] writing positions 6\.\.9 overflows/);
    expect(() => ropeQ(Tensor.empty(gpu, [3, 60], 'f32', 'g'), o)).toThrow(ShapeError);
    expect(() => appendKV(gt, cache('bf16'), cache('bf16'), { ...o, offset: 0, round: 'f16' })).toThrow(DTypeError);
    expect(() => writeFull(Tensor.empty(gpu, [2, 3, 8], 'f32', 's'), cache('f32'), { offset: 6 })).toThrow(ShapeError);
    expect(() => writeFull(Tensor.empty(gpu, [2, 3, 8], 'f32', 's'), cache('f32'),
      { offset: 1.5 })).toThrow(InputError);
  });
});

/** A cache side: f32 or packed bf16 storage, or quantized at `bits`. */
type SideKind = 'f32' | 'bf16' | { bits: number };
const kindName = (k: SideKind) => (typeof k === 'string' ? k : `q${k.bits}`);

/** A side of [H, cap, D] filled with seeded junk (sentinels for full sides, random words/scales for quantized ones). */
function makeSide(gpu: Gpu, kind: SideKind, H: number, cap: number, D: number, seed: number): KVSide {
  if (typeof kind === 'string') return { kind: 'full',
    data: Tensor.from(gpu, new Float32Array(H * cap * D).fill(SENTINEL), [H, cap, D], kind, 'side') };
  const side = quantKV(gpu, { heads: H, capacity: cap, headDim: D, bits: kind.bits });
  const words = Uint32Array.from(randn(seed, side.q.size), (x) => Math.floor((x + 1) * 2 ** 31));
  return {
    ...side,
    q: Tensor.from(gpu, words, side.q.shape, 'u32', 'q'),
    scales: Tensor.from(gpu, randn(seed + 1, side.scales.size), side.scales.shape, 'f32', 'scales'),
    biases: Tensor.from(gpu, randn(seed + 2, side.biases.size), side.biases.shape, 'f32', 'biases'),
  };
}

async function readSide(side: KVSide): Promise<ArrayLike<number>[]> {
  return side.kind === 'full' ? [await side.data.read()] : Promise.all([side.q.read(), side.scales.read(),
    side.biases.read()]);
}

/**
 * What the model did before ropeAppend: appendKV for two full sides, else ropeK / takeV into writeFull /
 * appendQuantized.
 */
function composedAppend(gqkv: Tensor, slot: KVSlot,
  o: { heads: number; headDim: number; base: number; offset: number; round: Round }): void {
  const { k, v } = slot;
  if (k.kind === 'full' && v.kind === 'full') { appendKV(gqkv, k, v, o); return; }
  for (const [side, src] of [[k, ropeK(gqkv, o)], [v, takeV(gqkv, o)]] as const) {
    if (side.kind === 'full') writeFull(src, side, { offset: o.offset, round: o.round });
    else appendQuantized(src, side, { offset: o.offset, round: o.round });
    src.dispose();
  }
}

describe('ropeAppend (RoPE and the cache append in one dispatch) vs the composed ops', () => {
  const SIDES: Array<[SideKind, SideKind]> = [
    ['f32', 'f32'], ['bf16', 'bf16'], ['f32', 'bf16'], [{ bits: 8 }, { bits: 4 }], [{ bits: 3 }, { bits: 6 }],
    [{ bits: 4 }, 'f32'], ['f32', { bits: 8 }], ['bf16', { bits: 2 }],
  ];
  for (const [si, [kk, vk]] of SIDES.entries()) {
    const anyQuant = typeof kk !== 'string' || typeof vk !== 'string';
    const anyBf16 = kk === 'bf16' || vk === 'bf16';
    it(`K ${kindName(kk)} / V ${kindName(vk)}: q and both sides bit for bit, one dispatch, every rounding`,
      async () => {
      const gpu = await getGpu();
      // [H, D, cap, offset, S]: odd head counts, S = 1 and S > 1, zero and nonzero offsets; D = 6 (pairs straddling
      // half-head words) where no side is quantized (groups of 64 need D % 64 == 0).
      const shapes = [[3, 64, 12, 5, 1], [3, 128, 20, 9, 4], [1, 64, 3, 0, 3], ...(anyQuant ? [] : [[3, 6, 9, 3, 5]])];
      const rounds: Round[] = anyBf16 ? ['none', 'bf16'] : ['none', 'bf16', 'f16'];
      for (const [i, [H, D, cap, offset, S]] of shapes.entries()) {
        // The roundings by turns over the shapes, each at least once (HRM_EXHAUSTIVE=1: every rounding a shape).
        for (const round of rounds.filter((_, r) => runs((si + i) % rounds.length === r))) {
          const what = `H=${H} D=${D} S=${S} offset ${offset} round ${round}`;
          const o = { heads: H, headDim: D, base: 1e4, offset, round };
          const gt = Tensor.from(gpu, randn(H * D + S + offset, S * 4 * H * D, 3), [S, 4 * H * D], 'f32', 'gqkv');
          const mk = (seed: number): KVSlot => ({ k: makeSide(gpu, kk, H, cap, D, seed),
            v: makeSide(gpu, vk, H, cap, D, seed + 7) });
          const fused = mk(40), composed = mk(40);
          const before = gpu.dispatchCount;
          const q = ropeAppend(gt, fused, o);
          expect(gpu.dispatchCount - before, `${what}: dispatches`).toBe(1);
          composedAppend(gt, composed, o);
          expectBitExact(await q.read(), await ropeQ(gt, o).read(), `${what}: q vs ropeQ`);
          for (const name of ['k', 'v'] as const) {
            const [got, want] = [await readSide(fused[name]), await readSide(composed[name])];
            for (let i = 0; i < got.length; i++) expectBitExact(got[i], want[i], `${what}: ${name} side, buffer ${i}`);
          }
        }
      }
    });
  }

  it('only the offset uniform differs between decode steps', async () => {
    const gpu = await getGpu();
    const H = 3, D = 64, cap = 16;
    const slot: KVSlot = { k: makeSide(gpu, { bits: 8 }, H, cap, D, 1), v: makeSide(gpu, 'f32', H, cap, D, 2) };
    const gt = Tensor.from(gpu, randn(3, 4 * H * D), [1, 4 * H * D], 'f32', 'gqkv');
    const at = (offset: number) => recordDispatches(() => ropeAppend(gt, slot,
      { heads: H, headDim: D, base: 1e4, offset, round: 'bf16' }));
    expectSameStructure(at(0), at(cap - 1), ['offset'], 'ropeAppend at offsets 0 and 15');
  });

  it('names the side and shapes of bad input', async () => {
    const gpu = await getGpu();
    const o = { heads: 2, headDim: 64, base: 1e4, offset: 6 };
    const gt = Tensor.empty(gpu, [3, 512], 'f32', 'gqkv');
    const full = (dtype: 'f32' | 'bf16' = 'f32'): FullKV => ({ kind: 'full',
      data: Tensor.empty(gpu, [2, 16, 64], dtype, 'c') });
    const quant = (capacity: number, heads = 2) => quantKV(gpu, { heads, capacity, headDim: 64, bits: 4 });
    expect(() => ropeAppend(gt, { k: full(), v: quant(8) },
      o)).toThrow(/\[ropeAppend\] writing positions 6\.\.9 overflows quantized v cache 'quantKV\.q' \[2, 8, 8\]/);
    expect(() => ropeAppend(gt, { k: full(), v: full() },
      { ...o, offset: 14 })).toThrow(/\[ropeAppend\] writing positions 14\.\.17 overflows k cache/);
    expect(() => ropeAppend(gt, { k: quant(16, 3), v: full() }, o)).toThrow(ShapeError);
    expect(() => ropeAppend(gt, { k: full('bf16'), v: quant(16) }, { ...o, round: 'f16' })).toThrow(DTypeError);
    expect(() => ropeAppend(Tensor.empty(gpu, [3, 500], 'f32', 'g'), { k: full(), v: full() },
      o)).toThrow(/gqkv 'g' is \[3, 500\]/);
    expect(() => ropeAppend(Tensor.empty(gpu, [3, 512], 'u32', 'g'), { k: full(), v: full() }, o)).toThrow(DTypeError);
  });
});
