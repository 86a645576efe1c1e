// Decode attention over TurboQuant sides covers the keys' reach (kernels/plan/reach.ts), not the capacity, and the
// general path decodes only the positions in use (or a captured step's reach): turbo_one's output and the decoded
// sides' bits (and sdpa over them) the same over the keys' reach, the least reach (kvLen) and the whole capacity
// (what the dispatches covered before), on both sides of the 64- and 128-key reach boundaries and at the last slot of
// a capacity that is not a power of two, K/V turbo4/turbo4, turbo3/turbo3 and turbo4/turbo3; turbo_one within
// float order of the general path there; the workgroups follow the reach; a reach outside [kvLen, capacity] throws.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectSameStructure, recordDispatches } from '../../helpers/dispatches.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { ShapeError } from '../../../src/errors.ts';
import type { TurboKV } from '../../../src/kernels/attention/types.ts';
import { ropeQ } from '../../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../../src/kernels/attention/sdpa.ts';
import { dequantizeTurboPair, turboKV, turboRopeAppend } from '../../../src/kernels/turbo/turbo.ts';
import { turboAppendAttend } from '../../../src/kernels/turbo/turbo-one.ts';
import type { TurboType } from '../../../src/kernels/turbo/format.ts';

const H = 2, D = 64, CAP = 200, W = 4 * H * D, BASE = 10000, SCALE = 0.125;
const HEADS = { heads: H, headDim: D, base: BASE, round: 'none' as const };
/** kvLen 63/64/65 and 127/128/129 (offsets one less), and the last slot of the capacity. */
const OFFSETS = [62, 63, 64, 126, 127, 128, CAP - 1];

const bits = async (t: Tensor) => Array.from(new Uint32Array((await t.read()).buffer));

/** Sides of CAP positions holding every row of x coded (gate logits 30: a gate of 1). */
function filled(gpu: Gpu, kt: TurboType, vt: TurboType, x: Float32Array): [TurboKV, TurboKV] {
  const o = { heads: H, capacity: CAP, headDim: D };
  const k = turboKV(gpu, { ...o, type: kt, label: `${kt}.k` }), v = turboKV(gpu, { ...o, type: vt, label: `${vt}.v` });
  const all = Tensor.from(gpu, x, [CAP, W], 'f32', 'rows');
  turboRopeAppend(all, k, v, { ...HEADS, offset: 0 });
  all.dispose();
  return [k, v];
}

function rows(seed: number): Float32Array {
  const x = randn(seed, CAP * W, 1);
  for (let s = 0; s < CAP; s++) x.fill(30, s * W, s * W + H * D);
  return x;
}

/** The first `len` positions of each head of a decoded side [H, CAP, D] (the rest is never written). */
async function used(t: Tensor, len: number): Promise<number[]> {
  const a = await bits(t);
  return [0, 1].flatMap((h) => a.slice(h * CAP * D, (h * CAP + len) * D));
}

const PAIRS: Array<[TurboType, TurboType]> = [['turbo4', 'turbo4'], ['turbo3', 'turbo3'], ['turbo4', 'turbo3']];

describe('TurboQuant decode over a reach', { timeout: 600_000 }, () => { // minutes when cold on a loaded CPU driver
  for (const [i, [kt, vt]] of PAIRS.entries()) {
    it(`K ${kt} V ${vt}: the same bits over the keys' reach, kvLen and the capacity, fused and general`, async () => {
      const gpu = await getGpu();
      const x = rows(20 + i);
      const [k, v] = filled(gpu, kt, vt, x);
      for (const offset of OFFSETS) {
        const what = `${kt}/${vt}, kvLen ${offset + 1}`;
        const row = Tensor.from(gpu, x.subarray(offset * W, (offset + 1) * W), [1, W], 'f32', 'row');
        // Each call codes the row into position `offset` again, the bits the fill wrote: all see one cache.
        const fused = [undefined, offset + 1, CAP].map((reach) =>
          turboAppendAttend(row, k, v, { ...HEADS, offset, scale: SCALE, reach })!);
        const [near, least, wide] = [await bits(fused[0]), await bits(fused[1]), await bits(fused[2])];
        expect(least, `${what}: turbo_one over kvLen keys`).toEqual(near);
        expect(wide, `${what}: turbo_one over the capacity`).toEqual(near);
        const q = ropeQ(row, { ...HEADS, offset });
        const at = { kvLen: offset + 1, offset, mask: { kind: 'causal' as const }, scale: SCALE, round: 'none' as const,
          gate: row };
        const general = [undefined, CAP].map((reach) => {
          const [dk, dv] = dequantizeTurboPair(k, v, { len: offset + 1, reach });
          return { dk, dv, out: sdpa(q, dk, dv, { ...at, reach }) };
        });
        const [a, b] = general;
        expect(await used(b.dk.data, offset + 1), `${what}: K decoded over the capacity`)
          .toEqual(await used(a.dk.data, offset + 1));
        expect(await used(b.dv.data, offset + 1), `${what}: V decoded over the capacity`)
          .toEqual(await used(a.dv.data, offset + 1));
        expect(await bits(b.out), `${what}: sdpa over sides decoded over the capacity`).toEqual(await bits(a.out));
        // turbo_one reads the same codes; only the float order differs from the general path.
        const [got, want] = [Array.from(await fused[0].read()), Array.from(await a.out.read())];
        const big = Math.max(...want.map(Math.abs));
        expect(big, `${what}: a real output`).toBeGreaterThan(1e-3);
        expect(Math.max(...got.map((g, i) => Math.abs(g - want[i]))), `${what}: fused against general`)
          .toBeLessThanOrEqual(1e-5 * big);
        for (const t of [row, q, ...fused, ...general.flatMap((g) => [g.dk.data, g.dv.data, g.out])]) t.dispose();
      }
      k.codes.dispose();
      v.codes.dispose();
    });
  }

  it('workgroups follow the reach; a captured reach records the same dispatches at each of its positions', async () => {
    const gpu = await getGpu();
    const x = rows(9);
    const [k, v] = filled(gpu, 'turbo3', 'turbo3', x);
    const row = Tensor.from(gpu, x.subarray(0, W), [1, W], 'f32', 'row');
    const outs: Tensor[] = [];
    const one = (offset: number, reach?: number) => recordDispatches(() => outs.push(
      turboAppendAttend(row, k, v, { ...HEADS, offset, scale: SCALE, reach })!));
    expect([0, 63, 64, 127, 128, CAP - 1].map((offset) => one(offset)[0].workgroups),
      '32-key chunks over 64, 128 keys, then the capacity (200 of 256)').toEqual(
      [[2, H, 1], [2, H, 1], [4, H, 1], [4, H, 1], [7, H, 1], [7, H, 1]]);
    expect(one(0, CAP)[0].workgroups, 'over the capacity').toEqual([7, H, 1]);
    expectSameStructure(one(64, 128), one(127, 128), ['kv_len'], 'turbo_one at 64 and 127 of reach 128');
    const dequant = (len: number, reach?: number) => recordDispatches(() => {
      const [dk, dv] = dequantizeTurboPair(k, v, { len, reach });
      outs.push(dk.data, dv.data);
    });
    expect(dequant(65)[0].workgroups, 'a workgroup a (side, head, position in use)').toEqual([2 * H * 65, 1, 1]);
    expect(dequant(65, 128)[0].workgroups, 'over the reach').toEqual([2 * H * 128, 1, 1]);
    expectSameStructure(dequant(65, 128), dequant(128, 128), ['len'], 'turbo_dequant at kvLen 65 and 128, reach 128');
    expect(dequant(0), 'no position in use: no dispatch').toEqual([]);
    await outs[0].read();
    for (const t of [...outs, row, k.codes, v.codes]) t.dispose();
  });

  it('a reach below kvLen or past the capacity is a ShapeError', async () => {
    const gpu = await getGpu();
    const x = rows(11);
    const [k, v] = filled(gpu, 'turbo4', 'turbo3', x);
    const row = Tensor.from(gpu, x.subarray(70 * W, 71 * W), [1, W], 'f32', 'row');
    for (const reach of [70, CAP + 1, 100.5]) {
      const msg = `reach ${reach} must be an integer in [kvLen 71, capacity ${CAP}]`;
      expect(() => turboAppendAttend(row, k, v, { ...HEADS, offset: 70, scale: SCALE, reach })).toThrow(ShapeError);
      expect(() => turboAppendAttend(row, k, v, { ...HEADS, offset: 70, scale: SCALE, reach }))
        .toThrow(`[turbo_one] ${msg}`);
      expect(() => dequantizeTurboPair(k, v, { len: 71, reach })).toThrow(ShapeError);
      expect(() => dequantizeTurboPair(k, v, { len: 71, reach })).toThrow(`[dequantizeTurboPair] ${msg}`);
    }
    for (const t of [row, k.codes, v.codes]) t.dispose();
  });
});
