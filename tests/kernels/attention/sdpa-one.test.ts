// sdpa's decode structure and its one-query path (sdpa_one: 32-key chunks, then a merge, folded or separate)
// against the float64 reference; the other paths: sdpa.test.ts.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { runs, sweep } from '../../helpers/sweep.ts';
import { expectSameStructure, recordDispatches, type DispatchRecord } from '../../helpers/dispatches.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { roundBf16, roundF16 } from '../../../src/tensor/dtype.ts';
import { sdpa, type SdpaOptions } from '../../../src/kernels/attention/sdpa.ts';
import { counters } from '../../../src/kernels/common/counters.ts';
import { sdpaRef } from '../../../src/kernels/attention/sdpa.ref.ts';
import { sigmoidGate } from '../../../src/kernels/ops/ops.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { type Case, F32_TOL, full, run, gateSource } from '../../helpers/sdpa-cases.ts';

describe('sdpa decode structure', () => {
  it('depends on the capacity only (kvLen and offset are uniform values), correct at kvLen 1, mid and capacity',
    async () => {
    const gpu = await getGpu();
    for (const [H, S, D, cap, dtype] of [[2, 1, 64, 1200, 'f32'], [3, 3, 40, 300, 'bf16'],
      [16, 1, 128, 70, 'f32']] as const) {
      const q = randn(91, H * S * D, 2);
      const k = randn(92, H * cap * D).map(roundBf16), v = randn(93, H * cap * D).map(roundBf16);
      const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'q');
      const kt = full(gpu, k, [H, cap, D], dtype, 'k'), vt = full(gpu, v, [H, cap, D], dtype, 'v');
      const gate = gateSource(gpu, S, H * D, 94);
      for (const mask of [{ kind: 'none' }, { kind: 'causal' }] as const) {
        const records: DispatchRecord[][] = [];
        for (const kvLen of [S, Math.floor(cap / 2) + 1, cap]) {
          const what = `H=${H} S=${S} cap ${cap} ${dtype} ${mask.kind} kvLen ${kvLen}`;
          const o: SdpaOptions = { kvLen, offset: kvLen - S, mask, scale: 1 / Math.sqrt(D), path: 'decode' };
          let gated: Tensor | undefined;
          records.push(recordDispatches(() => { gated = sdpa(qt, kt, vt, { ...o, gate }); }));
          const out = sdpa(qt, kt, vt, o);
          expectClose(await out.read(),
            sdpaRef(q, k, v,
            { heads: H, seq: S, dim: D, cap, kvLen, offset: kvLen - S, mask, scale: o.scale }), F32_TOL, 0, what);
          expectBitExact(await gated!.read(), await sigmoidGate(gate, out).read(), `${what} gated`);
        }
        expect(records[0].map((r) => r.kernel)).toEqual(['attention/sdpa_decode.wgsl#sdpa_split',
          'attention/sdpa_decode.wgsl#sdpa_combine']);
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'],
          `H=${H} S=${S} ${mask.kind}: kvLen ${S} vs mid`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'],
          `H=${H} S=${S} ${mask.kind}: kvLen ${S} vs capacity`);
      }
    }
  });
});

describe('sdpa one-query path (sdpa_one: 32-key chunks, then a merge, folded or separate)', () => {
  // kvLen 1; 31, 32 and 33 around a chunk boundary; 700; 2000 (63 chunks, the last one partial). Head dim 32 in bf16
  // is 4 units a row: fewer than the 8 threads a key, and more thread groups than keys in the values' sum.
  // (HRM_EXHAUSTIVE=1 adds 700: many whole chunks, as 2000 has.)
  const lens = sweep([1, 31, 32, 33, 700, 2000], (n) => n !== 700);
  // Each (cache dtype, head dim) is three pipelines (folded split; split and merge) of tens of seconds of LLVM
  // under a cold cache and shared cores: the CPU driver takes head dim 32 in bf16 (4 units a row), 64 in f32 (the
  // pipelines of the rounding test below) and 256 in f32 (the widest); bf16 at 64 is the fold test's (HRM_EXHAUSTIVE=1:
  // both dtypes at every head dim).
  for (const [ki, kv] of (['f32', 'bf16'] as const).entries()) {
    for (const [H, D] of sweep([[2, 32], [3, 64], [2, 128], [1, 256]], (_, di) => (ki + di) % 2 === 1 && di !== 2)) {
      it(`${kv} cache, ${H} heads of ${D}: none and causal masks at kvLen ${lens.join(', ')} against f64`, async () => {
        const gpu = await getGpu();
        for (const [i, kvLen] of lens.entries()) {
          // The two masks by turns (HRM_EXHAUSTIVE=1: both at every length).
          const masks = [{ kind: 'none' }, { kind: 'causal' }] as const;
          for (const mask of masks.filter((_, m) => runs((i + ki) % 2 === m))) {
            const c: Case = { heads: H, seq: 1, dim: D, cap: 2000, kvLen, offset: kvLen - 1, mask, seed: 100 + kvLen,
              qScale: 4 };
            const { got, ref } = await run(gpu, c, { path: 'one' }, kv);
            expectClose(got, ref, F32_TOL, 0, `${kv} H=${H} D=${D} kvLen ${kvLen} ${mask.kind}`);
          }
        }
      });
    }
  }

  it('is the default for one query seeing every key: one dispatch (two with a separate merge), the same at every kvLen '
    + 'of a reach', async () => {
    const gpu = await getGpu();
    const H = 2, D = 64;
    const kernels = { fold: ['one_split_fold'], separate: ['one_split', 'one_merge'] };
    for (const cap of [70, 4100]) {
      const q = Tensor.from(gpu, randn(1, H * D), [H, 1, D], 'f32', 'q');
      const kv = full(gpu, randn(2, H * cap * D), [H, cap, D], 'bf16', 'kv');
      for (const merge of [undefined, 'separate'] as const) {
        const at = (kvLen: number,
          reach?: number) => recordDispatches(() => sdpa(q, kv, kv,
          { kvLen, reach, offset: kvLen - 1, mask: { kind: 'none' }, scale: 0.125, merge }));
        const records = [1, 33, cap].map((kvLen) => at(kvLen, cap));
        expect(records[0].map((r) => r.kernel)).toEqual(kernels[merge ??
          'fold'].map((e) => `attention/sdpa_one.wgsl#${e}`));
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'], `cap ${cap} ${merge}: kvLen 1 vs 33`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'], `cap ${cap} ${merge}: kvLen 1 vs capacity`);
        // Without a fixed reach, 32-key chunks over the keys' (64 at least, then powers of two, at most the capacity).
        const chunks = [1, 65, cap].map((kvLen) => at(kvLen)[0].workgroups[0]);
        expect(chunks, `cap ${cap} ${merge}`).toEqual(cap === 70 ? [2, 3, 3] : [2, 4, 129]);
      }
    }
  });

  it('folds the merge over 41 chunks in back-to-back calls of one batch (3 layers, kvLen 0 among them) and leaves the '
    + 'counters at 0', async () => {
    const gpu = await getGpu();
    const H = 3, D = 64, cap = 1300;
    const q = randn(141, H * D, 4);
    const qt = Tensor.from(gpu, q, [H, 1, D], 'f32', 'q');
    const layers = [0, 1, 2].map((i) => {
      const k = randn(142 + 2 * i, H * cap * D).map(roundBf16), v = randn(143 + 2 * i, H * cap * D).map(roundBf16);
      return { k, v, kt: full(gpu, k, [H, cap, D], 'bf16', 'k'), vt: full(gpu, v, [H, cap, D], 'bf16', 'v') };
    });
    const gate = gateSource(gpu, 1, H * D, 149);
    const calls = [[0, cap], [1, 0], [2, 33], [0, 1], [1, 32], [2, 31], [0, 0], [1, 700]] as const;
    // Every call recorded before any is read: they share the device's counters, one dispatch after the other.
    const outs = calls.map(([i, kvLen]) => {
      const o: SdpaOptions = { kvLen, offset: Math.max(0, kvLen - 1), mask: { kind: 'causal' },
        scale: 1 / Math.sqrt(D), path: 'one' };
      const { kt, vt } = layers[i];
      return { fold: sdpa(qt, kt, vt, o), gated: sdpa(qt, kt, vt, { ...o, gate }),
        separate: sdpa(qt, kt, vt, { ...o, merge: 'separate' }), plain: o };
    });
    for (const [n, [i, kvLen]] of calls.entries()) {
      const what = `call ${n}: layer ${i} kvLen ${kvLen}`;
      const { k, v } = layers[i], x = outs[n];
      const got = await x.fold.read();
      expectClose(got,
        sdpaRef(q, k, v,
        { heads: H, seq: 1, dim: D, cap, kvLen, offset: x.plain.offset, mask: { kind: 'causal' },
        scale: x.plain.scale }), F32_TOL, 0, what);
      expectBitExact(got, await x.separate.read(), `${what}: folded vs separate`);
      expectBitExact(await x.gated.read(), await sigmoidGate(gate, x.separate).read(), `${what}: gated`);
      if (kvLen === 0) expect([...got]).toEqual(new Array(H * D).fill(0));
    }
    expect([...new Uint32Array(await gpu.read(counters(gpu, H)))]).toEqual(new Array(counters(gpu,
      H).size / 4).fill(0));
  });

  // One test a rounding and gate: each is a pipeline of its own, a rounded fold up to a minute under a cold cache
  // with the cores shared, and no test may take a third of its timeout. A bf16 cache, as the fold test's: the
  // rounded ungated folds here are the gate test's references.
  const c: Case = { heads: 2, seq: 1, dim: 64, cap: 1300, kvLen: 1100, offset: 1099, mask: { kind: 'none' },
    seed: 131 };
  for (const [round, roundTo] of [['bf16', roundBf16], ['f16', roundF16]] as const) {
    it(`rounds once: ${round} mode is the f32 result rounded`, async () => {
      const gpu = await getGpu();
      const exact = await run(gpu, c, { path: 'one' }, 'bf16');
      expect([...(await run(gpu, c, { path: 'one', round }, 'bf16')).got]).toEqual([...exact.got].map(roundTo));
    });
  }

  /** A bf16 cache of 1300 positions and a query, for the gate and refusal tests. */
  const inputs = (gpu: Gpu) => ({
    q: Tensor.from(gpu, randn(5, 2 * 64, 2), [2, 1, 64], 'f32', 'q'),
    k: full(gpu, randn(6, 2 * 1300 * 64), [2, 1300, 64], 'bf16', 'k'),
    v: full(gpu, randn(7, 2 * 1300 * 64), [2, 1300, 64], 'bf16', 'v'),
  });
  // The fold test above gates in f32; the CPU driver gates in bf16 (HRM_EXHAUSTIVE=1: every rounding here).
  for (const round of sweep(['none', 'bf16', 'f16'] as Round[], (r) => r === 'bf16')) {
    it(`gates bit for bit like sigmoidGate in ${round}`, async () => {
      const gpu = await getGpu();
      const { q, k, v } = inputs(gpu);
      const gate = gateSource(gpu, 1, 128, 8);
      const o: SdpaOptions = { kvLen: 1100, offset: 1099, mask: { kind: 'none' }, scale: 0.125, round, path: 'one' };
      expectBitExact(await sdpa(q, k, v, { ...o, gate }).read(),
        await sigmoidGate(gate, sdpa(q, k, v, o), { round }).read(), `gate ${round}`);
    });
  }

  it('kvLen 0 gives zeros; refuses what it cannot do', async () => {
    const gpu = await getGpu();
    const { q, k, v } = inputs(gpu);
    const empty = await run(gpu, { ...c, kvLen: 0, offset: 0 }, { path: 'one' });
    expect([...empty.got]).toEqual(new Array(2 * 64).fill(0));
    const o = { kvLen: 5, offset: 4, scale: 0.125, path: 'one' as const };
    expect(() => sdpa(Tensor.empty(gpu, [2, 2, 64], 'f32', 'q2'), k, v,
      { ...o, mask: { kind: 'none' } })).toThrow(/path 'one' needs one query \(got 2\)/);
    const tt = Tensor.from(gpu, [1, 1, 1, 1, 1], [5], 'u32', 'tt');
    expect(() => sdpa(q, k, v, { ...o, mask: { kind: 'prefix', tokenTypes: tt } })).toThrow(/mask prefix/);
    const k40 = full(gpu, randn(9, 2 * 8 * 40), [2, 8, 40], 'f32', 'k40');
    expect(() => sdpa(Tensor.empty(gpu, [2, 1, 40], 'f32', 'q40'), k40, k40,
      { ...o, mask: { kind: 'none' } })).toThrow(/head dim .* \(got 40\)/);
  });
});
