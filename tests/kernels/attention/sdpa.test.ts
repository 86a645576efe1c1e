// sdpa against MLX and the float64 reference on the prefill, decode and matmul paths, its fused gate and argument
// checks; the decode structure and the one-query path: sdpa-one.test.ts.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn, rng } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { expectUlp } from '../../helpers/attn-parity.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { runs, sweep } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { sdpa, type SdpaOptions } from '../../../src/kernels/attention/sdpa.ts';
import { type MaskRef } from '../../../src/kernels/attention/sdpa.ref.ts';
import { sigmoidGate } from '../../../src/kernels/ops/ops.ts';
import type { AttnMask, FullKV } from '../../../src/kernels/attention/types.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { type Case, F32_TOL, PATHS, full, run, toRows, gateSource } from '../../helpers/sdpa-cases.ts';

describe('sdpa vs MLX (ops.safetensors)', () => {
  const cases = [
    { key: 'l1.s37.full', L: 1, S: 37, causal: false },
    { key: 'l9.s20.full', L: 9, S: 20, causal: false },
    { key: 'l9.s20.causal', L: 9, S: 20, causal: true },
    { key: 'l9.s9.causal', L: 9, S: 9, causal: true },
  ];
  for (const dt of ['f32', 'bf16', 'f16'] as const) {
    for (const c of cases) {
      it(`sdpa.${dt}.${c.key} on both paths`, async () => {
        const gpu = await getGpu();
        const ops = await fixture('ops.safetensors');
        const name = `sdpa.${dt}.${c.key}`;
        const [q, k, v, want] = await Promise.all(['q', 'k', 'v', 'out'].map((t) => ops.array(`${name}.${t}`)));
        const H = 4, D = 128;
        const kvDtype = dt === 'bf16' ? 'bf16' : 'f32';   // f16 K/V ride as f32 holding f16 values (no shader-f16 here)
        // Capacity beyond kvLen: only the first kvLen positions may be read (the tail is garbage).
        const cap = c.S + 3;
        const pad = (x: ArrayLike<number>) => {
          const out = new Float32Array(H * cap * D).fill(NaN);
          for (let h = 0; h < H; h++) out.set(Array.from(x).slice(h * c.S * D, (h + 1) * c.S * D), h * cap * D);
          return out;
        };
        const kt = full(gpu, pad(k), [H, cap, D], kvDtype, 'k'), vt = full(gpu, pad(v), [H, cap, D], kvDtype, 'v');
        const qt = Tensor.from(gpu, q, [H, c.L, D], 'f32', 'q');
        const wantRows = toRows(want, H, c.L, D);
        for (const path of PATHS) {
          const got = await sdpa(qt, kt, vt, {
            kvLen: c.S, offset: c.S - c.L, mask: { kind: c.causal ? 'causal' : 'none' }, scale: 1 / Math.sqrt(D),
            round: dt === 'f32' ? 'none' : dt, path,
          }).read();
          // f32: MLX's order of summation differs from ours; both are within ~1e-6 of exact (|out| < 1).
          if (dt === 'f32') expectClose(got, wantRows, 2e-6, 0, `${name} ${path}`);
          else expectUlp(got, wantRows, dt, `${name} ${path}`);
        }
      });
    }
  }
});

describe('sdpa vs the f64 reference', () => {
  const base = { heads: 2, seq: 33, dim: 64, cap: 80, kvLen: 73, offset: 40 };
  const tokenTypes = Array.from({ length: 73 }, (_, j) => (j < 20 || (j >= 45 && j < 60) ? 1 : 0) as number);
  tokenTypes[7] = 0; tokenTypes[50] = 0;   // holes inside the bidirectional runs
  const r = rng(9);
  const explicit = Array.from({ length: 33 * 73 }, () => (r() < 0.6 ? 1 : 0) as number);
  const masks: MaskRef[] = [
    { kind: 'none' }, { kind: 'causal' }, { kind: 'prefix', tokenTypes }, { kind: 'explicit', mask: explicit },
  ];
  for (const mask of masks) {
    for (const path of PATHS) {
      it(`${mask.kind} mask under offset 40, S=33, kvLen=73, ${path} path`, async () => {
        const gpu = await getGpu();
        const { got, ref } = await run(gpu, { ...base, mask, seed: 11 }, { path });
        expectClose(got, ref, F32_TOL, 0, `${mask.kind} ${path}`);
      });
    }
  }

  it('a long cache (1100 keys) through the decode split, S=1 causal, and the same on the prefill path', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 1, dim: 64, cap: 1200, kvLen: 1100, offset: 1099, mask: { kind: 'causal' },
      seed: 21, qScale: 4 };
    // chunks 5: 256 keys each; 1: one chunk; 3, 7: a short last chunk (7: and an empty one); 40: 64 keys each and
    // 22 empty chunks past kvLen.
    // The CPU driver takes one chunk, a short last chunk and an empty one (7), empty chunks past kvLen (40) and
    // two parts; HRM_EXHAUSTIVE=1 every chunking.
    const chunkings = [{ chunks: 5 }, { chunks: 1 }, { chunks: 3 }, { chunks: 7 }, { chunks: 40 }, { parts: 1 },
      { parts: 2 }];
    const split = chunkings.filter((_, i) => runs([1, 3, 4, 6].includes(i)))
      .map((x) => ({ ...x, path: 'decode' as const }));
    for (const extra of [{}, ...split, { path: 'decode' as const }, { path: 'prefill' as const }]) {
      const { got, ref } = await run(gpu, c, extra);
      expectClose(got, ref, F32_TOL, 0, `long cache ${JSON.stringify(extra)}`);
    }
  });

  it('a long cache through the prefill path with many queries (S=33, causal at offset 1067)', async () => {
    const gpu = await getGpu();
    const { got, ref } = await run(gpu,
      { heads: 2, seq: 33, dim: 64, cap: 1100, kvLen: 1100, offset: 1067, mask: { kind: 'causal' }, seed: 31 });
    expectClose(got, ref, F32_TOL, 0, 'long prefill');
  });

  it('small S on the decode path with prefix and explicit masks, head dims 40 and 256', async () => {
    const gpu = await getGpu();
    const tt = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1];
    const ex = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0];
    const cases: Case[] = [
      { heads: 3, seq: 3, dim: 40, cap: 11, kvLen: 11, offset: 8, mask: { kind: 'prefix', tokenTypes: tt }, seed: 41 },
      { heads: 2, seq: 2, dim: 40, cap: 12, kvLen: 11, offset: 9, mask: { kind: 'explicit', mask: ex }, seed: 42 },
      { heads: 1, seq: 5, dim: 256, cap: 40, kvLen: 37, offset: 32, mask: { kind: 'causal' }, seed: 43 },
    ];
    // The explicit mask on the decode path only (HRM_EXHAUSTIVE=1: on every path): the mask tests above take each
    // mask on each path, and each new head dim and mask is a pipeline a path.
    for (const [ci, c] of cases.entries()) {
      for (const path of PATHS.filter((pa) => runs(ci !== 1 || pa === 'decode'))) {
        const { got, ref } = await run(gpu, c, { path });
        expectClose(got, ref, F32_TOL, 0, `${c.mask.kind} D=${c.dim} ${path}`);
      }
    }
  });

  it('a packed bf16 cache gives exactly what an f32 cache holding the same values gives', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 7, dim: 64, cap: 300, kvLen: 290, offset: 283, mask: { kind: 'causal' },
      seed: 51 };
    for (const path of PATHS) {
      const packed = await run(gpu, c, { path }, 'bf16');
      const wide = await run(gpu, c, { path }, 'bf16-values');
      // Unpacking a bf16 word is exact, so every later f32 operation sees identical inputs.
      expect([...packed.got]).toEqual([...wide.got]);
      expectClose(packed.got, packed.ref, F32_TOL, 0, `bf16 cache vs f64 ${path}`);
    }
  });

  it('rounds once in bf16 mode: the f32 result rounded', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 6, dim: 64, cap: 50, kvLen: 50, offset: 44, mask: { kind: 'causal' }, seed: 61 };
    for (const path of PATHS) {
      const exact = await run(gpu, c, { path });
      const rounded = await run(gpu, c, { path, round: 'bf16' });
      expect([...rounded.got]).toEqual([...exact.got].map(roundBf16));
    }
  });

  it('a query that sees no key outputs 0, not NaN (explicit all-false row, and kvLen 0)', async () => {
    const gpu = await getGpu();
    const S = 3, kvLen = 9;
    const m = Array.from({ length: S * kvLen }, (_, i) => (Math.floor(i / kvLen) === 1 ? 0 : (i % 2)));
    for (const path of PATHS) {
      const { got, ref } = await run(gpu,
        { heads: 2, seq: S, dim: 64, cap: 9, kvLen, offset: 6, mask: { kind: 'explicit', mask: m },
        seed: 71 }, { path });
      expect(got.some(Number.isNaN)).toBe(false);
      for (let h = 0; h < 2; h++) for (let d = 0; d < 64; d++) expect(got[(1 * 2 + h) * 64 + d]).toBe(0);
      expectClose(got, ref, F32_TOL, 0, `masked row ${path}`);
      const empty = await run(gpu,
        { heads: 2, seq: 2, dim: 64, cap: 4, kvLen: 0, offset: 0, mask: { kind: 'none' }, seed: 72 }, { path });
      expect([...empty.got]).toEqual(new Array(2 * 2 * 64).fill(0));
    }
  });
});

/** A gqkv-shaped gate source [S, 4*H*D] (the gate block is its first H*D columns). */

describe('sdpa gate (sigmoidGate fused into the output write)', () => {
  it('is sigmoidGate(gqkv, sdpa(...)) bit for bit on both paths and every rounding, with no extra dispatch',
    async () => {
    const gpu = await getGpu();
    // The third case (more queries) only with HRM_EXHAUSTIVE=1: the first two take each path in two roundings and
    // each rounding on two paths, and every (rounding, gate) is a pipeline a kernel.
    const cases: Case[] = sweep<Case>([
      { heads: 2, seq: 3, dim: 64, cap: 80, kvLen: 73, offset: 70, mask: { kind: 'causal' }, seed: 81 },
      { heads: 3, seq: 1, dim: 40, cap: 300, kvLen: 290, offset: 289, mask: { kind: 'none' }, seed: 82 },
      { heads: 2, seq: 9, dim: 64, cap: 20, kvLen: 20, offset: 11, mask: { kind: 'causal' }, seed: 83 },
    ], (_, i) => i < 2);
    for (const [ci, c] of cases.entries()) {
      const { heads: H, seq: S, dim: D, cap } = c;
      const q = Tensor.from(gpu, randn(c.seed, H * S * D, 2), [H, S, D], 'f32', 'q');
      const k = full(gpu, randn(c.seed + 1, H * cap * D), [H, cap, D], 'f32', 'k');
      const v = full(gpu, randn(c.seed + 2, H * cap * D), [H, cap, D], 'f32', 'v');
      const gate = gateSource(gpu, S, H * D, c.seed + 3);
      for (const [r, round] of (['none', 'bf16', 'f16'] as Round[]).entries()) {
        // Each case and each path in every rounding, one rounding a (case, path) pair (HRM_EXHAUSTIVE=1: all).
        for (const path of PATHS.filter((_, p) => runs((ci + p) % 3 === r))) {
          const o: SdpaOptions = { kvLen: c.kvLen, offset: c.offset, mask: c.mask as AttnMask, scale: 1 / Math.sqrt(D),
            round, path };
          const want = sigmoidGate(gate, sdpa(q, k, v, o), { round });
          const before = gpu.dispatchCount;
          const got = sdpa(q, k, v, { ...o, gate });
          expect(gpu.dispatchCount - before, `${path} S=${S}`).toBe({ decode: 2, prefill: 1, matmul: 5 }[path]);
          expectBitExact(await got.read(), await want.read(), `S=${S} ${round} ${path}`);
        }
      }
    }
  });

  it('rejects a gate that is not f32 [S, >= H*D]', async () => {
    const gpu = await getGpu();
    const q = Tensor.empty(gpu, [2, 3, 64], 'f32', 'q');
    const kv: FullKV = { kind: 'full', data: Tensor.empty(gpu, [2, 8, 64], 'f32', 'kv') };
    const o = { kvLen: 5, offset: 2, mask: { kind: 'causal' } as AttnMask, scale: 0.125 };
    expect(() => sdpa(q, kv, kv,
      { ...o, gate: Tensor.empty(gpu, [3, 100], 'f32',
      'g') })).toThrow(/\[sdpa\] gate 'g' is \[3, 100\]; expected \[3, >= 128\]/);
    expect(() => sdpa(q, kv, kv, { ...o, gate: Tensor.empty(gpu, [2, 512], 'f32', 'g') })).toThrow(ShapeError);
    expect(() => sdpa(q, kv, kv, { ...o, gate: Tensor.empty(gpu, [3, 512], 'u32', 'g') })).toThrow(DTypeError);
  });
});


describe('sdpa argument checks', () => {
  it('names the bad argument and the shapes', async () => {
    const gpu = await getGpu();
    const q = Tensor.empty(gpu, [2, 3, 64], 'f32', 'q');
    const kv = (shape: number[],
      dtype: 'f32' | 'bf16' = 'f32'): FullKV => ({ kind: 'full', data: Tensor.empty(gpu, shape, dtype, 'kv') });
    const o = { kvLen: 5, offset: 2, mask: { kind: 'causal' } as AttnMask, scale: 0.125 };
    expect(() => sdpa(q, kv([2, 8, 32]), kv([2, 8, 32]), o)).toThrow(/\[sdpa\] k 'kv' is \[2, 8, 32\]/);
    expect(() => sdpa(q, kv([2, 4, 64]), kv([2, 4, 64]), o)).toThrow(ShapeError);      // kvLen > capacity
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64], 'bf16'), o)).toThrow(DTypeError);
    expect(() => sdpa(Tensor.empty(gpu, [2, 3, 64], 'bf16', 'qb'), kv([2, 8, 64]), kv([2, 8, 64]),
      o)).toThrow(DTypeError);
    const tt = Tensor.empty(gpu, [4], 'u32', 'tt');
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]),
      { ...o, mask: { kind: 'prefix', tokenTypes: tt } })).toThrow(/tokenTypes/);
    const quant = { kind: 'quant', bits: 8, q: tt, scales: tt, biases: tt } as const;
    expect(() => sdpa(q, quant, quant, o)).toThrow(/quantized/);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]),
      { ...o, chunks: 0 })).toThrow(/decode chunks 0 must be a positive integer/);
    // Plain-number arguments are the caller's input, not a shape.
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, chunks: 0 })).toThrow(InputError);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]),
      { ...o, offset: -1 })).toThrow(/\[sdpa\] offset -1 must be an integer >= 0/);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, scale: NaN })).toThrow(InputError);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]),
      { ...o, merge: 'last' as never })).toThrow(/\[sdpa\] merge 'last' must be one of fold, separate/);
  });
});
