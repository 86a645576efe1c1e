import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { expectSameStructure, recordDispatches, type DispatchRecord } from '../../helpers/dispatches.ts';
import { BASE, check, fill, gateSource, inputs, run, type Case } from '../../helpers/qsdpa-cases.ts';
import { runs } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../../src/errors.ts';
import type { AttnMask } from '../../../src/kernels/attention/types.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { dequantize } from '../../../src/kernels/quant/quant.ts';
import { quantKV } from '../../../src/kernels/attention/kvquant.ts';
import { qsdpa } from '../../../src/kernels/attention/qsdpa.ts';
import { sigmoidGate } from '../../../src/kernels/ops/ops.ts';
import { dequantizeRef, quantizeRef, roundTo } from '../../../src/kernels/quant/quant.ref.ts';

describe('qsdpa vs the float64 reference, one setting varied at a time from ' + JSON.stringify(BASE), () => {
  it('every mask kind under a cache offset (prefix block and a fully masked query included)', async () => {
    for (const mask of ['none', 'causal', 'prefix', 'explicit'] as const) await check({ ...BASE, mask });
  });
  it('asymmetric bits: K 8 / V 4 and K 4 / V 8, head dim 128; 2, 3, 5 and 6 bits', async () => {
    await check({ ...BASE, dim: 128, kBits: 8, vBits: 4 });
    await check({ ...BASE, dim: 128, kBits: 4, vBits: 8 });
    await check({ ...BASE, kBits: 3, vBits: 6, seed: 2 });
    await check({ ...BASE, kBits: 5, vBits: 2, seed: 3 });
  });
  it('decode (S = 1) over 1100 keys through the passes (qsdpa-one.test.ts has the default path), K 8 / V 4, head dim '
    + '128', async () => {
    await check({ ...BASE, dim: 128, seq: 1, offset: 1099, cap: 1100, kBits: 8, vBits: 4, mask: 'none',
      path: 'passes' });
    await check({ ...BASE, dim: 128, seq: 1, offset: 1099, cap: 1100, kBits: 8, vBits: 4, round: 'bf16', seed: 4,
      path: 'passes' });
  });
  it('many queries: a 40-token prefill read from the quantized cache (KLD mode), prefix mask', async () => {
    await check({ ...BASE, seq: 40, offset: 0, cap: 40, mask: 'prefix' });
  });
  it('bf16 and f16 rounding points', async () => {
    for (const round of ['bf16', 'f16'] as Round[]) {
      await check({ ...BASE, round, kBits: 8, vBits: 4 });
      await check({ ...BASE, round, mask: 'explicit', seed: 5 });
    }
  });
  it('grouped query heads (4 query heads over 2 cache heads)', async () => {
    await check({ ...BASE, heads: 4 });
  });
  it("accumulate 'dtype' (MLX CPU backend matmuls) in bf16 and f32", async () => {
    await check({ ...BASE, round: 'bf16', accumulate: 'dtype', kBits: 8 });
    await check({ ...BASE, accumulate: 'dtype' });
  });
  it('query chunks give the same result bit for bit', async () => {
    const whole = await run({ ...BASE, seq: 9, offset: 3 });
    const chunked = await run({ ...BASE, seq: 9, offset: 3, chunkRows: 2 });
    expectBitExact(chunked.got, whole.got, 'chunkRows 2 vs all rows');
  });
});


const kernels = (r: DispatchRecord[]) => r.map((d) => d.kernel.split('#')[1]);

describe('qsdpa gate (sigmoidGate fused into the pass that writes the output)', () => {
  it('is sigmoidGate(gqkv, qsdpa(...)) bit for bit, split and unsplit, query chunks, every rounding', async () => {
    const gpu = await getGpu();
    const cases: Array<[string, Case, boolean]> = [
      ['decode, split keys', { ...BASE, seq: 1, offset: 599, cap: 600, mask: 'none', path: 'passes' }, true],
      ['decode, one query (qsdpa_one)', { ...BASE, seq: 1, offset: 599, cap: 600, mask: 'none' }, false],
      ['decode S=3, split keys', { ...BASE, seq: 3, offset: 420, cap: 600, heads: 4 }, true],
      ['one chunk', BASE, false],
      ['query chunks of 2 rows', { ...BASE, seq: 9, offset: 3, chunkRows: 2 }, false],
      ["accumulate 'dtype'", { ...BASE, seq: 1, offset: 599, cap: 600, accumulate: 'dtype' }, false],
    ];
    for (const [ci, [name, c0, split]] of cases.entries()) {
      // Each case in one rounding, each rounding twice (HRM_EXHAUSTIVE=1: every case in every rounding).
      for (const round of (['none', 'bf16', 'f16'] as Round[]).filter((_, r) => runs(ci % 3 === r))) {
        const c = { ...c0, round };
        const { q, k, v, opts } = inputs(gpu, c);
        const gate = gateSource(gpu, c.seq, c.heads * c.dim, c.seed + 9);
        const want = sigmoidGate(gate, qsdpa(q, k, v, opts), { round });
        let got: Tensor | undefined;
        const rec = recordDispatches(() => { got = qsdpa(q, k, v, { ...opts, gate }); });
        expect(kernels(rec).includes('qsdpa_combine'), `${name}: split`).toBe(split);
        expectBitExact(await got!.read(), await want.read(), `${name} ${round}`);
      }
    }
  });

  it('rejects a gate that is not f32 [S, >= H*D]', async () => {
    const gpu = await getGpu();
    const { q, k, v, opts } = inputs(gpu, BASE);
    expect(() => qsdpa(q, k, v,
      { ...opts,
      gate: Tensor.empty(gpu, [5, 100], 'f32',
      'g') })).toThrow(/\[qsdpa\] gate 'g' is \[5, 100\]; expected \[5, >= 128\]/);
    expect(() => qsdpa(q, k, v, { ...opts, gate: Tensor.empty(gpu, [5, 512], 'u32', 'g') })).toThrow(DTypeError);
  });
});

describe('qsdpa decode structure', () => {
  it('depends on the capacity only (kvLen and offset are uniform values), correct at kvLen 1, mid and capacity',
    async () => {
    const gpu = await getGpu();
    // [name, case, key chunks (splits), key slices (KS)]
    const variants: Array<[string, Partial<Case>, number, number]> = [
      ['split keys, 4 slices', { cap: 1024, dim: 128, kBits: 8, vBits: 4 }, 4, 4],
      ['split keys, 1 slice', { cap: 300 }, 2, 1],
      ['one chunk', { cap: 200 }, 1, 1],
      ["accumulate 'dtype', bf16", { cap: 300, accumulate: 'dtype', round: 'bf16' }, 1, 1],
      ['S=3, grouped heads', { cap: 600, seq: 3, heads: 4 }, 3, 1],
    ];
    for (const [vi, [name, v, splits, ks]] of variants.entries()) {
      // Each variant under one mask, by turns (HRM_EXHAUSTIVE=1: both).
      for (const mask of (['none', 'causal'] as const).filter((_, m) => runs(vi % 2 === m))) {
        const base: Case = { ...BASE, seq: 1, mask, ...v, offset: 0, path: 'passes' };
        const full = inputs(gpu, { ...base, offset: base.cap - base.seq });   // the cache filled to capacity
        const gate = gateSource(gpu, base.seq, base.heads * base.dim, 5);
        const records: DispatchRecord[][] = [];
        for (const kvLen of [base.seq, Math.floor(base.cap / 2) + 1, base.cap]) {
          records.push(recordDispatches(() => qsdpa(full.q, full.k, full.v,
            { ...full.opts, kvLen, offset: kvLen - base.seq, gate })));
          // Correct at this length (its own cache, filled up to kvLen, against the f64 reference).
          await check({ ...base, offset: kvLen - base.seq });
        }
        const what = `${name} ${mask}`;
        expect(kernels(records[0]),
          what).toEqual(['qsdpa_scores', 'qsdpa_softmax', 'qsdpa_pv', ...(splits > 1 ? ['qsdpa_combine'] : [])]);
        expect([records[0][2].uniforms.splits, records[0][2].overrides.KS], what).toEqual([splits, ks]);
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'], `${what}: kvLen ${base.seq} vs mid`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'], `${what}: kvLen ${base.seq} vs capacity`);
      }
    }
  });
});

describe('qsdpa cache handling', () => {
  it('appendQuantized at a nonzero offset reads back as the reference quantization of the appended values',
    async () => {
    const gpu = await getGpu();
    const c = { ...BASE, round: 'bf16' as Round };
    const k = fill(gpu, c, 8, 70);
    // The S positions appended at `offset` dequantize to the reference quantization of the same data.
    const src = randn(71, c.kvHeads * c.seq * c.dim, 1.5).map((x) => roundTo(c.round, x));
    const ref = quantizeRef(src, c.kvHeads * c.seq, c.dim, { bits: 8, round: c.round });
    const want = dequantizeRef(ref.q, ref.scales, ref.biases, c.kvHeads * c.seq, c.dim, { bits: 8, round: c.round });
    const deq = await dequantize(k.q, k.scales, k.biases, { bits: 8, round: c.round }).read();
    for (let h = 0; h < c.kvHeads; h++) {
      const start = (h * c.cap + c.offset) * c.dim;
      expectBitExact(deq.subarray(start, start + c.seq * c.dim),
        want.subarray(h * c.seq * c.dim,
        (h + 1) * c.seq * c.dim), `head ${h} positions ${c.offset}..${c.offset + c.seq}`);
    }
  });

  it('names a query range past kvLen, mismatched caches and a short mask', async () => {
    const gpu = await getGpu();
    const k = quantKV(gpu, { heads: 2, capacity: 8, headDim: 64, bits: 4 });
    const v = quantKV(gpu, { heads: 2, capacity: 9, headDim: 64, bits: 4 });
    const q = Tensor.from(gpu, randn(1, 2 * 3 * 64), [2, 3, 64], 'f32', 'q');
    const opts = { kvLen: 8, offset: 6, mask: { kind: 'causal' } as AttnMask, scale: 0.125 };
    expect(() => qsdpa(q, k, k, opts)).toThrow(/\[qsdpa\] queries at 6\.\.9 reach past kvLen 8/);
    expect(() => qsdpa(q, k, v, { ...opts, offset: 5 })).toThrow(ShapeError);
    const short = Tensor.from(gpu, [1, 1], [2], 'u32', 'tt');
    expect(() => qsdpa(q, k, k,
      { ...opts, offset: 5,
      mask: { kind: 'prefix', tokenTypes: short } })).toThrow(/prefix mask 'tt' \[2\] has 2 entries; 8 needed/);
  });
});
