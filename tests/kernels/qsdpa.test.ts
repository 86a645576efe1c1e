import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { gateLogits, randn, rng } from '../helpers/seeded.ts';
import { expectBitExact, expectUlps } from '../helpers/quant-check.ts';
import { expectSameStructure, recordDispatches, type DispatchRecord } from '../helpers/dispatches.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../src/tensor/errors.ts';
import type { Gpu } from '../../src/tensor/gpu.ts';
import type { AttnMask, QuantKV } from '../../src/kernels/attention/types.ts';
import type { Round } from '../../src/kernels/common/codes.ts';
import { dequantize } from '../../src/kernels/quant/quant.ts';
import { appendQuantized, quantKV } from '../../src/kernels/attention/kvquant.ts';
import { qsdpa, type QsdpaOptions } from '../../src/kernels/attention/qsdpa.ts';
import { sigmoidGate } from '../../src/kernels/ops/ops.ts';
import type { Accumulate } from '../../src/kernels/quant/qmm.ts';
import { dequantizeRef, quantizeRef, roundTo } from '../../src/kernels/quant/quant.ref.ts';
import { kvAccess, qsdpaRef, type QuantSideRef } from '../../src/kernels/attention/qsdpa.ref.ts';
import type { MaskRef } from '../../src/kernels/attention/sdpa.ref.ts';

interface Case {
  heads: number; kvHeads: number; dim: number; seq: number; offset: number; cap: number;
  kBits: number; vBits: number; mask: MaskRef['kind']; round: Round; accumulate: Accumulate; chunkRows?: number; seed: number;
}
const BASE: Case = { heads: 2, kvHeads: 2, dim: 64, seq: 5, offset: 7, cap: 16, kBits: 4, vBits: 4, mask: 'causal', round: 'none', accumulate: 'f32', seed: 1 };

/** Prefix-LM token types: positions 0..8 form the bidirectional block (some queries sit inside it). */
const tokenTypes = (kvLen: number) => Array.from({ length: kvLen }, (_, j) => (j < 9 ? 1 : 0));
/** A random explicit mask whose query 1 sees nothing (every score masked: MLX then averages all values). */
const explicitMask = (seq: number, kvLen: number, seed: number) => {
  const r = rng(seed);
  return Array.from({ length: seq * kvLen }, (_, i) => (Math.floor(i / kvLen) === 1 ? 0 : r() < 0.6 ? 1 : 0));
};

async function readSide(side: QuantKV): Promise<QuantSideRef> {
  return { bits: side.bits, q: await side.q.read(), scales: await side.scales.read(), biases: await side.biases.read() };
}

/** A cache side holding `offset` earlier positions, then the S new ones appended at `offset` (as a decode loop does). */
function fill(gpu: Gpu, c: Case, bits: number, seed: number): QuantKV {
  const side = quantKV(gpu, { heads: c.kvHeads, capacity: c.cap, headDim: c.dim, bits });
  const put = (n: number, at: number, s: number) => {
    if (n === 0) return;
    const data = randn(s, c.kvHeads * n * c.dim, 1.5).map((v) => roundTo(c.round, v));
    appendQuantized(Tensor.from(gpu, data, [c.kvHeads, n, c.dim], 'f32', 'kv'), side, { offset: at, round: c.round });
  };
  put(c.offset, 0, seed);
  put(c.seq, c.offset, seed + 1);
  return side;
}

interface Inputs { q: Tensor; qx: Float32Array; k: QuantKV; v: QuantKV; maskRef: MaskRef; opts: QsdpaOptions }

/** The cache sides, queries, mask and options of one case. */
function inputs(gpu: Gpu, c: Case): Inputs {
  const kvLen = c.offset + c.seq;
  const k = fill(gpu, c, c.kBits, c.seed * 10), v = fill(gpu, c, c.vBits, c.seed * 10 + 5);
  const qx = randn(c.seed + 3, c.heads * c.seq * c.dim, 2).map((x) => roundTo(c.round, x));
  let mask: AttnMask, maskRef: MaskRef;
  if (c.mask === 'prefix') {
    const tt = tokenTypes(kvLen);
    mask = { kind: 'prefix', tokenTypes: Tensor.from(gpu, tt, [kvLen], 'u32', 'tt') };
    maskRef = { kind: 'prefix', tokenTypes: tt };
  } else if (c.mask === 'explicit') {
    const m = explicitMask(c.seq, kvLen, c.seed);
    mask = { kind: 'explicit', mask: Tensor.from(gpu, m, [c.seq, kvLen], 'u32', 'mask') };
    maskRef = { kind: 'explicit', mask: m };
  } else {
    mask = { kind: c.mask };
    maskRef = { kind: c.mask };
  }
  const opts: QsdpaOptions = {
    kvLen, offset: c.offset, mask, scale: 1 / Math.sqrt(c.dim), round: c.round, accumulate: c.accumulate, chunkRows: c.chunkRows,
  };
  return { q: Tensor.from(gpu, qx, [c.heads, c.seq, c.dim], 'f32', 'q'), qx, k, v, maskRef, opts };
}

async function run(c: Case): Promise<{ got: Float32Array; want: Float64Array }> {
  const gpu = await getGpu();
  const { q, qx, k, v, maskRef, opts } = inputs(gpu, c);
  const { kvLen, scale } = opts;
  const out = qsdpa(q, k, v, opts);
  expect(out.shape).toEqual([c.seq, c.heads * c.dim]);
  const got = await out.readF32();
  const want = qsdpaRef(qx, kvAccess(await readSide(k), await readSide(v), c.cap, c.dim, c.round), {
    heads: c.heads, kvHeads: c.kvHeads, seq: c.seq, dim: c.dim, cap: c.cap, kvLen, offset: c.offset,
    mask: maskRef, scale, round: c.round, accumulate: c.accumulate,
  });
  return { got, want };
}

/**
 * f32: |got - ref| <= 1e-5 * (1 + |ref|): scores are f32 sums of <= 128 products (relative error ~1e-6), which moves
 * softmax weights by ~1e-6 relative; the output sums <= 1100 weighted values (|v| <= ~3). bf16/f16: the GPU's f32
 * sums may round a score or weight to the neighbouring dtype value where the reference's f64 sum does not, so
 * >= 99 % within one ulp of the rounded reference and none beyond 4 ulps.
 */
async function check(c: Case): Promise<void> {
  const { got, want } = await run(c);
  const what = JSON.stringify(c);
  if (c.round === 'none') {
    for (let i = 0; i < want.length; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])))) throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]}`);
    }
  } else {
    expectUlps(c.round, got, Array.from(want, (x) => roundTo(c.round, x)), 0.99, 4, what);
  }
}

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
  it('decode (S = 1) over 1100 keys, K 8 / V 4, head dim 128', async () => {
    await check({ ...BASE, dim: 128, seq: 1, offset: 1099, cap: 1100, kBits: 8, vBits: 4, mask: 'none' });
    await check({ ...BASE, dim: 128, seq: 1, offset: 1099, cap: 1100, kBits: 8, vBits: 4, round: 'bf16', seed: 4 });
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

/** A gqkv-shaped gate source [S, 4*H*D] (the gate block is its first H*D columns). */
const gateSource = (gpu: Gpu, S: number, width: number, seed: number) => Tensor.from(gpu, gateLogits(seed, S * 4 * width), [S, 4 * width], 'f32', 'gqkv');

const kernels = (r: DispatchRecord[]) => r.map((d) => d.kernel.split('#')[1]);

describe('qsdpa gate (sigmoidGate fused into the pass that writes the output)', () => {
  it('is sigmoidGate(gqkv, qsdpa(...)) bit for bit, split and unsplit, query chunks, every rounding', async () => {
    const gpu = await getGpu();
    const cases: Array<[string, Case, boolean]> = [
      ['decode, split keys', { ...BASE, seq: 1, offset: 599, cap: 600, mask: 'none' }, true],
      ['decode S=3, split keys', { ...BASE, seq: 3, offset: 420, cap: 600, heads: 4 }, true],
      ['one chunk', BASE, false],
      ['query chunks of 2 rows', { ...BASE, seq: 9, offset: 3, chunkRows: 2 }, false],
      ["accumulate 'dtype'", { ...BASE, seq: 1, offset: 599, cap: 600, accumulate: 'dtype' }, false],
    ];
    for (const [name, c0, split] of cases) {
      for (const round of ['none', 'bf16', 'f16'] as Round[]) {
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
    expect(() => qsdpa(q, k, v, { ...opts, gate: Tensor.empty(gpu, [5, 100], 'f32', 'g') })).toThrow(/\[qsdpa\] gate 'g' is \[5, 100\]; expected \[5, >= 128\]/);
    expect(() => qsdpa(q, k, v, { ...opts, gate: Tensor.empty(gpu, [5, 512], 'u32', 'g') })).toThrow(DTypeError);
  });
});

describe('qsdpa decode structure', () => {
  it('depends on the capacity only (kvLen and offset are uniform values), correct at kvLen 1, mid and capacity', async () => {
    const gpu = await getGpu();
    // [name, case, key chunks (splits), key slices (KS)]
    const variants: Array<[string, Partial<Case>, number, number]> = [
      ['split keys, 4 slices', { cap: 1024, dim: 128, kBits: 8, vBits: 4 }, 4, 4],
      ['split keys, 1 slice', { cap: 300 }, 2, 1],
      ['one chunk', { cap: 200 }, 1, 1],
      ["accumulate 'dtype', bf16", { cap: 300, accumulate: 'dtype', round: 'bf16' }, 1, 1],
      ['S=3, grouped heads', { cap: 600, seq: 3, heads: 4 }, 3, 1],
    ];
    for (const [name, v, splits, ks] of variants) {
      for (const mask of ['none', 'causal'] as const) {
        const base: Case = { ...BASE, seq: 1, mask, ...v, offset: 0 };
        const full = inputs(gpu, { ...base, offset: base.cap - base.seq });   // the cache filled to capacity
        const gate = gateSource(gpu, base.seq, base.heads * base.dim, 5);
        const records: DispatchRecord[][] = [];
        for (const kvLen of [base.seq, Math.floor(base.cap / 2) + 1, base.cap]) {
          records.push(recordDispatches(() => qsdpa(full.q, full.k, full.v, { ...full.opts, kvLen, offset: kvLen - base.seq, gate })));
          // Correct at this length (its own cache, filled up to kvLen, against the f64 reference).
          await check({ ...base, offset: kvLen - base.seq });
        }
        const what = `${name} ${mask}`;
        expect(kernels(records[0]), what).toEqual(['qsdpa_scores', 'qsdpa_softmax', 'qsdpa_pv', ...(splits > 1 ? ['qsdpa_combine'] : [])]);
        expect([records[0][2].uniforms.splits, records[0][2].overrides.KS], what).toEqual([splits, ks]);
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'], `${what}: kvLen ${base.seq} vs mid`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'], `${what}: kvLen ${base.seq} vs capacity`);
      }
    }
  });
});

describe('qsdpa cache handling', () => {
  it('appendQuantized at a nonzero offset reads back as the reference quantization of the appended values', async () => {
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
      expectBitExact(deq.subarray(start, start + c.seq * c.dim), want.subarray(h * c.seq * c.dim, (h + 1) * c.seq * c.dim), `head ${h} positions ${c.offset}..${c.offset + c.seq}`);
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
    expect(() => qsdpa(q, k, k, { ...opts, offset: 5, mask: { kind: 'prefix', tokenTypes: short } })).toThrow(/prefix mask 'tt' \[2\] has 2 entries; 8 needed/);
  });
});
