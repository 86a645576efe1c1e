// appendAttendOne (decode's cache append fused into sdpa_one's split) against what it replaces, ropeAppend then
// sdpa(path 'one', gated by gqkv): the attention output and both cache sides bit for bit, f32 and bf16 caches, at
// positions on both sides of a 32-key chunk boundary, of a reach boundary (64 and 128 keys: kernels/attention/
// reach.ts) and at the last slot, the merge folded into the split and separate, and over the whole capacity (what
// the dispatch covered before reaches) the same bits; and a layout it cannot take gives null.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { ShapeError } from '../../../src/errors.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { ropeAppend } from '../../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../../src/kernels/attention/sdpa.ts';
import { appendAttendOne } from '../../../src/kernels/attention/sdpa-one.ts';
import type { FullKV } from '../../../src/kernels/attention/types.ts';

describe('appendAttendOne vs ropeAppend + sdpa one', async () => {
  const gpu = await getGpu();
  const H = 3;
  // 3 chunks of 32 keys, and 41 (the merge folded over many); positions around chunk edges and the last slot. Head
  // dim 32 in bf16 is 4 units a row: more thread groups than keys in the values' sum, clamped to the chunk.
  const positions = { 70: [0, 31, 32, 45, 63, 64, 69], 1300: [0, 30, 31, 32, 63, 64, 127, 128, 1299] };
  for (const [dtype, round, cap, D] of [['bf16', 'bf16', 70, 64], ['f32', 'none', 70, 64], ['f32', 'bf16', 70, 64],
    ['bf16', 'bf16', 1300, 64], ['f32', 'none', 1300, 64], ['bf16', 'bf16', 70, 32]] as const) {
    it(`${dtype} cache of ${cap}, head dim ${D}, round ${round}, both merge forms`, async () => {
      const past = randn(11, H * cap * D, 1).map(roundBf16);
      const side = (seed: number): FullKV => ({ kind: 'full',
        data: Tensor.from(gpu, past.map((x, i) => x * (1 + seed) + (i % 7) / 8), [H, cap, D], dtype, 'kv') });
      for (const offset of positions[cap]) {
        const g = randn(100 + offset, 4 * H * D, 2).map((x) => (round === 'bf16' ? roundBf16(x) : x));
        const gqkv = Tensor.from(gpu, g, [1, 4 * H * D], 'f32', 'gqkv');
        const o = { heads: H, headDim: D, base: 1e4, offset, round, scale: 1 / Math.sqrt(D) };
        const ref = { k: side(0), v: side(1) }, fused = { k: side(0), v: side(1) };
        const q = ropeAppend(gqkv, ref, o);
        const want = sdpa(q, ref.k, ref.v,
          { kvLen: offset + 1, offset, mask: { kind: 'causal' }, scale: o.scale, round, gate: gqkv, path: 'one' });
        const got = appendAttendOne(gqkv, fused.k, fused.v, o);
        expect(got).not.toBeNull();
        expect(Array.from(await got!.read()), `attention at ${offset}`).toEqual(Array.from(await want.read()));
        // Each merge form, over the keys' reach and over the whole capacity, on the same sides (the append writes
        // the same key and value again): the same bits.
        for (const [merge, reach] of [['separate', undefined], ['fold', cap], ['separate', cap]] as const) {
          const other = appendAttendOne(gqkv, fused.k, fused.v, { ...o, merge, reach });
          expect(Array.from(await other!.read()),
            `${merge} merge, reach ${reach ?? 'of the keys'}, at ${offset}`).toEqual(Array.from(await got!.read()));
          other!.dispose();
        }
        for (const s of ['k', 'v'] as const) expect(Array.from(await fused[s].data.read()),
          `${s} cache at ${offset}`).toEqual(Array.from(await ref[s].data.read()));
        for (const t of [gqkv, q, want, got!, ref.k.data, ref.v.data, fused.k.data, fused.v.data]) t.dispose();
      }
    });
  }

  it('null for a head dim sdpa_one cannot take; a full cache is an error naming it', () => {
    const gqkv = Tensor.from(gpu, new Float32Array(4 * 2 * 6), [1, 4 * 2 * 6], 'f32', 'gqkv');
    const side = (): FullKV => ({ kind: 'full',
      data: Tensor.from(gpu, new Float32Array(2 * 4 * 6), [2, 4, 6], 'f32', 'kv6') });
    expect(appendAttendOne(gqkv, side(), side(), { heads: 2, headDim: 6, base: 1e4, offset: 1, scale: 1 })).toBeNull();
    // 512 dims: 64 bf16 units a row divide the workgroup, but a thread would hold 8 of them and more (sdpa's 256 cap).
    const wide = (): FullKV => ({ kind: 'full', data: Tensor.empty(gpu, [1, 4, 512], 'bf16', 'kv512') });
    expect(appendAttendOne(Tensor.empty(gpu, [1, 4 * 512], 'f32', 'gqkv512'), wide(), wide(),
      { heads: 1, headDim: 512, base: 1e4, offset: 1, scale: 1 })).toBeNull();
    expect(() => appendAttendOne(gqkv, side(), side(),
      { heads: 2, headDim: 6, base: 1e4, offset: 4, scale: 1 })).toThrow(ShapeError);
    expect(() => appendAttendOne(gqkv, side(), side(),
      { heads: 2, headDim: 6, base: 1e4, offset: 4, scale: 1 })).toThrow(/overflows k cache 'kv6'/);
  });
});
