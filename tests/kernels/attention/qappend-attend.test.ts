// qsdpaOneAppend (decode's append into a quantized cache fused into qsdpa_one's scores) against what it replaces,
// ropeAppend then qsdpa (path 'one', gated by gqkv) as CacheSlot.appendAttend composes them: the attention output
// and every word, scale and bias of both cache sides bit for bit, at K/V bits 4/4, 8/8 and 4/8, f32 and bf16, head
// dims 64, 128 and 256, positions on both sides of a score chunk's edge and at the cache's last slot, and groups
// whose values are all negative; its dispatches (one fewer) do not change with the position; shapes it cannot take
// give null, bad caches a clear error.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn, rng } from '../../../testkit/helpers/seeded.ts';
import { expectSameStructure, recordDispatches } from '../../helpers/dispatches.ts';
import { sweep } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { ShapeError } from '../../../src/errors.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { roundTo } from '../../../src/kernels/quant/quant.ref.ts';
import { ropeAppend } from '../../../src/kernels/attention/kvcache.ts';
import { qsdpa } from '../../../src/kernels/attention/qsdpa.ts';
import { qsdpaOneAppend } from '../../../src/kernels/attention/qsdpa-one.ts';
import type { QuantKV } from '../../../src/kernels/attention/types.ts';

interface Shape { heads: number; dim: number; cap: number; kBits: number; vBits: number; round: Round }

/** A quantized side holding earlier positions (random levels, scales and biases in the dtype), `seed` fixing it. */
function side(gpu: Gpu, s: Shape, bits: number, seed: number, heads = s.heads, cap = s.cap): QuantKV {
  const r = rng(seed);
  const rows = heads * cap, groups = s.dim / 64;
  const words = Uint32Array.from({ length: (rows * s.dim * bits) / 32 }, () => Math.floor(r() * 2 ** 32));
  const scales = Float32Array.from({ length: rows * groups }, () => roundTo(s.round, 0.02 + 0.08 * r()));
  const biases = Float32Array.from({ length: rows * groups }, () => roundTo(s.round, -1.5 * r()));
  return {
    kind: 'quant', bits,
    q: Tensor.from(gpu, words, [heads, cap, (s.dim * bits) / 32], 'u32', `kv${bits}.q`),
    scales: Tensor.from(gpu, scales, [heads, cap, groups], 'f32', `kv${bits}.scales`),
    biases: Tensor.from(gpu, biases, [heads, cap, groups], 'f32', `kv${bits}.biases`),
  };
}

const tensors = (kv: QuantKV) => [kv.q, kv.scales, kv.biases];
const bits = async (t: Tensor) => Array.from(new Uint32Array((await t.read()).buffer));

/** gqkv [1, 4*H*D] (gate | q | k | v) in the dtype; `negative` makes the k and v blocks all negative. */
function gqkvOf(gpu: Gpu, s: Shape, seed: number, negative = false): Tensor {
  const w = s.heads * s.dim;
  const g = randn(seed, 4 * w, 2).map((x, i) => roundTo(s.round, negative && i >= 2 * w ? -Math.abs(x) - 0.25 : x));
  return Tensor.from(gpu, g, [1, 4 * w], 'f32', 'gqkv');
}

const opts = (s: Shape,
  offset: number) => ({ heads: s.heads, headDim: s.dim, base: 1e4, offset, round: s.round,
  scale: 1 / Math.sqrt(s.dim) });

/** The composed step (ropeAppend, then qsdpa one gated by gqkv) and the fused one, on two copies of one cache. */
async function compare(gpu: Gpu, s: Shape, offset: number, seed: number, negative = false): Promise<void> {
  const what = `K ${s.kBits} / V ${s.vBits}, ${s.round}, D ${s.dim}, ${s.heads} heads, ` +
    `position ${offset}${negative ? ', negative groups' : ''}`;
  const gqkv = gqkvOf(gpu, s, seed, negative);
  const o = opts(s, offset);
  const ref = { k: side(gpu, s, s.kBits, seed + 1), v: side(gpu, s, s.vBits, seed + 2) };
  const fused = { k: side(gpu, s, s.kBits, seed + 1), v: side(gpu, s, s.vBits, seed + 2) };
  const q = ropeAppend(gqkv, ref, o);
  const want = qsdpa(q, ref.k, ref.v,
    { kvLen: offset + 1, offset, mask: { kind: 'causal' }, scale: o.scale, round: s.round, gate: gqkv, path: 'one' });
  const got = qsdpaOneAppend(gqkv, fused.k, fused.v, o);
  expect(got, what).not.toBeNull();
  expect(await bits(got!), `${what}: attention`).toEqual(await bits(want));
  for (const n of ['k', 'v'] as const) {
    for (const [part, a, b] of [['q', fused[n].q, ref[n].q], ['scales', fused[n].scales, ref[n].scales],
      ['biases', fused[n].biases, ref[n].biases]] as const) {
      expect(await bits(a), `${what}: ${n} ${part}`).toEqual(await bits(b));
    }
  }
  for (const t of [gqkv, q, want, got!, ...tensors(ref.k), ...tensors(ref.v), ...tensors(fused.k),
    ...tensors(fused.v)]) t.dispose();
}

describe('qsdpaOneAppend vs ropeAppend + qsdpa one', { timeout: 300_000 }, async () => {
  const gpu = await getGpu();
  // Keys per score chunk: 32 * 256 / D. Capacity two chunks and a few keys, so the last slot is a third chunk's.
  const geometry: Array<[number, number]> = [[64, 4], [128, 3], [256, 2]];
  const settings = [[4, 4], [8, 8], [4, 8]].flatMap(([kBits, vBits]) =>
    (['none', 'bf16'] as const).map((round) => ({ kBits, vBits, round })));
  for (const [g, [dim, heads]] of geometry.entries()) {
    const ck = (32 * 256) / dim, cap = 2 * ck + 6;
    // Two of the six bit pair and rounding settings a head dim, each setting once (HRM_EXHAUSTIVE=1: all six): a
    // setting and a head dim are pipelines of their own.
    const mine = sweep(settings, (_, i) => i % 3 === g);
    it(`head dim ${dim}, ${heads} heads: first key, a chunk's last, the next's first, the last slot`, async () => {
      for (const { kBits, vBits, round } of mine) {
        const s: Shape = { heads, dim, cap, kBits, vBits, round };
        for (const offset of [0, ck - 1, ck, cap - 1]) await compare(gpu, s, offset,
          dim + 10 * kBits + vBits + offset + (round === 'bf16' ? 7 : 0));
      }
    });
  }

  it('groups whose values are all negative (the largest as Metal finds it is 0)', async () => {
    for (const round of ['none', 'bf16'] as const) {
      const s: Shape = { heads: 2, dim: 128, cap: 80, kBits: 4, vBits: 8, round };
      // At position 0 RoPE is the identity, so the stored keys are negative too; later only the values are.
      for (const offset of [0, 64]) await compare(gpu, s, offset, 500 + offset, true);
    }
  });

  it('the same bits over the keys\' reach as over the whole capacity, on both sides of a reach boundary', async () => {
    for (const s of [{ heads: 2, dim: 128, cap: 200, kBits: 8, vBits: 4, round: 'bf16' },
      { heads: 2, dim: 128, cap: 200, kBits: 4, vBits: 4, round: 'none' }] as const) {
      for (const offset of [62, 63, 64, 127, 128]) {
        const what = `K ${s.kBits} / V ${s.vBits}, ${s.round}, position ${offset}`;
        const gqkv = gqkvOf(gpu, s, 40 + offset);
        const k = side(gpu, s, s.kBits, 41), v = side(gpu, s, s.vBits, 42);
        // Appending twice writes the same key and value: both calls see one cache.
        const wide = qsdpaOneAppend(gqkv, k, v, { ...opts(s, offset), reach: s.cap })!;
        const near = qsdpaOneAppend(gqkv, k, v, opts(s, offset))!;
        expect(await bits(near), `${what}: appended`).toEqual(await bits(wide));
        const q = ropeAppend(gqkv, { k, v }, opts(s, offset));
        const o = { kvLen: offset + 1, offset, mask: { kind: 'causal' }, scale: 0.1, round: s.round, gate: gqkv,
          path: 'one' } as const;
        const [a, b] = [qsdpa(q, k, v, o), qsdpa(q, k, v, { ...o, reach: s.cap })];
        expect(await bits(a), `${what}: qsdpa one`).toEqual(await bits(b));
        for (const t of [gqkv, wide, near, q, a, b, ...tensors(k), ...tensors(v)]) t.dispose();
      }
    }
  });

  it('two dispatches where the composed step has three, the same at every position', () => {
    const s: Shape = { heads: 3, dim: 128, cap: 134, kBits: 8, vBits: 4, round: 'bf16' };
    const gqkv = gqkvOf(gpu, s, 9);
    const k = side(gpu, s, s.kBits, 1), v = side(gpu, s, s.vBits, 2);
    const at = (offset: number,
      reach?: number) => recordDispatches(() => qsdpaOneAppend(gqkv, k, v, { ...opts(s, offset), reach }));
    expect([0, 64, 128].map((offset) => at(offset)[0].workgroups[0]),
      "chunks over the keys' reach: 64, 128 keys, the capacity").toEqual([1, 2, 3]);
    const first = at(0, s.cap);
    expect(first.map((d) => d.kernel.split('#')[1])).toEqual(['qone_scores_append', 'qone_out']);
    expect(first.map((d) => d.workgroups),
      '134 keys in chunks of 64, 3 heads, for the scores and the values').toEqual([[3, 3, 1], [3, 3, 1]]);
    expectSameStructure(first, at(70, s.cap), ['kv_len'], 'positions 0 and 70');
    expectSameStructure(first, at(s.cap - 1, s.cap), ['kv_len'], 'positions 0 and the last slot');
    const composed = recordDispatches(() => {
      const q = ropeAppend(gqkv, { k, v }, opts(s, 5));
      qsdpa(q, k, v, { kvLen: 6, offset: 5, mask: { kind: 'causal' }, scale: 1, round: s.round, gate: gqkv });
    });
    expect(composed.map((d) => d.kernel.split('#')[1])).toEqual(['rope_append', 'qone_scores', 'qone_out']);
  });

  it('null for shapes qsdpa_one cannot take; a cache that cannot take the step is an error naming it', () => {
    const s: Shape = { heads: 2, dim: 192, cap: 8, kBits: 4, vBits: 4, round: 'none' };
    expect(qsdpaOneAppend(gqkvOf(gpu, s, 1), side(gpu, s, 4, 1), side(gpu, s, 4, 2), opts(s, 3)),
      'head dim 192').toBeNull();
    const t: Shape = { ...s, dim: 64 };
    expect(qsdpaOneAppend(gqkvOf(gpu, t, 1), side(gpu, t, 4, 1), side(gpu, t, 8, 2, 2, 9), opts(t, 3)),
      'K and V capacities differ').toBeNull();
    const two = Tensor.from(gpu, randn(3, 2 * 4 * 2 * 64), [2, 4 * 2 * 64], 'f32', 'gqkv2');
    expect(qsdpaOneAppend(two, side(gpu, t, 4, 1), side(gpu, t, 4, 2), opts(t, 3)), 'two rows').toBeNull();
    expect(() => qsdpaOneAppend(gqkvOf(gpu, t, 1), side(gpu, t, 4, 1), side(gpu, t, 4, 2), opts(t, 8)))
      .toThrow(/\[qsdpaOneAppend\] writing positions 8\.\.9 overflows quantized k cache 'kv4\.q' \[2, 8, 8\]/);
    expect(() => qsdpaOneAppend(gqkvOf(gpu, t, 1), side(gpu, t, 4, 1, 1), side(gpu, t, 4, 2, 1),
      opts(t, 3))).toThrow(ShapeError);
    expect(() => qsdpaOneAppend(gqkvOf(gpu, t, 1), side(gpu, t, 4, 1), side(gpu, t, 4, 2),
      { ...opts(t, 3), scale: NaN })).toThrow(/scale NaN must be finite/);
  });
});
