import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { expectUlps } from '../../helpers/quant-check.ts';
import { expectSameStructure, recordDispatches, type DispatchRecord } from '../../helpers/dispatches.ts';
import { BASE, check, gateSource, inputs, run, type Case } from '../../helpers/qsdpa-cases.ts';
import { sweep } from '../../helpers/sweep.ts';
import { ShapeError } from '../../../src/errors.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { qsdpa } from '../../../src/kernels/attention/qsdpa.ts';

/** A decode step's attention: one query at the last position (kvLen = offset + 1), qsdpa_one forced. */
const ONE: Case = { ...BASE, seq: 1, dim: 128, offset: 332, cap: 400, mask: 'none', path: 'one' };
const kernels = (r: DispatchRecord[]) => r.map((d) => d.kernel.split('#')[1]);

describe('qsdpa_one (single-query decode over a quantized cache) vs the float64 reference', () => {
  it('odd cache lengths across chunk edges, head dims 64, 128 and 256, f32 and bf16', async () => {
    const cases: Array<[Round, number, number]> = [['bf16', 128, 0], ['none', 128, 62], ['bf16', 128, 64],
      ['bf16', 64, 332], ['none', 256, 96], ['none', 128, 1098]];
    for (const [round, dim, offset] of cases) await check({ ...ONE, round, dim, offset, cap: Math.max(offset + 1, 150),
      seed: dim + offset });
  });
  it('asymmetric bits (K 8 / V 4, K 4 / V 8, 3/6, 5/2), both modes; f16; causal mask at the last position',
    async () => {
    await check({ ...ONE, kBits: 8, vBits: 4 });
    await check({ ...ONE, round: 'bf16', kBits: 4, vBits: 8, seed: 2 });
    await check({ ...ONE, round: 'bf16', kBits: 3, vBits: 6, dim: 64, seed: 3 });
    await check({ ...ONE, kBits: 5, vBits: 2, seed: 4 });
    await check({ ...ONE, round: 'f16', kBits: 8, vBits: 4, seed: 5 });
    await check({ ...ONE, mask: 'causal', round: 'bf16', seed: 6 });
  });
  it('grouped query heads (12 query heads over 4 cache heads)', async () => {
    await check({ ...ONE, heads: 12, kvHeads: 4, round: 'bf16', kBits: 8, vBits: 4 });
  });
});

describe('qsdpa_one\'s values over many key chunks (merged by the last chunk of a head) vs the float64 '
  + 'reference', () => {
  // The CPU driver leaves out 31, 640 and 2048 (HRM_EXHAUSTIVE=1 runs them).
  const lens = sweep([1, 31, 32, 33, 640, 641, 2048, 2100], (_, i) => [0, 2, 3, 5, 7].includes(i));
  it(`kvLen ${lens.join(', ')} (head dim 128: chunks of 64 keys; 2100 the capacity), f32 and bf16`, async () => {
    for (const [i, kvLen] of lens.entries()) {
      await check({ ...ONE, cap: 2100, offset: kvLen - 1, round: i % 2 ? 'bf16' : 'none', seed: 40 + i });
    }
  });
  it('V bits 2, 3, 4, 5, 6 and 8 (values straddling two words at 3, 5 and 6)', async () => {
    for (const vBits of [2, 3, 4, 5, 6, 8]) await check({ ...ONE, cap: 700, offset: 640, vBits,
      round: vBits % 2 ? 'none' : 'bf16', seed: 60 + vBits });
  });
  it('head dims 64 and 256 around their chunk edges (128 and 32 keys) and at the capacity', async () => {
    for (const [dim, ck] of [[64, 128], [256, 32]]) {
      // Either side of the chunk edge and the capacity (HRM_EXHAUSTIVE=1: also 1, the edge itself and 641).
      const lens = sweep([1, ck - 1, ck, ck + 1, 641, 1100], (_, i) => i % 2 === 1);
      for (const kvLen of lens) await check({ ...ONE, dim, cap: 1100, offset: kvLen - 1, vBits: 6, seed: dim + kvLen });
    }
  });
});

describe('qsdpa_one vs qsdpa\'s passes (the reference path)', () => {
  /**
   * The same scores (a key's packs added in the passes' order) and weights (the softmax sum in qsdpa_softmax's
   * order); only the value sums run in another order: f32 within 2e-6 relative; bf16 and f16 outputs >= 99 %
   * identical, the rest one ulp apart (an f32 sum landing on the other side of a rounding boundary).
   */
  it('agrees at several bit width pairs in every mode', async () => {
    const pairs: Array<[Round, number, number]> = [['none', 4, 4], ['none', 8, 4], ['bf16', 8, 8], ['bf16', 4, 8],
      ['bf16', 6, 3], ['f16', 4, 4], ['f16', 8, 4]];
    // Every mode, 4 and 8 bits each way and an odd pair (HRM_EXHAUSTIVE=1: all seven pairs).
    for (const [round, kBits, vBits] of sweep(pairs, (_, i) => [1, 3, 4, 5].includes(i))) {
      const c: Case = { ...ONE, round, kBits, vBits, offset: 700, cap: 777, seed: kBits * 10 + vBits };
      const one = await run(c);
      const passes = await run({ ...c, path: 'passes' });
      const what = `K ${kBits} / V ${vBits} ${round}`;
      if (round === 'none') {
        for (let i = 0; i < one.got.length; i++) {
          if (!(Math.abs(one.got[i] - passes.got[i]) <= 2e-6 * (1 + Math.abs(passes.got[i])))) {
            throw new Error(`${what}: first mismatch at ${i}: ${one.got[i]} vs ${passes.got[i]}`);
          }
        }
      } else {
        expect(expectUlps(round, one.got, passes.got, 1, 1, what).exact,
          `${what}: identical share`).toBeGreaterThanOrEqual(0.99);
      }
    }
  });
});

describe('qsdpa_one decode structure and selection', () => {
  it('is the default for one query seeing every key; its dispatches depend on the reach only', async () => {
    const gpu = await getGpu();
    for (const mask of ['none', 'causal'] as const) {
      const base: Case = { ...ONE, mask, path: undefined, cap: 300, kBits: 8, vBits: 4 };
      const full = inputs(gpu, { ...base, offset: base.cap - 1 });
      const gate = gateSource(gpu, 1, base.heads * base.dim, 5);
      const records: DispatchRecord[][] = [];
      const reached: number[][] = [];
      for (const kvLen of [1, 151, base.cap]) {
        const o = { ...full.opts, kvLen, offset: kvLen - 1, gate };
        records.push(recordDispatches(() => qsdpa(full.q, full.k, full.v, { ...o, reach: base.cap })));
        reached.push(recordDispatches(() => qsdpa(full.q, full.k, full.v, o))[0].workgroups);
        await check({ ...base, offset: kvLen - 1 });
      }
      expect(kernels(records[0]), mask).toEqual(['qone_scores', 'qone_out']);
      expect(records[0].map((r) => r.workgroups),
        `${mask}: 300 keys in chunks of 64, 2 heads, for the scores and the values`).toEqual([[5, 2, 1], [5, 2, 1]]);
      expect(reached,
        `${mask}: chunks of 64 over the keys' reach, 64, 256 and the capacity`).toEqual([[1, 2, 1], [4, 2, 1],
        [5, 2, 1]]);
      expectSameStructure(records[0], records[1], ['kv_len'], `${mask}: kvLen 1 vs mid`);
      expectSameStructure(records[0], records[2], ['kv_len'], `${mask}: kvLen 1 vs capacity`);
    }
  });

  it('leaves other shapes to the passes and refuses them when forced', async () => {
    const gpu = await getGpu();
    const passes = ['qsdpa_scores', 'qsdpa_softmax', 'qsdpa_pv'];
    const cases: Array<[string, Case]> = [
      ['two queries', { ...ONE, seq: 2, mask: 'causal', offset: 331 }],
      ['causal query before the last key', { ...ONE, mask: 'causal', offset: 300 }],
      ["accumulate 'dtype'", { ...ONE, accumulate: 'dtype' }],
      ['head dim 192', { ...ONE, dim: 192 }],
    ];
    for (const [name, c] of cases) {
      const x = inputs(gpu, { ...c, path: undefined });
      const opts = name.startsWith('causal query') ? { ...x.opts, kvLen: 333 } : x.opts;
      expect(kernels(recordDispatches(() => qsdpa(x.q, x.k, x.v, opts))).slice(0, 3), name).toEqual(passes);
      expect(() => qsdpa(x.q, x.k, x.v, { ...opts, path: 'one' }), name).toThrow(ShapeError);
    }
    const x = inputs(gpu, { ...ONE, seq: 2, mask: 'causal', offset: 331 });
    expect(() => qsdpa(x.q, x.k, x.v,
      x.opts)).toThrow(/\[qsdpa\] path 'one' needs one query seeing every key \(S 2, mask causal/);
  });
});
